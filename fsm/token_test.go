// This file proves that the ledger's kept HMAC issues the same hold tokens
// as HoldToken, which readers and clients use, for many holds of one show.
package fsm

import (
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
