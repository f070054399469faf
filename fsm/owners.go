package fsm

import (
	"math"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seatOwners is who owns each seat of a show: one slot of the ledger's
// hold table per seat (holdTable), 0 for a FREE seat, instead of a pointer
// per seat: the garbage collector has nothing to scan in it. Slots are
// this replica's own bookkeeping (holdTable), so replicas may number holds
// differently and still agree on every owner.
type seatOwners struct {
	seat []uint32 // by layout index: the owner's slot, 0 FREE
	// takeLow is at most the takeAt of every owner in seat: before it,
	// a seat may be taken exactly when it is FREE, and freeSeatMap reads
	// no hold slot. It holds because an owner's takeAt never goes down
	// while it owns a seat (a hold's expiry only grows, confirming makes
	// it never, and a slot is reused only once its seats are cleared), so
	// put, which every owner comes through, need only lower it. It is
	// derived, not state: replicas may keep different bounds.
	takeLow int64
}

func newSeatOwners(seats int) seatOwners {
	return seatOwners{seat: make([]uint32, seats), takeLow: math.MaxInt64}
}

// len is the number of seats.
func (o *seatOwners) len() int { return len(o.seat) }

// ref returns the slot of seat n's owner, 0 when it is FREE.
func (o *seatOwners) ref(n int) uint32 { return o.seat[n] }

// put gives seat n to the hold in slot r, whose takeAt is takeAt; clear
// frees it.
func (o *seatOwners) put(n int, r uint32, takeAt int64) {
	o.seat[n] = r
	o.takeLow = min(o.takeLow, takeAt)
}

func (o *seatOwners) clear(n int) { o.seat[n] = 0 }

// takeAt is the log time from which a hold may take r's seats: at its
// expiry while it is HELD (by the log clock, before an Expire entry frees
// them), never for a booking.
func (t *holdTable) takeAt(r uint32) int64 {
	h := t.at(r)
	if h.state == ledgerpb.HoldState_HOLD_STATE_HELD {
		return h.expiresAt
	}
	return 1<<63 - 1
}

// takeable reports whether a hold could take seat n of o at log time now:
// it is FREE, or its owner is a hold expired by then.
func (t *holdTable) takeable(o *seatOwners, n int, now int64) bool {
	r := o.seat[n]
	return r == 0 || now >= t.takeAt(r)
}
