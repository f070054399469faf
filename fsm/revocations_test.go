// This file proves that a refund enters its show's revocation feed at its
// revision, that the feed pages in revision order, and that it lists no
// other show's refunds.
package fsm

import (
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestRevocations(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdShow("admin", "r2", testShow("s2", "A:4:std", "std:100:EUR"))), 1)
	index := uint64(2)
	refunded := map[string]uint64{}
	book := func(show, seat string) string {
		index++
		h := mustApply(t, m, index, at(1000, cmdHold("c", "h"+show+seat, show, 60_000, seat)), 1)[0]
		index++
		mustApply(t, m, index, at(1000, cmdConfirm("c", "c"+show+seat, show, h.HoldId, "pay")), 1)
		return h.HoldId
	}
	refund := func(show, hold string) {
		index++
		if r := mustApply(t, m, index, at(1000, cmdRefund("c", "f"+hold, show, hold, "cancelled")), 1)[0]; r.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("Refund(%s) = %s", hold, resultString(r))
		}
		refunded[hold] = index
	}
	a, b, other := book("s1", "A1"), book("s1", "A2"), book("s2", "A1")
	book("s1", "A3") // confirmed, never refunded
	refund("s1", a)
	refund("s2", other)
	refund("s1", b)
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	all, more, err := v.Revocations("s1", 0, 10)
	if err != nil || more || len(all) != 2 || all[0].Hold.HoldId != a || all[1].Hold.HoldId != b ||
		all[0].Revision != refunded[a] || all[1].Revision != refunded[b] || all[0].Hold.SeatIds[0] != "A1" {
		t.Fatalf("Revocations(s1, 0) = %v, %v, %v; want %s at %d then %s at %d", all, more, err, a, refunded[a], b, refunded[b])
	}
	page, more, err := v.Revocations("s1", 0, 1)
	if err != nil || !more || len(page) != 1 || page[0].Hold.HoldId != a {
		t.Errorf("Revocations(s1, 0, limit 1) = %v, %v, %v; want %s and more", page, more, err, a)
	}
	rest, more, err := v.Revocations("s1", refunded[a], 10)
	if err != nil || more || len(rest) != 1 || rest[0].Hold.HoldId != b {
		t.Errorf("Revocations(s1, after %d) = %v, %v, %v; want %s only", refunded[a], rest, more, err, b)
	}
	if none, _, err := v.Revocations("s1", refunded[b], 10); err != nil || len(none) != 0 {
		t.Errorf("Revocations(s1, after the last) = %v, %v; want none", none, err)
	}
}
