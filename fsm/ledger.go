package fsm

import (
	"errors"
	"fmt"
	"hash"
	"maps"
	"slices"
	"sync/atomic"

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
// Memory: a pointer per seat of every show, one HoldRecord per live hold or
// booking, and an expiry entry per hold made or extended within
// HoldLifetimeMaxMs (expiry.go). All are bounded by the group's seats (a
// seat belongs to at most one hold or booking at a time) and that
// lifetime.
//
// Only the apply goroutine uses it (Apply, ApplyEntries, Restore, and
// NewMachine before the machine is shared), so it has no lock.
type ledger struct {
	shows map[string]*showState
	// holds are the live holds (HELD, also those past their expiry by the
	// log clock until an entry ends them) and the bookings (CONFIRMED).
	holds  map[string]*ledgerpb.HoldRecord
	expiry expiryQueue
	// live counts the live holds among holds.
	live int
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
	// id is the show's id (l.show's), at hand for decodeEntry.
	id string
	l  *layout
	// owners are the hold or booking that owns each seat of the layout,
	// none when the seat is FREE (it has no record). A seat of a live hold
	// is HELD, of a booking BOOKED.
	owners seatOwners
	// clients lists each client's live holds in the show.
	clients map[string][]*ledgerpb.HoldRecord
	// queue is the waiting line's totals (the 0x10 record).
	queue queueStat
	// mac is the HMAC under the show's token key, made on first use
	// (token.go); apply goroutine only.
	mac hash.Hash
	// states are the seat states readers built last (statescache.go);
	// apply drops them whenever it changes a seat.
	states atomic.Pointer[cachedStates]
}

func newLedger() ledger {
	return ledger{shows: map[string]*showState{}, holds: map[string]*ledgerpb.HoldRecord{}, geometries: map[string]*geometry{}}
}

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
		led.shows[id] = &showState{id: l.show.ShowId, l: l, owners: newSeatOwners(l.total)}
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
	// In id order, so that the lists are built alike on every load.
	for _, id := range slices.Sorted(maps.Keys(led.holds)) {
		h := led.holds[id]
		if h.State != ledgerpb.HoldState_HOLD_STATE_HELD {
			continue
		}
		s := led.shows[h.ShowId]
		if s.clients == nil {
			s.clients = map[string][]*ledgerpb.HoldRecord{}
		}
		s.clients[h.ClientId] = append(s.clients[h.ClientId], h)
		led.expiry = append(led.expiry, expiryEntry{at: h.ExpiresAtMs, id: id})
	}
	led.expiry.init()
	led.live = len(led.expiry)
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
		led.holds[h.HoldId] = h
		return nil
	})
	if err != nil {
		return err
	}
	for show, hs := range byShow {
		s := led.shows[show]
		if s == nil {
			return fmt.Errorf("live hold %s of missing show %s", hs[0].HoldId, show)
		}
		if s.owners, err = m.placeSeats(s.l, hs); err != nil {
			return err
		}
	}
	return nil
}

// decodeLiveHold decodes the record of a live hold or booking; body is its
// key past the group prefix and kind. The record must be HELD or
// CONFIRMED and name the show and id its key does.
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

// placeSeats gives each seat of layout l to the hold that names it. Two
// holds naming one seat break S1; only a machine that skips the seat
// check (Unsafe) makes them, and there the later grant owns the seat, as
// it does in memory.
func (m *Machine) placeSeats(l *layout, holds []*ledgerpb.HoldRecord) (seatOwners, error) {
	o := newSeatOwners(l.total)
	for _, h := range holds {
		r := o.add(h)
		for _, id := range h.SeatIds {
			n, ok := l.seatIndex(id)
			if !ok {
				return seatOwners{}, fmt.Errorf("hold %s names unknown seat %s", h.HoldId, id)
			}
			if prev := o.at(int(n)); prev != nil {
				if !m.unsafe.skipSeatCheck() {
					return seatOwners{}, fmt.Errorf("S1: seat %s of show %s is owned by holds %s and %s", id, h.ShowId, prev.HoldId, h.HoldId)
				}
				if later(prev, h) {
					continue
				}
			}
			o.put(int(n), r)
		}
	}
	return o, nil
}

// later reports whether hold a was made after hold b (its id names a later
// entry, or a later position in the same one).
func later(a, b *ledgerpb.HoldRecord) bool {
	return a.Revision > b.Revision || (a.Revision == b.Revision && a.HoldId > b.HoldId)
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
	if len(led.shows) != len(o.shows) || len(led.holds) != len(o.holds) {
		return fmt.Sprintf("%d shows and %d holds, against %d and %d", len(led.shows), len(led.holds), len(o.shows), len(o.holds))
	}
	for id, h := range led.holds {
		if !proto.Equal(h, o.holds[id]) {
			return fmt.Sprintf("hold %s is %v, against %v", id, h, o.holds[id])
		}
	}
	if led.live != countLive(o) || o.live != led.live {
		return fmt.Sprintf("%d live holds counted, against %d", led.live, countLive(o))
	}
	if d := led.diffRooms(o); d != "" {
		return d
	}
	if led.nextExpiry() != o.nextExpiry() {
		return fmt.Sprintf("next expiry %d, against %d", led.nextExpiry(), o.nextExpiry())
	}
	for id, s := range led.shows {
		t := o.shows[id]
		if t == nil || s.owners.len() != t.owners.len() || s.queue != t.queue || len(s.clients) != len(t.clients) ||
			string(s.l.tokenKey) != string(t.l.tokenKey) || !proto.Equal(s.l.show, t.l.show) {
			return fmt.Sprintf("show %s differs", id)
		}
		if d := s.owners.check(); d != "" {
			return fmt.Sprintf("show %s: %s", id, d)
		}
		for i := range s.owners.len() {
			h, g := s.owners.at(i), t.owners.at(i)
			if (h == nil) != (g == nil) || (h != nil && h.HoldId != g.HoldId) {
				return fmt.Sprintf("seat %d of show %s differs", i, id)
			}
		}
		for c, list := range s.clients {
			other := t.clients[c]
			if len(list) != len(other) {
				return fmt.Sprintf("client %s has %d live holds in show %s, against %d", c, len(list), id, len(other))
			}
			for _, h := range list {
				if !slices.ContainsFunc(other, func(x *ledgerpb.HoldRecord) bool { return x.HoldId == h.HoldId }) {
					return fmt.Sprintf("client %s's live holds in show %s differ", c, id)
				}
			}
		}
	}
	return ""
}

// countLive counts the live holds in the ledger.
func countLive(led *ledger) int {
	n := 0
	for _, h := range led.holds {
		if h.State == ledgerpb.HoldState_HOLD_STATE_HELD {
			n++
		}
	}
	return n
}
