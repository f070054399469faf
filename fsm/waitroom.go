package fsm

import (
	"cmp"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The waiting room of a hot show (issue 18). While a show's room is open,
// a hold in it needs an admission token of its client (hold.go calls
// admissionCheck). Fans join the room (joinroom.go); each arrival gets a
// random rank within its arrival window of RoomWindowMs of log time, drawn
// from seed bytes the proposing gateway put in the command, so every
// replica draws the same. Windows close by the log clock: once the clock
// passes a window, its entries are placed after every earlier window's, in
// rank order, and their places never change; a later window never gets
// ahead of an earlier one. The leader proposes Admit entries (admit.go),
// which admit waiting entries in place order at the room's rate, counted
// in log time. An admitted entry's token is valid for the room's
// admission TTL; past it the entry reads EXPIRED and its client may join
// again, at the back.
//
// State lives in memory (ledger.rooms) and is written behind to Pebble:
// the room record (0x14) and each entry (0x15), which is also the
// exactly-once record of the join that made it (joinroom.go). Places, the
// line and the clients' entries are derived: load rebuilds them by sorting
// the entries, the same order the windows closed in. A room may also be
// armed to open by itself (roomauto.go, 0x1E).
//
// Memory: per open room one roomEntry per join, at most RoomEntriesMax;
// closing the room drops them all.

// room is a show's open waiting room in memory (apply goroutine, readers
// under Machine.mu like the rest of the ledger).
type room struct {
	rec      *ledgerpb.RoomRecord
	entries  map[string]*roomEntry
	byClient map[string]*roomEntry // each client's latest entry
	// line is every entry of a closed window in place order (line[i] has
	// place i+1); line[:head] are admitted.
	line []*roomEntry
	head int
	// open are the entries of windows the clock has not passed, kept in
	// place order (before): a join finds its position by binary search,
	// where counting the entries ahead of it one by one cost each join
	// time in proportion to its window's arrivals.
	open []*roomEntry
}

// roomEntry is an entry, its place (0 while its window is open) and its
// client's previous entry in the room (nil for the first), so a retried
// join finds the entry it made (joinOf).
type roomEntry struct {
	*ledgerpb.RoomEntryRecord
	place uint64
	prev  *roomEntry
}

func newRoom(rec *ledgerpb.RoomRecord) *room {
	return &room{rec: rec, entries: map[string]*roomEntry{}, byClient: map[string]*roomEntry{}}
}

// before orders entries in a room: by window, then rank, then id.
// The ids are compared only on a tie of ranks: cmp.Or would compare them
// every time.
func before(a, b *roomEntry) int {
	if c := cmp.Compare(a.Window, b.Window); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Rank, b.Rank); c != 0 {
		return c
	}
	return strings.Compare(a.EntryId, b.EntryId)
}

// advance closes the windows the clock now has passed: their entries are
// placed after the line's, in order.
func (r *room) advance(now int64) {
	w := now / RoomWindowMs
	k := 0
	for k < len(r.open) && r.open[k].Window < w {
		k++
	}
	if k == 0 {
		return
	}
	for _, e := range r.open[:k] {
		if !(len(r.line) == 0 || before(r.line[len(r.line)-1], e) < 0) {
			violated("room entry %s placed before an earlier window's", e.EntryId)
		}
		r.line = append(r.line, e)
		e.place = uint64(len(r.line))
	}
	r.open = slices.Clone(r.open[k:])
}

// waiting counts the room's waiting entries.
func (r *room) waiting() int { return len(r.line) - r.head + len(r.open) }

// place returns a waiting entry's 1-based position among the waiting: final
// once its window closed; before, later arrivals of its window may still
// land ahead of it.
func (r *room) position(e *roomEntry) uint64 {
	if e.place != 0 {
		return e.place - uint64(r.head)
	}
	i, found := slices.BinarySearchFunc(r.open, e, before)
	if !found {
		violated("room entry %s is neither placed nor in an open window", e.EntryId)
	}
	return uint64(len(r.line)-r.head+i) + 1
}

// admittedThrough is the last place admitted.
func (r *room) admittedThrough() uint64 { return uint64(r.head) }

// entryState is an entry's state as of clock: SOLD_OUT and EXPIRED are
// derived from the room and the clock, never stored.
func (r *room) entryState(e *roomEntry, clock int64) ledgerpb.RoomEntryState {
	switch {
	case e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED && clock >= e.AdmissionExpiresAtMs:
		return ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_EXPIRED
	case e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING && r.rec.SoldOut:
		return ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_SOLD_OUT
	}
	return e.State
}

// add puts a new entry in the room, in its open window, and returns its
// position (one search serves both).
func (r *room) add(e *roomEntry) uint64 {
	if r.entries[e.EntryId] != nil {
		violated("room entry id %s reused", e.EntryId)
	}
	r.entries[e.EntryId] = e
	e.prev = r.byClient[e.ClientId]
	r.byClient[e.ClientId] = e
	i, found := slices.BinarySearchFunc(r.open, e, before)
	if found {
		violated("room entry %s ranks equal to another", e.EntryId)
	}
	r.open = slices.Insert(r.open, i, e)
	return uint64(len(r.line)-r.head+i) + 1
}

// roomRank draws an entry's rank within its window from the join's seed.
func roomRank(seed []byte, entryID string) uint64 {
	h := sha256.New()
	h.Write(seed)
	h.Write([]byte(entryID))
	var sum [sha256.Size]byte
	return binary.BigEndian.Uint64(h.Sum(sum[:0]))
}

// roomEntryToken is the secret that reads an entry; admissionToken is the
// one a hold presents. Both are the show's token key over domain-separated
// entry ids, so neither can equal the other or a hold's.
func roomEntryToken(key []byte, entryID string) string { return HoldToken(key, "room:"+entryID) }
func admissionToken(key []byte, entryID string) string { return HoldToken(key, "admit:"+entryID) }

// ---- keys ----

func (m *Machine) roomKey(show string) []byte { return m.key(kindRoom, []byte(show)) }
func (m *Machine) roomEntryPrefix(show string) []byte {
	return m.key(kindRoomEntry, lenPrefixed(show))
}
func (m *Machine) roomEntryKey(show, entry string) []byte {
	return m.key(kindRoomEntry, lenPrefixed(show), []byte(entry))
}

// ---- load ----

// loadRooms reads the open rooms and their entries and derives the lines.
func (m *Machine) loadRooms(r reader, led *ledger) error {
	_, clock, err := readMeta(r, m.metaKey())
	if err != nil {
		return err
	}
	err = scanPrefix(r, m.key(kindRoom), func(k, v []byte) error {
		show := string(k[groupPrefixLen+1:])
		rec := &ledgerpb.RoomRecord{}
		if err := proto.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("decode room of show %s: %w", show, err)
		}
		if led.shows[show] == nil || rec.ShowId != show {
			return fmt.Errorf("room %q of show %s, show known %t", rec.ShowId, show, led.shows[show] != nil)
		}
		if led.rooms == nil {
			led.rooms = map[string]*room{}
		}
		led.rooms[show] = newRoom(rec)
		return nil
	})
	if err != nil {
		return err
	}
	if err := m.loadRoomAuto(r, led); err != nil {
		return err
	}
	for _, show := range slices.Sorted(maps.Keys(led.rooms)) {
		if err := m.loadRoomEntries(r, led.rooms[show], clock); err != nil {
			return err
		}
	}
	return nil
}

// loadRoomEntries reads a room's entries and rebuilds its line as the
// closing of its windows built it: every entry of a window the clock has
// passed is placed, in order, and the admitted ones lead the line.
func (m *Machine) loadRoomEntries(r reader, rm *room, clock int64) error {
	show := rm.rec.ShowId
	var all []*roomEntry
	err := scanPrefix(r, m.roomEntryPrefix(show), func(_, v []byte) error {
		rec := &ledgerpb.RoomEntryRecord{}
		if err := proto.Unmarshal(v, rec); err != nil {
			return fmt.Errorf("decode room entry of show %s: %w", show, err)
		}
		all = append(all, &roomEntry{RoomEntryRecord: rec})
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(all, before)
	for _, e := range all {
		rm.entries[e.EntryId] = e
		// A client joins again only after its admission expired, so
		// in a later window: place order is its join order.
		if o := rm.byClient[e.ClientId]; o != nil && o.JoinedAtMs >= e.JoinedAtMs {
			return fmt.Errorf("room of show %s has entries %s and %s of client %s in one window", show, o.EntryId, e.EntryId, e.ClientId)
		}
		e.prev = rm.byClient[e.ClientId]
		rm.byClient[e.ClientId] = e
		rm.open = append(rm.open, e) // all is in place order
	}
	rm.advance(clock)
	for _, e := range rm.line {
		if e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
			if rm.head != int(e.place)-1 {
				return fmt.Errorf("room of show %s admitted entry %s at place %d after only %d", show, e.EntryId, e.place, rm.head)
			}
			rm.head++
		}
	}
	for _, e := range rm.open {
		if e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
			return fmt.Errorf("room of show %s admitted entry %s of an open window", show, e.EntryId)
		}
	}
	return nil
}

// diffRooms describes how two ledgers' rooms differ, "" when alike (tests,
// through ledger.diff). A window one ledger closed and the other did not
// yet (load closes what the clock passed) changes no position, so entries
// are compared by record, client and position, not by which list holds
// them.
func (led *ledger) diffRooms(o *ledger) string {
	if d := led.diffRoomAuto(o); d != "" {
		return d
	}
	if len(led.rooms) != len(o.rooms) {
		return fmt.Sprintf("%d rooms, against %d", len(led.rooms), len(o.rooms))
	}
	for show, r := range led.rooms {
		t := o.rooms[show]
		if t == nil || !proto.Equal(r.rec, t.rec) || len(r.entries) != len(t.entries) {
			return fmt.Sprintf("room of show %s differs", show)
		}
		if r.head != t.head || r.waiting() != t.waiting() {
			return fmt.Sprintf("the line of show %s's room differs", show)
		}
		for id, e := range r.entries {
			f := t.entries[id]
			if f == nil || !proto.Equal(e.RoomEntryRecord, f.RoomEntryRecord) || t.byClient[e.ClientId].EntryId != r.byClient[e.ClientId].EntryId ||
				(e.place != 0 && f.place != 0 && e.place != f.place) ||
				(e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING && r.position(e) != t.position(f)) {
				return fmt.Sprintf("room entry %s of show %s differs", id, show)
			}
		}
	}
	return ""
}

// ---- writes shared by the room's commands ----

func (tx *txn) putRoom(r *room) { tx.put(tx.m.roomKey(r.rec.ShowId), r.rec) }

func (tx *txn) putRoomEntry(show string, e *roomEntry) {
	tx.put(tx.m.roomEntryKey(show, e.EntryId), e.RoomEntryRecord)
}

// room returns show's open room, its windows closed up to the log clock;
// nil when the show has none.
func (tx *txn) room(show string) *room {
	r := tx.m.led.rooms[show]
	if r != nil {
		r.advance(tx.now)
	}
	return r
}

// admissionCheck is the hold's check against the show's room: nil when
// the room is closed, or the client's entry is admitted, its admission not
// yet expired by the log clock, and token is its admission token.
func (tx *txn) admissionCheck(client string, c *ledgerpb.HoldCmd) *ledgerpb.Result {
	r := tx.m.led.rooms[c.ShowId]
	if r == nil {
		if r = tx.arrival(c.ShowId); r == nil { // roomauto.go
			return nil
		}
	}
	e := r.byClient[client]
	if e != nil && r.entryState(e, tx.now) == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED &&
		hmacEqualString(admissionToken(tx.showTokenKey(c.ShowId), e.EntryId), c.AdmissionToken) {
		return nil
	}
	why := "join it (POST /v1/shows/" + c.ShowId + "/waiting_room:join) and hold with the admission_token of the admitted entry"
	switch {
	case e == nil:
	case r.entryState(e, tx.now) == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_EXPIRED:
		why = "the admission of entry " + e.EntryId + " expired: join again"
	case e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING:
		why = "entry " + e.EntryId + " is still waiting"
	default:
		why = "admission_token is not the admission token of entry " + e.EntryId
	}
	return reject(ledgerpb.Code_CODE_ADMISSION_REQUIRED, "show %s has an open waiting room: %s", c.ShowId, why)
}

func hmacEqualString(a, b string) bool { return hmac.Equal([]byte(a), []byte(b)) }

// cloneOf copies a record the ledger changes in place, for a result.
func cloneOf[T proto.Message](m T) T { return proto.Clone(m).(T) }
