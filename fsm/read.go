package fsm

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// ErrNotFound is returned by reads of a show or hold that does not exist.
var ErrNotFound = errors.New("fsm: not found")

// View is a consistent read-only view of a group's state at one applied
// index. Close it when done. A View is used by one goroutine at a time.
//
// Its Pebble snapshot is taken at its first read that needs one: a read
// answered from the ledger needs none, and taking and closing a snapshot
// is dear next to a read from memory (Close tries to schedule a compaction
// each time the oldest snapshot goes). A view from View takes it at once;
// one from ReadView only when needed (see there).
type View struct {
	m       *Machine
	snap    *pebble.Snapshot // nil until the first read that needs it
	l       layers           // the overlay over snap
	held    bool             // l's arena is held (acquire) until Close
	applied uint64
	clock   int64
	// next is the earliest expiry of a live hold at applied; nextKnown is
	// false once the view moved to an index whose next it could not learn
	// (snapshot).
	next      int64
	nextKnown bool
	// seq is Machine.commits when applied and clock were read.
	seq uint64
}

// appliedPoint is an applied index, the log clock at it, and the earliest
// expiry of a live hold at it (math.MaxInt64: none).
type appliedPoint struct {
	index uint64
	clock int64
	next  int64
	live  int // live holds
}

// View opens a point-in-time view. Reads never block apply.
func (m *Machine) View() (*View, error) {
	v := m.ReadView()
	if _, err := v.snapshot(); err != nil {
		return nil, err
	}
	return v, nil
}

// ReadView opens a view at the group's last commit whose snapshot is taken
// only if a read needs one. If the group commits between ReadView and that
// read, the view moves to the snapshot's index and clock. So each read of
// one show is consistent at one index at or after ReadView's (a show's
// layout never changes), and every read is at the index Applied reports
// after it; reads of several shows in one view may each be at another
// such index. That is what serving reads needs (linearizable reads are per
// show, and a later index is as fresh), not what a digest or a snapshot
// of the group needs: they use View.
func (m *Machine) ReadView() *View {
	c := m.commits.Load()
	p := m.published.Load()
	return &View{m: m, applied: p.index, clock: p.clock, next: p.next, nextKnown: true, seq: c}
}

// snapshot returns the view's reader, the published overlay over a Pebble
// snapshot, taking both on first use. They are taken together holding the
// machine's lock for reading, so at one commit that no checkpoint splits:
// a checkpoint moves the overlay into Pebble holding the lock, and the
// overlay a view took never changes (overlay.go). The view moves to that
// commit's index and clock.
func (v *View) snapshot() (reader, error) {
	if v.snap != nil {
		return v.rd(), nil
	}
	v.m.mu.RLock()
	p := v.m.published.Load()
	snap := v.m.db.NewSnapshot()
	v.l = v.m.pubLayers()
	v.l.acquire() // its memory stays until Close
	v.held = true
	v.m.mu.RUnlock()
	if p.index != v.applied || p.clock != v.clock {
		v.applied, v.clock, v.next, v.nextKnown = p.index, p.clock, p.next, true
	}
	v.snap = snap
	if checkLedger {
		v.checkPublished()
	}
	return v.rd(), nil
}

// rd is the view's reader once it has a snapshot.
func (v *View) rd() reader { return reader{l: v.l, r: v.snap} }

// readMeta reads a group's applied index and clock (0, 0 before its first
// entry).
func readMeta(r reader, key []byte) (uint64, int64, error) {
	b, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("fsm: read meta: %w", err)
	}
	defer closer.Close()
	return decodeMeta(b)
}

// snapGet reads a key from the view's snapshot.
func (v *View) snapGet(key []byte) ([]byte, io.Closer, error) {
	s, err := v.snapshot()
	if err != nil {
		return nil, nil, err
	}
	return s.Get(key)
}

// snapIter opens an iterator on the view's snapshot.
func (v *View) snapIter(o *pebble.IterOptions) (*overlayIter, error) {
	s, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	return s.NewIter(o)
}

// checkPublished asserts that the view's published index and clock are its
// snapshot's (tests: see checkLedger).
func (v *View) checkPublished() {
	applied, clock, err := readMeta(v.rd(), v.m.metaKey())
	must(err, "read meta")
	if !(applied == v.applied && clock == v.clock) {
		violated("view published index %d clock %d, its snapshot has %d and %d", v.applied, v.clock, applied, clock)
	}
}

// Close releases the view's snapshot, if it took one.
func (v *View) Close() error {
	if v.snap == nil {
		return nil
	}
	if v.held {
		v.held = false
		v.l.release()
	}
	return v.snap.Close()
}

// Applied is the raft index the view reflects.
func (v *View) Applied() uint64 { return v.applied }

// Clock is the log clock at the view's index.
func (v *View) Clock() int64 { return v.clock }

func (v *View) get(key []byte, msg proto.Message) (bool, error) {
	b, closer, err := v.snapGet(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	return true, proto.Unmarshal(b, msg)
}

// inLedger runs fn on the group's ledger, between apply batches, and moves
// the view to the point the ledger is at. Only a view without a snapshot
// reads the ledger: one with a snapshot reads everything from it, so that
// its reads agree with each other (a watcher pairs a seat map with the
// changes after it).
func (v *View) inLedger(fn func(led *ledger)) {
	v.m.mu.RLock()
	defer v.m.mu.RUnlock()
	// Apply publishes each batch before it lets readers in.
	p := v.m.published.Load()
	v.applied, v.clock, v.next, v.nextKnown = p.index, p.clock, p.next, true
	fn(&v.m.led)
}

// Hold returns a hold record. A hold still HELD whose expiry has passed by
// the view's clock is reported EXPIRED: that is what a confirm would find.
func (v *View) Hold(id string) (*ledgerpb.HoldRecord, error) {
	var h *ledgerpb.HoldRecord
	var err error
	if v.snap == nil {
		v.inLedger(func(led *ledger) {
			if r := led.holds.find(id); r != 0 {
				h = led.holds.record(r, led.showOf(r).id) // a copy: apply changes the table
				return
			}
			// A hold that ended: the store has it, committed up to the
			// ledger's point while apply waits.
			h, err = getHold(v.m.pubStore(), v.m.holdKey(id))
		})
	} else {
		h, err = v.snapHold(id)
	}
	if err != nil {
		return nil, fmt.Errorf("fsm: read hold %s: %w", id, err)
	}
	if h == nil {
		return nil, ErrNotFound
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_HELD && v.clock >= h.ExpiresAtMs {
		h.State = ledgerpb.HoldState_HOLD_STATE_EXPIRED
	}
	return h, nil
}

// snapHold reads hold id from the view's snapshot: under its id if it had
// ended there, else under its show's live holds. Which show is the
// ledger's answer now, or the store's for a hold that ended since: a
// hold's show never changes, and a hold unknown to both did not exist at
// the snapshot either.
func (v *View) snapHold(id string) (*ledgerpb.HoldRecord, error) {
	h, err := getHold(v.rd(), v.m.holdKey(id))
	if h != nil || err != nil {
		return h, err
	}
	// While apply waits, a hold is in the ledger or its ended record is
	// committed. (Not inLedger: the view stays at its snapshot's point.)
	show := ""
	v.m.mu.RLock()
	if r := v.m.led.holds.find(id); r != 0 {
		show = v.m.led.showOf(r).id
	} else if ended, gerr := getHold(v.m.pubStore(), v.m.holdKey(id)); ended != nil {
		show = ended.ShowId
	} else {
		err = gerr
	}
	v.m.mu.RUnlock()
	if show == "" || err != nil {
		return nil, err
	}
	return getHold(v.rd(), v.m.liveKey(show, id))
}

// getHold reads a hold record, nil when there is none.
func getHold(r reader, key []byte) (*ledgerpb.HoldRecord, error) {
	b, err := getCopy(r, key)
	if err != nil || b == nil {
		return nil, err
	}
	h := &ledgerpb.HoldRecord{}
	return h, proto.Unmarshal(b, h)
}

// SeatMap returns every seat of a show in layout order with its state. Seats
// of holds expired by the view's clock read FREE, as a hold would find them.
// The seats are shared with other reads of the same states (statescache.go):
// callers may marshal the map and set its own fields, not change its seats.
func (v *View) SeatMap(showID string) (*ledgerpb.SeatMap, error) {
	l, c, err := v.showStates(showID)
	if err != nil {
		return nil, err
	}
	// The layout is shared: the map gets its own categories.
	cats := make([]*ledgerpb.Category, len(l.show.Categories))
	for i, c := range l.show.Categories {
		cats[i] = &ledgerpb.Category{Name: c.Name, PriceMinor: c.PriceMinor, Currency: c.Currency}
	}
	return &ledgerpb.SeatMap{ShowId: l.show.ShowId, Title: l.show.Title, Categories: cats,
		Seats: c.seatList(l), Revision: v.applied, Free: c.free, Held: c.held, Booked: c.booked}, nil
}

// SeatStates returns a show's seat map without its layout: SeatStates holds
// one letter per seat in layout order (the order of SeatMap's seats): F
// free, H held, B booked; the counts are set, the seats, categories and
// title are not. Seats of holds expired by the view's clock read FREE.
func (v *View) SeatStates(showID string) (*ledgerpb.SeatMap, error) {
	l, c, err := v.showStates(showID)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.SeatMap{ShowId: l.show.ShowId, Revision: v.applied, SeatStates: c.states,
		Free: c.free, Held: c.held, Booked: c.booked}, nil
}

// showStates returns a show's layout and its seats' states as the view
// sees them: from the ledger, or from the view's snapshot if it has one.
func (v *View) showStates(showID string) (*layout, *cachedStates, error) {
	if v.snap != nil {
		l, err := v.snapLayout(showID)
		if err != nil {
			return nil, nil, err
		}
		c, err := v.scanStates(showID, l)
		return l, c, err
	}
	var l *layout
	var c *cachedStates
	var err error
	v.inLedger(func(led *ledger) {
		s := led.shows[showID]
		if s == nil {
			return
		}
		l, c = s.l, s.statesAt(&led.holds, v.clock)
		if checkLedger {
			err = v.checkStates(showID, c)
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if l == nil {
		return nil, nil, ErrNotFound
	}
	return l, c, nil
}

// checkStates compares states read from the ledger with the store's, read
// while apply waits (tests: see checkLedger).
func (v *View) checkStates(showID string, c *cachedStates) error {
	sv := &View{m: v.m, snap: v.m.db.NewSnapshot(), l: v.m.pubLayers(), applied: v.applied, clock: v.clock}
	defer sv.Close()
	l, err := sv.snapLayout(showID)
	if err != nil {
		return err
	}
	sc, err := sv.scanStates(showID, l)
	if err != nil {
		return err
	}
	if !(sc.states == c.states && sc.free == c.free && sc.held == c.held && sc.booked == c.booked) {
		violated("the ledger's seat states of show %s at %d are %s, the store has %s", showID, v.applied, c.states, sc.states)
	}
	return nil
}

// scanStates reads a show's seat states (layout l) from the view's
// snapshot.
func (v *View) scanStates(showID string, l *layout) (*cachedStates, error) {
	s, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	holds, err := v.m.liveHolds(s, showID)
	if err != nil {
		return nil, fmt.Errorf("fsm: read show %s: %w", showID, err)
	}
	t := newHoldTable()
	owners, err := v.m.placeSeats(&t, &showState{id: showID, l: l}, holds)
	if err != nil {
		return nil, fmt.Errorf("fsm: read show %s: %w", showID, err)
	}
	return statesOf(&t, &owners, v.clock), nil
}

// The letters of SeatMap.seat_states.
const (
	SeatLetterFree   = 'F'
	SeatLetterHeld   = 'H'
	SeatLetterBooked = 'B'
)

func seatLetter(s ledgerpb.SeatState) byte {
	switch s {
	case ledgerpb.SeatState_HELD:
		return SeatLetterHeld
	case ledgerpb.SeatState_BOOKED:
		return SeatLetterBooked
	}
	return SeatLetterFree
}

// SeatStateOfLetter is the state a letter of SeatMap.seat_states stands for
// (FREE for any other byte).
func SeatStateOfLetter(c byte) ledgerpb.SeatState {
	switch c {
	case SeatLetterHeld:
		return ledgerpb.SeatState_HELD
	case SeatLetterBooked:
		return ledgerpb.SeatState_BOOKED
	}
	return ledgerpb.SeatState_FREE
}

// layout returns the layout of a show that exists in the view.
func (v *View) layout(showID string) (*layout, error) {
	if v.snap != nil {
		return v.snapLayout(showID)
	}
	var l *layout
	v.inLedger(func(led *ledger) {
		if s := led.shows[showID]; s != nil {
			l = s.l
		}
	})
	if l == nil {
		return nil, ErrNotFound
	}
	return l, nil
}

// snapLayout reads a show's layout from the view's snapshot.
func (v *View) snapLayout(showID string) (*layout, error) {
	b, closer, err := v.snapGet(v.m.showKey(showID))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("fsm: read show %s: %w", showID, err)
	}
	defer closer.Close()
	show := &ledgerpb.Show{}
	if err := proto.Unmarshal(b, show); err != nil {
		return nil, fmt.Errorf("fsm: decode show %s: %w", showID, err)
	}
	l := newLayout(show)
	if l.tokenKey, err = v.showTokenKey(showID); err != nil {
		return nil, err
	}
	return l, nil
}

// freeSeats returns every seat of a layout, FREE, in layout order. A seat
// map is the hot read (every fan polls it), so it is built with a handful of
// allocations instead of two per seat: the seats live in one slice and their
// ids are substrings of one string.
func freeSeats(l *layout) []*ledgerpb.Seat {
	var ids strings.Builder
	ids.Grow(l.total * 5)
	for _, r := range l.show.Rows {
		for n := 1; n <= int(r.Seats); n++ {
			ids.WriteString(r.Name)
			ids.WriteString(strconv.Itoa(n))
		}
	}
	all := ids.String()
	seats := make([]ledgerpb.Seat, l.total)
	out := make([]*ledgerpb.Seat, l.total)
	i, at := 0, 0
	for _, r := range l.show.Rows {
		price := l.price(r)
		for n := 1; n <= int(r.Seats); n++ {
			idLen := len(r.Name) + digits(n)
			s := &seats[i]
			s.SeatId, s.Row, s.Number, s.Category, s.PriceMinor, s.State = all[at:at+idLen], r.Name, uint32(n), r.Category, price, ledgerpb.SeatState_FREE
			out[i] = s
			i, at = i+1, at+idLen
		}
	}
	return out
}

// digits is the number of decimal digits of n > 0.
func digits(n int) int {
	d := 1
	for ; n >= 10; n /= 10 {
		d++
	}
	return d
}

// NextExpiry returns the earliest expires_at among live holds at the
// view's index, and false when none is live.
func (v *View) NextExpiry() (int64, bool, error) {
	if !v.nextKnown {
		return 0, false, errNextUnknown
	}
	if v.next == math.MaxInt64 {
		return 0, false, nil
	}
	return v.next, true, nil
}

// errNextUnknown: the view moved past the index it was opened at, to one
// whose next expiry is no longer published; another view will know it.
var errNextUnknown = errors.New("fsm: the view's next expiry is unknown: open another view")

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}

// ClientBookings returns up to limit of client's bookings in this group,
// the most recently confirmed first, and whether there were more.
func (v *View) ClientBookings(client string, limit int) ([]*ledgerpb.HoldRecord, bool, error) {
	p := v.m.bookingPrefix(client)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var out []*ledgerpb.HoldRecord
	for ok := it.Last(); ok; ok = it.Prev() {
		if len(out) == limit {
			return out, true, it.Error()
		}
		k := it.Key()
		h, err := v.Hold(string(k[len(p)+8:]))
		if err != nil {
			return nil, false, fmt.Errorf("fsm: booking index names hold %s: %w", k[len(p)+8:], err)
		}
		out = append(out, h)
	}
	return out, false, it.Error()
}

// HoldForOwner returns a hold for the holder of its token, with its seats
// as the show's layout describes them (row, number, category, price).
func (v *View) HoldForOwner(showID, holdID, token string) (*ledgerpb.HoldRecord, []*ledgerpb.Seat, error) {
	h, err := v.Hold(holdID)
	if err != nil {
		return nil, nil, err
	}
	if h.ShowId != showID {
		return nil, nil, ErrNotFound
	}
	l, err := v.layout(showID)
	if err != nil {
		return nil, nil, err
	}
	if HoldToken(l.tokenKey, holdID) != token {
		return nil, nil, ErrBadToken
	}
	seats := make([]*ledgerpb.Seat, 0, len(h.SeatIds))
	for _, id := range h.SeatIds {
		n, ok := l.seatIndex(id)
		if !ok {
			return nil, nil, fmt.Errorf("fsm: hold %s names unknown seat %s", holdID, id)
		}
		row, num := l.seat(int(n))
		seats = append(seats, &ledgerpb.Seat{SeatId: id, Row: row.Name, Number: uint32(num),
			Category: row.Category, PriceMinor: l.price(row)})
	}
	return h, seats, nil
}
