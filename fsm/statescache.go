package fsm

import (
	"bytes"
	"math"
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A show's seat states change only when apply changes its seats, which
// drops the states the show kept (showState.states), or when a hold expires
// by the log clock. So states built once serve every read until then:
// during a sale every fan polls the same map, and each poll costs a pointer
// load instead of a walk of the seats.

// cachedStates is a show's seat states at one point: one letter per seat in
// layout order (SeatMap.seat_states) and the counts. Immutable once built.
type cachedStates struct {
	until  int64 // the earliest expiry of a seat shown HELD (MaxInt64: none)
	states string
	free   uint32
	held   uint32
	booked uint32

	// seats is the full map's seat list with these states, built on the
	// first SeatMap that needs it and then shared, read-only, by every
	// map served from this entry (rebuilding it was most of a full map
	// read's cost).
	seatsOnce sync.Once
	seats     []*ledgerpb.Seat
}

// seatList returns the seats of layout l with these states, in layout
// order. The slice and its seats are shared: callers must not change them.
func (c *cachedStates) seatList(l *layout) []*ledgerpb.Seat {
	c.seatsOnce.Do(func() {
		seats := freeSeats(l)
		for i := range len(c.states) {
			if c.states[i] != SeatLetterFree {
				seats[i].State = SeatStateOfLetter(c.states[i])
			}
		}
		c.seats = seats
	})
	return c.seats
}

// newStates starts the states of a layout's seats, all FREE; set moves
// seats out of FREE.
func newStates(total int) (*cachedStates, []byte) {
	return &cachedStates{until: math.MaxInt64, free: uint32(total)}, bytes.Repeat([]byte{SeatLetterFree}, total)
}

// set records seat idx in state (HELD until expiresAt, or BOOKED).
func (c *cachedStates) set(letters []byte, idx int, state ledgerpb.SeatState, expiresAt int64) {
	letters[idx] = seatLetter(state)
	switch state {
	case ledgerpb.SeatState_HELD:
		c.free--
		c.held++
		c.until = min(c.until, expiresAt)
	case ledgerpb.SeatState_BOOKED:
		c.free--
		c.booked++
	}
}

// statesAt returns the show's seat states at log clock now, the ones it
// keeps while they are current. Callers hold the machine's lock, for
// reading at least: readers may build and keep states side by side.
func (s *showState) statesAt(t *holdTable, now int64) *cachedStates {
	if c := s.states.Load(); c != nil && now < c.until {
		return c
	}
	c := statesOf(t, &s.owners, now)
	s.states.Store(c)
	return c
}

// statesOf is the states of seats whose owners are owners (by layout
// index: slots of t, 0 FREE) at log clock now: a booking's seats BOOKED, a
// live hold's HELD until its expiry, FREE after it.
func statesOf(t *holdTable, owners *seatOwners, now int64) *cachedStates {
	c, letters := newStates(owners.len())
	for i := range owners.len() {
		r := owners.ref(i)
		if r == 0 {
			continue
		}
		switch h := t.at(r); {
		case h.state == ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
			c.set(letters, i, ledgerpb.SeatState_BOOKED, 0)
		case now < h.expiresAt:
			c.set(letters, i, ledgerpb.SeatState_HELD, h.expiresAt)
		}
	}
	c.states = string(letters)
	return c
}
