// This file proves that the waiting queue's offers reach the change log:
// the entry that frees seats records, with the seats the offer holds, which
// queue entry got which hold, so a watcher learns of its offer.
package fsm

import (
	"strconv"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestOffersInChangeLog(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:2:std", "std:100:EUR"))), 1)
	hold := mustApply(t, m, 2, at(1000, cmdBest("c1", "r1", "s1", 0, 2, "")), 1)[0]
	w := cmdBest("c2", "r1", "s1", 0, 2, "")
	w.GetHold().Wait = true
	joined := mustApply(t, m, 3, at(1000, w), 1)[0]
	if joined.Code != ledgerpb.Code_CODE_QUEUED {
		t.Fatalf("Hold(count=2, wait) of a full show = %s, want QUEUED", resultString(joined))
	}
	mustApply(t, m, 4, at(1000, cmdRelease("c1", "r2", "s1", hold.HoldId)), 1)
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	evs, err := v.SeatEvents("s1", 3, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("SeatEvents(s1, after 3) = %d records, %v; want the release's record", len(evs), err)
	}
	offered := offerPosBase
	want := &ledgerpb.QueueOffer{EntryId: joined.QueueEntryId, HoldId: "h0-4-" + strconv.Itoa(offered)}
	if e := evs[0]; len(e.Offers) != 1 || e.Offers[0].EntryId != want.EntryId || e.Offers[0].HoldId != want.HoldId {
		t.Fatalf("offers at revision 4 = %v, want [%v]", e.Offers, want)
	}
	if e := evs[0]; len(e.Changes) != 4 { // A1, A2 FREE, then HELD by the offer
		t.Fatalf("changes at revision 4 = %v, want the two seats freed and held again", e.Changes)
	}
}

// TestQueueTotals: the group's queue totals (the metrics' queue lengths)
// count waiting entries and the seats they ask for across shows, and drop an
// entry once it is offered seats.
func TestQueueTotals(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	totals := func() (uint64, uint64) {
		t.Helper()
		v, err := m.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		w, s, err := v.QueueTotals()
		if err != nil {
			t.Fatal(err)
		}
		return w, s
	}
	if w, s := totals(); w != 0 || s != 0 {
		t.Fatalf("QueueTotals of an empty group = %d, %d; want 0, 0", w, s)
	}
	index := uint64(0)
	apply := func(cmd *ledgerpb.Command) *ledgerpb.Result {
		index++
		return mustApply(t, m, index, at(1000, cmd), 1)[0]
	}
	var first *ledgerpb.Result
	for _, show := range []string{"s1", "s2"} {
		apply(cmdShow("admin", "r"+show, testShow(show, "A:2:std", "std:100:EUR")))
		if h := apply(cmdBest("c0", "r"+show, show, 0, 2, "")); first == nil {
			first = h
		}
	}
	for i, want := range []struct {
		show  string
		count uint32
	}{{"s1", 2}, {"s1", 1}, {"s2", 2}} {
		w := cmdBest("w"+strconv.Itoa(i), "r", want.show, 0, want.count, "")
		w.GetHold().Wait = true
		if r := apply(w); r.Code != ledgerpb.Code_CODE_QUEUED {
			t.Fatalf("Hold(%s, count=%d, wait) = %s, want QUEUED", want.show, want.count, resultString(r))
		}
	}
	if w, s := totals(); w != 3 || s != 5 {
		t.Fatalf("QueueTotals with three waiters = %d, %d; want 3, 5", w, s)
	}
	apply(cmdRelease("c0", "r2", "s1", first.HoldId)) // s1's first waiter is offered both seats
	if w, s := totals(); w != 2 || s != 3 {
		t.Fatalf("QueueTotals after an offer = %d, %d; want 2, 3", w, s)
	}
}
