package fsm

import (
	"maps"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// admit admits waiting entries of every open room, shows in sorted order,
// at most limit in all. upto is capped at the log clock, as Expire's is: a
// leader admits only as fast as the log's own time allows.
func (tx *txn) admit(c *ledgerpb.AdmitCmd) *ledgerpb.Result {
	upto := min(c.UptoMs, tx.now)
	limit := int(c.Limit)
	if limit <= 0 || limit > AdmitPerEntryMax {
		limit = AdmitPerEntryDefault
	}
	n := 0
	for _, show := range slices.Sorted(maps.Keys(tx.m.led.rooms)) {
		n += tx.admitRoom(show, upto, limit-n)
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Admitted: uint32(n)}
}

// admitRoom earns the room credit for the log time since it last counted,
// at admit_per_second, and spends it on the waiting entries in place order.
// Credit is kept in thousandths of an admission, so any rate is exact over
// time; at most one second of it is kept, and while nothing can be
// admitted (nobody waits, or the show is sold out) at most one admission,
// so that a room never bursts past its rate after a quiet spell. A show
// without a free seat is sold out: its waiting entries read SOLD_OUT and
// wait; once seats are free again, admission resumes.
func (tx *txn) admitRoom(show string, upto int64, limit int) int {
	r := tx.room(show)
	rec := r.rec
	before := cloneOf(rec)
	if upto > rec.CreditAtMs {
		rec.CreditMilli += (upto - rec.CreditAtMs) * int64(rec.AdmitPerSecond)
		rec.CreditAtMs = upto
	}
	rec.CreditMilli = min(rec.CreditMilli, int64(rec.AdmitPerSecond)*1000)
	rec.SoldOut = !tx.hasFreeSeat(show)
	n := 0
	if !rec.SoldOut {
		n = min(int(rec.CreditMilli/1000), len(r.line)-r.head, max(limit, 0))
	}
	for _, e := range r.line[r.head : r.head+n] {
		if e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
			violated("admitting room entry %s in state %s", e.EntryId, e.State)
		}
		e.State = ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED
		e.AdmittedAtMs, e.AdmissionExpiresAtMs = tx.now, tx.now+rec.AdmissionTtlMs
		tx.putRoomEntry(show, e)
		tx.entryAdmitted(show, e.RoomEntryRecord)
	}
	r.head += n
	rec.CreditMilli -= int64(n) * 1000
	if rec.SoldOut || r.head == len(r.line) {
		rec.CreditMilli = min(rec.CreditMilli, 1000)
	}
	if !proto.Equal(before, rec) {
		tx.putRoom(r)
	}
	if n > 0 || before.SoldOut != rec.SoldOut {
		tx.roomChanged(show, r)
	}
	return n
}
