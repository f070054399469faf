package fsm

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// ledger is the group's seat ledger in memory: every show with its layout
// and, per seat, the hold or booking that owns it; every live hold and
// every booking; per show and client, the client's live holds; the live
// holds by expiry; per show, its waiting line's totals. It is
// authoritative: the hold, confirm, release, extend, refund and expire
// paths read it and nothing else, and what it does not have is absent (a
// FREE seat, an unknown show, a client without live holds). Pebble is
// written behind it, in the same batch as the applied index: the shows and
// the holds, a live hold or booking under its show (liveKey), from which
// load rebuilds the rest: seats are not stored. A hold that ends moves to
// its id (holdKey).
//
// What it leaves in Pebble alone: holds that ended (cancelled, expired,
// refunded; read through the batch by the rare command that names one),
// request records (requests.go filters them), the change log, the waiting
// line's entries, the catalog and the node registry.
//
// Memory: a uint32 per seat of every show, and per live hold or booking a
// fixed-size slot of the hold table with its strings in the table's arena
// (holdtable.go states its bounds), an id index entry and, while it is
// HELD, a client list entry and an expiry entry (expiry.go). None of these
// holds a pointer, so the garbage collector does not scan them. All are
// bounded by the group's seats (a seat belongs to at most one hold or
// booking at a time).
//
// Only the apply goroutine changes it (Apply, ApplyEntries, Restore, and
// NewMachine before the machine is shared), so it has no lock of its own;
// readers (read.go) read it under the machine's read lock, between apply
// batches.
type ledger struct {
	shows map[string]*showState
	// showList are the shows by their number (showState.num), the number
	// a hold slot names its show by.
	showList []*showState
	// macs are the shows' HMAC key schedules by show number, made on
	// first use (token.go): bytes, in one array the collector does not
	// scan.
	macs []showMAC
	// holds are the live holds (HELD, also those past their expiry by the
	// log clock until an entry ends them) and the bookings (CONFIRMED).
	holds  holdTable
	expiry expiryQueue
	// live counts the live holds among holds.
	live int
	// clients lists each client's live holds in each show: by clientKey,
	// the first slot of a list linked through holdSlot.clientNext. One map
	// for every show, not one each; pairs whose keys collide share a list.
	clients map[uint64]uint32
	// rooms are the shows' open waiting rooms (waitroom.go); roomAuto the
	// shows whose rooms open by themselves (roomauto.go).
	rooms    map[string]*room
	roomAuto map[string]*ledgerpb.RoomAutoRecord
	// geometries are the shows' layouts by their encoded rows and
	// categories, shared by the shows that have them (sharedLayout).
	geometries map[string]*geometry
}

// showState is one show in the ledger.
type showState struct {
	// id is the show's id (l.show's), at hand for decodeEntry. A short one
	// is kept in idBuf: the show map compares a lookup's key with id's
	// bytes, and there they lie beside the fields the command reads next,
	// not in an allocation of their own (a cache miss per command less).
	id    string
	idBuf [showIDInline]byte
	// num is the show's index in ledger.showList.
	num uint32
	l   *layout
	// owners are the hold or booking that owns each seat of the layout,
	// none when the seat is FREE (it has no record). A seat of a live hold
	// is HELD, of a booking BOOKED.
	owners seatOwners
	// queue is the waiting line's totals (the 0x10 record).
	queue queueStat
	// states are the seat states readers built last (statescache.go);
	// apply drops them whenever it changes a seat.
	states atomic.Pointer[cachedStates]
}

func newLedger() ledger {
	return ledger{shows: map[string]*showState{}, holds: newHoldTable(), clients: map[uint64]uint32{}, geometries: map[string]*geometry{}}
}

// addShow puts a new show with layout l in the ledger.
func (led *ledger) addShow(l *layout) {
	s := &showState{num: uint32(len(led.showList)), l: l, owners: newSeatOwners(l.total)}
	s.id = l.show.ShowId
	if len(s.id) <= len(s.idBuf) {
		n := copy(s.idBuf[:], s.id)
		s.id = unsafe.String(&s.idBuf[0], n) // never written again
	}
	led.shows[s.id] = s
	led.showList = append(led.showList, s)
	led.macs = append(led.macs, showMAC{})
}

// showIDInline is the longest show id a showState keeps in itself; the
// ids of the demo catalog and of seatbench are shorter.
const showIDInline = 24

// showOf returns the show of hold slot r.
func (led *ledger) showOf(r uint32) *showState { return led.showList[led.holds.at(r).show] }

// load reads the group's ledger from the store: the shows, then each
// show's live holds and bookings (liveKey) and their seats, then the
// waiting lines' totals; it derives the clients' lists and the expiry
// queue.
func (m *Machine) load(r reader) (ledger, error) {
	led := newLedger()
	err := scanPrefix(r, m.key(kindShow), func(k, v []byte) error {
		id := string(k[groupPrefixLen+1:])
		show := &ledgerpb.Show{}
		if err := proto.Unmarshal(v, show); err != nil {
			return fmt.Errorf("decode show %s: %w", id, err)
		}
		l := led.sharedLayout(show)
		key, err := getCopy(r, m.showTokenKey(id))
		if err != nil {
			return err
		}
		l.tokenKey = key
		led.addShow(l)
		return nil
	})
	if err == nil {
		err = m.loadSeats(r, &led)
	}
	if err == nil {
		err = m.loadQueues(r, &led)
	}
	if err == nil {
		err = m.loadRooms(r, &led)
	}
	if err != nil {
		return ledger{}, fmt.Errorf("fsm: load group %d: %w", m.group, err)
	}
	// The live holds' lists and expiry entries. (Slots are in the order
	// loadSeats made them: by show, then id.)
	for r := range uint32(led.holds.slotCount()) {
		if led.holds.at(r).state == ledgerpb.HoldState_HOLD_STATE_HELD {
			led.track(r)
			led.due(r)
			led.live++
		}
	}
	return led, nil
}

// loadSeats reads every show's live holds and bookings (their records
// under liveKey, in one walk) and gives them their seats.
func (m *Machine) loadSeats(r reader, led *ledger) error {
	byShow := map[string][]*ledgerpb.HoldRecord{}
	err := scanPrefix(r, m.key(kindLiveHold), func(k, v []byte) error {
		h, err := decodeLiveHold(k[groupPrefixLen+1:], v)
		if err != nil {
			return err
		}
		byShow[h.ShowId] = append(byShow[h.ShowId], h)
		return nil
	})
	if err != nil {
		return err
	}
	// By show id: slot numbers are the replica's own, but alike on every
	// load make a restarted replica easy to compare.
	for _, show := range slices.Sorted(maps.Keys(byShow)) {
		hs := byShow[show]
		s := led.shows[show]
		if s == nil {
			return fmt.Errorf("live hold %s of missing show %s", hs[0].HoldId, show)
		}
		if s.owners, err = m.placeSeats(&led.holds, s, hs); err != nil {
			return err
		}
	}
	return nil
}

// decodeLiveHold decodes the record of a live hold or booking; body is its
// key past the group prefix and kind. The record must be HELD or
// CONFIRMED, name the show and id its key does, and have no field the
// hold table does not keep.
func decodeLiveHold(body, v []byte) (*ledgerpb.HoldRecord, error) {
	if len(body) < 1 || len(body) < 1+int(body[0]) {
		return nil, errBadKey
	}
	show, id := string(body[1:1+int(body[0])]), string(body[1+int(body[0]):])
	h := &ledgerpb.HoldRecord{}
	if err := proto.Unmarshal(v, h); err != nil {
		return nil, fmt.Errorf("decode live hold %s of show %s: %w", id, show, err)
	}
	if h.ShowId != show || h.HoldId != id || (h.State != ledgerpb.HoldState_HOLD_STATE_HELD && h.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED) {
		return nil, fmt.Errorf("the live hold %s of show %s is hold %s of show %s in state %s", id, show, h.HoldId, h.ShowId, h.State)
	}
	if h.RefundedAtMs != 0 || h.RefundReason != "" || len(h.ProtoReflect().GetUnknown()) > 0 || len(h.SeatIds) == 0 || len(h.SeatIds) > SeatsPerHoldMax {
		return nil, fmt.Errorf("the live hold %s of show %s has a refund, unknown fields or %d seats", id, show, len(h.SeatIds))
	}
	return h, nil
}

// liveHolds reads a show's live holds and bookings.
func (m *Machine) liveHolds(r reader, show string) ([]*ledgerpb.HoldRecord, error) {
	var holds []*ledgerpb.HoldRecord
	err := scanPrefix(r, m.livePrefix(show), func(k, v []byte) error {
		h, err := decodeLiveHold(k[groupPrefixLen+1:], v)
		holds = append(holds, h)
		return err
	})
	return holds, err
}

// placeSeats puts holds of show s (layout s.l) in table t and gives each
// seat to the hold that names it. Two holds naming one seat break S1;
// only a machine that skips the seat check (Unsafe) makes them, and there
// the later grant owns the seat, as it does in memory.
func (m *Machine) placeSeats(t *holdTable, s *showState, holds []*ledgerpb.HoldRecord) (seatOwners, error) {
	l := s.l
	o := newSeatOwners(l.total)
	var idx [SeatsPerHoldMax]uint16
	for _, h := range holds {
		for i, id := range h.SeatIds {
			n, ok := l.seatIndex(id)
			if !ok {
				return seatOwners{}, fmt.Errorf("hold %s names unknown seat %s", h.HoldId, id)
			}
			idx[i] = n
		}
		r := t.add(h.HoldId, h.ClientId, h.Currency, s.num, l, h.SeatIds, idx[:len(h.SeatIds)])
		hs := t.at(r)
		hs.createdAt, hs.expiresAt, hs.closedAt, hs.amount = h.CreatedAtMs, h.ExpiresAtMs, h.ClosedAtMs, h.AmountMinor
		hs.revision, hs.state = h.Revision, h.State
		t.setPayment(r, h.PaymentRef)
		for i, id := range h.SeatIds {
			n := int(idx[i])
			if prev := o.ref(n); prev != 0 {
				if !m.unsafe.skipSeatCheck() {
					return seatOwners{}, fmt.Errorf("S1: seat %s of show %s is owned by holds %s and %s", id, h.ShowId, t.id(prev), h.HoldId)
				}
				if t.later(prev, r) {
					continue
				}
			}
			o.put(n, r, t.takeAt(r))
		}
	}
	return o, nil
}

// loadQueues reads each show's waiting line totals.
func (m *Machine) loadQueues(r reader, led *ledger) error {
	return scanPrefix(r, m.key(kindQueueStat), func(k, v []byte) error {
		show := string(k[groupPrefixLen+1:])
		s := led.shows[show]
		if s == nil || len(v) != 8 {
			return fmt.Errorf("queue totals of show %s: %d bytes, show known %t", show, len(v), s != nil)
		}
		s.queue = decodeQueueStat(v)
		return nil
	})
}

// scanPrefix calls fn for every key under prefix, in order.
func scanPrefix(r reader, prefix []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key(), it.Value()); err != nil {
			it.Close()
			return err
		}
	}
	return errors.Join(it.Error(), it.Close())
}

// getCopy reads a key's value, nil when absent.
func getCopy(r reader, key []byte) ([]byte, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return append([]byte{}, v...), nil
}

// diff describes how two ledgers differ, "" when they hold the same state
// (tests: every commit compares the ledger with one loaded from the store).
func (led *ledger) diff(o *ledger) string {
	if len(led.shows) != len(o.shows) || led.holds.len() != o.holds.len() {
		return fmt.Sprintf("%d shows and %d holds, against %d and %d", len(led.shows), led.holds.len(), len(o.shows), o.holds.len())
	}
	var a, b ledgerpb.HoldRecord
	for r := range uint32(led.holds.slotCount()) {
		if led.holds.at(r).state == ledgerpb.HoldState_HOLD_STATE_UNSPECIFIED {
			continue
		}
		id := led.holds.id(r)
		g := o.holds.find(id)
		if g == 0 {
			return fmt.Sprintf("hold %s is missing", id)
		}
		led.holds.fill(&a, r, led.showOf(r).id)
		o.holds.fill(&b, g, o.showOf(g).id)
		if !proto.Equal(&a, &b) {
			return fmt.Sprintf("hold %s is %v, against %v", id, &a, &b)
		}
		if d := led.checkSlot(r); d != "" {
			return d
		}
		if d := o.checkSlot(g); d != "" {
			return d
		}
	}
	if led.live != countLive(o) || o.live != led.live || len(led.clients) != len(o.clients) {
		return fmt.Sprintf("%d live holds counted, against %d", led.live, countLive(o))
	}
	if d := led.diffRooms(o); d != "" {
		return d
	}
	if led.nextExpiry() != o.nextExpiry() || len(led.expiry) != led.live || len(o.expiry) != o.live {
		return fmt.Sprintf("next expiry %d of %d queued, against %d of %d", led.nextExpiry(), len(led.expiry), o.nextExpiry(), len(o.expiry))
	}
	for id, s := range led.shows {
		t := o.shows[id]
		if t == nil || s.owners.len() != t.owners.len() || s.queue != t.queue ||
			string(s.l.tokenKey) != string(t.l.tokenKey) || !proto.Equal(s.l.show, t.l.show) || led.showList[s.num] != s {
			return fmt.Sprintf("show %s differs", id)
		}
		for i := range s.owners.len() {
			h, g := s.owners.ref(i), t.owners.ref(i)
			if (h == 0) != (g == 0) || (h != 0 && led.holds.id(h) != o.holds.id(g)) {
				return fmt.Sprintf("seat %d of show %s differs", i, id)
			}
		}
	}
	return ""
}

// checkSlot reports how hold slot r's derived state is wrong, "" if it is
// not: a HELD hold is queued at its expiry and listed under its client, a
// booking neither.
func (led *ledger) checkSlot(r uint32) string {
	h := led.holds.at(r)
	held := h.state == ledgerpb.HoldState_HOLD_STATE_HELD
	queued := h.heapAt != 0 && int(h.heapAt) <= len(led.expiry) && led.expiry[h.heapAt-1] == expiryEntry{at: h.expiresAt, ref: r}
	if held != queued || held != led.listed(r) || (h.heapAt != 0) != queued {
		return fmt.Sprintf("hold %s (%s) is queued %t, listed %t", led.holds.id(r), h.state, queued, led.listed(r))
	}
	return ""
}

// countLive counts the live holds in the ledger.
func countLive(led *ledger) int {
	n := 0
	for r := range uint32(led.holds.slotCount()) {
		if led.holds.at(r).state == ledgerpb.HoldState_HOLD_STATE_HELD {
			n++
		}
	}
	return n
}
