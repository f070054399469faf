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
