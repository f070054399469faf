package fsm

import (
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A show's seat states change only by a write to its seats, which its
// change log records (changeIndex), or by a hold expiring by the log clock.
// So states a view computed at index i still hold for a view at index j >= i
// when the show's change log has nothing after i and the clock at j is
// before the earliest expiry among the seats they show HELD. During a sale
// every fan polls the same map; each poll then costs a map lookup instead of
// a scan of the show's seat records. Like the layouts, the cache is not
// state: it only spares reads, and a reader that cannot prove an entry
// current reads the view.

// seatStatesCacheMax bounds the shows one group keeps states of (a few
// hundred bytes each); when full the cache starts over.
const seatStatesCacheMax = 4096

// cachedStates is a show's seat states as a view at index at saw them: one
// letter per seat in layout order (SeatMap.seat_states) and the counts.
// Immutable once cached.
type cachedStates struct {
	at     uint64
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

// count moves one seat, counted FREE, to state's count.
func (c *cachedStates) count(state ledgerpb.SeatState) {
	switch state {
	case ledgerpb.SeatState_HELD:
		c.free--
		c.held++
	case ledgerpb.SeatState_BOOKED:
		c.free--
		c.booked++
	}
}

type seatStatesCache struct{ boundedCache[*cachedStates] }

// get returns show's cached states if they are the states view v sees: v
// is at or after the index they were read at, the show's change log has no
// record after that index up to v's (the change index is noted before the
// applied index moves), and no seat they show HELD has expired by v's clock.
func (c *seatStatesCache) get(v *View, show string) *cachedStates {
	e := c.boundedCache.get(show)
	if e == nil || e.at > v.applied || v.clock >= e.until || v.m.ShowChangedAfter(show, e.at) {
		return nil
	}
	return e
}

// put caches states unless newer ones are cached already.
func (c *seatStatesCache) put(show string, e *cachedStates) {
	c.putUnless(show, e, seatStatesCacheMax, func(old *cachedStates) bool { return old.at >= e.at })
}
