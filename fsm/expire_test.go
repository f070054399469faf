// This file proves Expire's bounds that scripts cannot reach cheaply: a limit
// above ExpirePerEntryMax falls back to ExpirePerEntryDefault while
// ExpirePerEntryMax itself is honoured; and that an Expire whose upto is
// negative (a leader bug, but a decodable entry every replica receives)
// expires nothing instead of crashing every replica; and that the expiry
// queue's typed heap orders entries as a sort does.
package fsm

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// holdMany applies one batch entry of n one-seat holds with a 1 s TTL.
func holdMany(t *testing.T, m *Machine, index uint64, ms int64, show string, n int) {
	t.Helper()
	cmds := make([]*ledgerpb.Command, n)
	for i := range cmds {
		cmds[i] = cmdHold(fmt.Sprintf("c%d", i), fmt.Sprintf("r%d-%d", index, i), show, 1000, fmt.Sprintf("%s%d", string(rune('A'+i/500)), i%500+1))
	}
	for i, r := range mustApply(t, m, index, at(ms, cmdBatch(cmds...)), n) {
		if r.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("hold %d of the batch = %s, want OK", i, resultString(r))
		}
	}
}

func TestExpireLimitBounds(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	const n = ExpirePerEntryDefault + 76
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:500:std,B:500:std,C:500:std", "std:1:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdShow("admin", "r2", testShow("s2", "A:500:std,B:500:std,C:500:std", "std:1:EUR"))), 1)
	holdMany(t, m, 3, 1000, "s1", n)
	// ExpirePerEntryMax is a valid limit: all n go at once.
	res := mustApply(t, m, 4, at(5000, cmdExpire(5000, ExpirePerEntryMax)), 1)
	if res[0].Expired != n {
		t.Errorf("Expire(limit=%d) over %d due holds = expired %d, want %d", ExpirePerEntryMax, n, res[0].Expired, n)
	}
	holdMany(t, m, 5, 5000, "s2", n)
	// Above the maximum the default applies.
	res = mustApply(t, m, 6, at(9000, cmdExpire(9000, ExpirePerEntryMax+1)), 1)
	if res[0].Expired != ExpirePerEntryDefault {
		t.Errorf("Expire(limit=%d) over %d due holds = expired %d, want %d", ExpirePerEntryMax+1, n, res[0].Expired, ExpirePerEntryDefault)
	}
	res = mustApply(t, m, 7, at(9000, cmdExpire(9000, 0)), 1)
	if res[0].Expired != n-ExpirePerEntryDefault {
		t.Errorf("second Expire = expired %d, want %d", res[0].Expired, n-ExpirePerEntryDefault)
	}
}

func TestExpireNegativeUpto(t *testing.T) {
	for _, upto := range []int64{-1, -2, -1000, -1 << 62} {
		t.Run(fmt.Sprint(upto), func(t *testing.T) {
			m := newTestMachine(t, newTestDB(t), 0)
			mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1:EUR"))), 1)
			mustApply(t, m, 2, at(1000, cmdHold("c1", "r1", "s1", 1000, "A1")), 1)
			res, err := applyRecover(m, 3, at(5000, cmdExpire(upto, 0)))
			if err != nil {
				t.Fatalf("Expire(upto=%d) crashed the machine: %v", upto, err)
			}
			if res[0].Code != ledgerpb.Code_CODE_OK || res[0].Expired != 0 {
				t.Errorf("Expire(upto=%d) = %s, want OK expired=0", upto, resultString(res[0]))
			}
		})
	}
}

// TestExpiryQueueOrder checks the heap against a sort: holds leave by
// expiry, then id, whatever order they were queued, moved (extend) and
// taken out (confirm, release) in.
func TestExpiryQueueOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	l := tableLayout(t)
	for round := range 50 {
		led := newLedger()
		var refs []uint32
		for i := range rng.IntN(200) {
			r := tableHold(&led.holds, l, fmt.Sprintf("h%d", i), "c", int64(rng.IntN(20)), "A1")
			led.due(r)
			refs = append(refs, r)
		}
		var want []uint32
		for _, r := range refs {
			switch rng.IntN(5) {
			case 0:
				led.undue(r)
				continue
			case 1:
				led.holds.at(r).expiresAt = int64(rng.IntN(20))
				led.due(r)
			}
			want = append(want, r)
		}
		slices.SortFunc(want, func(a, b uint32) int {
			return cmp.Or(cmp.Compare(led.holds.at(a).expiresAt, led.holds.at(b).expiresAt), strings.Compare(led.holds.id(a), led.holds.id(b)))
		})
		for i, w := range want {
			if got := led.firstDue(1 << 40); got != w {
				t.Fatalf("round %d: pop %d = %s, want %s", round, i, led.holds.id(got), led.holds.id(w))
			}
			led.undue(w)
		}
		if len(led.expiry) != 0 {
			t.Fatalf("round %d: %d entries left", round, len(led.expiry))
		}
	}
}
