// This file proves that the ledger's kept HMAC key schedule issues the same
// hold tokens as HoldToken (crypto/hmac), which readers and clients use,
// for many holds of one show and for keys of every length class.
package fsm

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestLedgerTokensMatchHoldToken(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	key := []byte("0123456789abcdef0123456789abcdef")
	create := cmdShow("admin", "r0", testShow("s1", "A:10:std", "std:100:EUR"))
	create.GetCreateShow().TokenKey = key
	mustApply(t, m, 1, at(1000, create), 1)
	for i := range 3 {
		seat := []string{"A1", "A2", "A3"}[i]
		r := mustApply(t, m, uint64(2+i), at(1000, cmdHold("c", "r"+seat, "s1", 0, seat)), 1)[0]
		if r.Code != ledgerpb.Code_CODE_OK || r.HoldToken != HoldToken(key, r.HoldId) {
			t.Fatalf("Hold(%s) = %s token %q, want OK with HoldToken = %q", seat, r.Code, r.HoldToken, HoldToken(key, r.HoldId))
		}
	}
}

func TestShowMACMatchesHMAC(t *testing.T) {
	d := sha256.New()
	var st [sha256StateLen]byte
	var buf []byte
	for _, key := range [][]byte{nil, []byte("k"), []byte(strings.Repeat("x", 32)), []byte(strings.Repeat("y", 64)),
		[]byte(strings.Repeat("z", 65)), []byte(strings.Repeat("w", 200))} {
		mac := newShowMAC(key)
		if !mac.ready() {
			t.Fatalf("key of %d bytes: a schedule of zeros reads as not made", len(key))
		}
		for i := range 5 {
			id := fmt.Sprintf("h1-%d-%d", 1000+i, i)
			var got [holdTokenLen]byte
			buf, got = mac.token(d, &st, buf, id)
			if string(got[:]) != HoldToken(key, id) {
				t.Errorf("key of %d bytes, hold %s: token %s, want %s", len(key), id, got, HoldToken(key, id))
			}
		}
	}
}
