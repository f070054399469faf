package fsm

import (
	"fmt"
	"math"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seatOwners is who owns each seat of a show: a compact array with one
// small number per seat (a reference into the show's live holds and
// bookings, 0 for a FREE seat) instead of a pointer per seat. It halves a
// seat's memory, and the garbage collector, which must scan every pointer
// of the live heap in each cycle, scans one per hold instead of one per
// seat. References are this replica's own bookkeeping: nothing outside
// seatOwners sees them, so replicas may number holds differently and still
// agree on every owner.
type seatOwners struct {
	seat  []uint32               // by layout index: 1 + index into holds, 0 FREE
	holds []*ledgerpb.HoldRecord // the show's owners; nil where free[] has the slot
	// takeAt mirrors holds: the log time from which a hold may take the
	// owner's seats (takeAtOf), so that a scan of a show's free seats
	// (takeable) reads no hold record. Whoever changes an owner's state
	// or expiry calls refresh.
	takeAt []int64
	free   []uint32 // unused slots of holds, for reuse
}

// takeAtOf is when a hold could take h's seats: at its expiry while it is
// HELD (by the log clock, before an Expire entry frees them), never for a
// booking.
func takeAtOf(h *ledgerpb.HoldRecord) int64 {
	if h.State == ledgerpb.HoldState_HOLD_STATE_HELD {
		return h.ExpiresAtMs
	}
	return math.MaxInt64
}

func newSeatOwners(seats int) seatOwners { return seatOwners{seat: make([]uint32, seats)} }

// len is the number of seats.
func (o *seatOwners) len() int { return len(o.seat) }

// at returns the owner of seat n, nil when it is FREE.
func (o *seatOwners) at(n int) *ledgerpb.HoldRecord {
	if r := o.seat[n]; r != 0 {
		return o.holds[r-1]
	}
	return nil
}

// takeable reports whether a hold could take seat n at log time now: it
// is FREE, or its owner is a hold expired by then.
func (o *seatOwners) takeable(n int, now int64) bool {
	r := o.seat[n]
	return r == 0 || now >= o.takeAt[r-1]
}

// add gives h a reference, for put; once per hold, before its seats.
func (o *seatOwners) add(h *ledgerpb.HoldRecord) uint32 {
	if n := len(o.free); n > 0 {
		r := o.free[n-1]
		o.free = o.free[:n-1]
		o.holds[r-1], o.takeAt[r-1] = h, takeAtOf(h)
		return r
	}
	o.holds = append(o.holds, h)
	o.takeAt = append(o.takeAt, takeAtOf(h))
	return uint32(len(o.holds))
}

// refresh notes that h changed its state or expiry; r is the reference
// one of its seats has, or 0 (as for drop).
func (o *seatOwners) refresh(h *ledgerpb.HoldRecord, r uint32) {
	r = o.find(h, r)
	o.takeAt[r-1] = takeAtOf(h)
}

// find returns h's reference: r when it is h's, else looked up.
func (o *seatOwners) find(h *ledgerpb.HoldRecord, r uint32) uint32 {
	if r != 0 && o.holds[r-1] == h {
		return r
	}
	for i, x := range o.holds {
		if x == h {
			return uint32(i + 1)
		}
	}
	violated("hold %s of show %s has no seat reference", h.HoldId, h.ShowId)
	return 0
}

// check reports the first owner whose takeAt does not mirror it, "" if
// none (the ledger's checks).
func (o *seatOwners) check() string {
	for i, h := range o.holds {
		if h != nil && o.takeAt[i] != takeAtOf(h) {
			return fmt.Sprintf("hold %s may be taken from %d, not %d", h.HoldId, takeAtOf(h), o.takeAt[i])
		}
	}
	return ""
}

// put gives seat n to the hold with reference r; clear frees it.
func (o *seatOwners) put(n int, r uint32) { o.seat[n] = r }
func (o *seatOwners) clear(n int)         { o.seat[n] = 0 }

// ref returns the reference of seat n's owner, 0 when it is FREE.
func (o *seatOwners) ref(n int) uint32 { return o.seat[n] }

// drop forgets h once no seat is its any more (it ended, or its booking
// was refunded). r is the reference one of its seats had, 0 if none did
// (only a machine that skips the seat check lets later holds take all of
// a hold's seats): then drop looks h up.
func (o *seatOwners) drop(h *ledgerpb.HoldRecord, r uint32) {
	r = o.find(h, r)
	o.holds[r-1], o.takeAt[r-1] = nil, 0
	o.free = append(o.free, r)
}
