package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The change log that Watch serves (doc.go, "Change log"). Every seat write
// reports itself through seatChanged; at the end of each raft entry the
// changes go out as one SeatEventRecord per show, in the same Pebble batch
// as the writes, so the log is replicated state like any other: every
// replica has the same records at the same index, a snapshot carries them,
// and a follower serves them exactly as the leader would.

// seatChanged records that a seat of show changed to state in the entry
// being applied. Every change of a seat's owner in the ledger calls it, so
// the per-show change log that Watch serves misses nothing.
//
// It is on the hold path, so it appends the change already encoded (as
// SeatEventRecord field 2, exactly as proto.Marshal would) instead of
// allocating a message per seat.
func (tx *txn) seatChanged(show, seat string, state ledgerpb.SeatState) {
	if !(state != ledgerpb.SeatState_SEAT_STATE_UNSPECIFIED && seat != "") {
		violated("seat %q of show %s changed to state %v", seat, show, state)
	}
	if tx.events == nil {
		tx.events = map[string][]byte{}
	}
	tx.events[show] = appendSeatChange(tx.events[show], seat, state)
}

// offerMade records that the waiting queue offered hold to entry of show in
// the entry being applied; the offer goes out with the show's changes.
func (tx *txn) offerMade(show, entry, hold string) {
	if tx.offers == nil {
		tx.offers = map[string][]byte{}
	}
	b := tx.offers[show]
	size := protowire.SizeTag(offerEntryField) + protowire.SizeBytes(len(entry)) +
		protowire.SizeTag(offerHoldField) + protowire.SizeBytes(len(hold))
	b = protowire.AppendTag(b, eventOffersField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = protowire.AppendTag(b, offerEntryField, protowire.BytesType)
	b = protowire.AppendString(b, entry)
	b = protowire.AppendTag(b, offerHoldField, protowire.BytesType)
	tx.offers[show] = protowire.AppendString(b, hold)
}

// Field numbers of SeatEventRecord, SeatChange and QueueOffer, for the
// encoders here.
const (
	eventAppliedAtField protowire.Number = 1
	eventChangesField   protowire.Number = 2
	eventOffersField    protowire.Number = 3
	changeSeatField     protowire.Number = 1
	changeStateField    protowire.Number = 2
	offerEntryField     protowire.Number = 1
	offerHoldField      protowire.Number = 2
)

// appendSeatChange appends one SeatChange as a SeatEventRecord.changes field.
func appendSeatChange(b []byte, seat string, state ledgerpb.SeatState) []byte {
	size := protowire.SizeTag(changeSeatField) + protowire.SizeBytes(len(seat)) +
		protowire.SizeTag(changeStateField) + protowire.SizeVarint(uint64(state))
	b = protowire.AppendTag(b, eventChangesField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = protowire.AppendTag(b, changeSeatField, protowire.BytesType)
	b = protowire.AppendString(b, seat)
	b = protowire.AppendTag(b, changeStateField, protowire.VarintType)
	return protowire.AppendVarint(b, uint64(state))
}

// encodeEventRecord is a SeatEventRecord with the encoded changes.
func encodeEventRecord(appliedAt int64, changes []byte) []byte {
	b := make([]byte, 0, protowire.SizeTag(eventAppliedAtField)+protowire.SizeVarint(uint64(appliedAt))+len(changes))
	if appliedAt != 0 { // proto3: a zero scalar is not written
		b = protowire.AppendTag(b, eventAppliedAtField, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(appliedAt))
	}
	return append(b, changes...)
}

// flushEvents writes the changes of the entry just applied: one record per
// show it touched, keeping the order in which the entry changed the seats (a
// seat may change twice: FREE when an expired hold lets go, then HELD by the
// hold that took it). Shows are written in sorted order, so replicas build
// identical batches whatever the map's order.
func (tx *txn) flushEvents() {
	if len(tx.events) == 0 {
		return
	}
	for _, show := range slices.Sorted(maps.Keys(tx.events)) {
		// An offer holds seats, so its show has changes too; the offers
		// follow them, as proto.Marshal orders the fields.
		changes := append(tx.events[show], tx.offers[show]...)
		assertf(len(tx.events[show]) > 0, "empty change list of show %s at index %d", show, tx.index)
		// The key is new: it holds the entry's index, which applyEntry
		// asserts is above every index applied before.
		must(tx.b.Set(tx.m.eventKey(show, tx.index), encodeEventRecord(tx.now, changes), nil), "write change record")
		must(tx.b.Set(tx.m.eventAgeKey(tx.now, tx.index, show), nil, nil), "write change record age")
		if tx.touched == nil {
			tx.touched = map[string]uint64{}
		}
		tx.touched[show] = tx.index
	}
	for show := range tx.offers {
		assertf(len(tx.events[show]) > 0, "offers without seat changes in show %s at index %d", show, tx.index)
	}
	clear(tx.events)
	clear(tx.offers)
}

// pruneEvents forgets at most limit change records applied before the
// retention horizon, oldest first, and raises the floor to the newest
// revision it forgot. The log clock never goes backwards, so age order is
// revision order and every record above the floor is still there.
func (tx *txn) pruneEvents(limit int) {
	horizon := tx.now - EventRetentionMs
	if horizon <= 0 {
		return
	}
	var keys [][]byte
	tx.scan(tx.m.key(kindEventAge), tx.m.key(kindEventAge, u64(uint64(horizon))), limit, func(k []byte) {
		keys = append(keys, append([]byte(nil), k...))
	})
	if len(keys) == 0 {
		return
	}
	floor := tx.eventFloor()
	for _, k := range keys {
		_, rev, show, err := decodeEventAgeKey(k)
		must(err, "decode change record age key")
		key := tx.m.eventKey(show, rev)
		_, ok := tx.read(key)
		assertf(ok, "age index names change record of show %s at %d that is missing", show, rev)
		tx.del(key)
		tx.del(k)
		floor = max(floor, rev)
	}
	must(tx.b.Set(tx.m.eventFloorKey(), u64(floor), nil), "write change log floor")
}

// eventFloor reads the floor through the batch; 0 when nothing was pruned.
func (tx *txn) eventFloor() uint64 {
	v, closer, err := tx.b.Get(tx.m.eventFloorKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return 0
	}
	must(err, "read change log floor")
	defer closer.Close()
	assertf(len(v) == 8, "change log floor of %d bytes", len(v))
	return binary.BigEndian.Uint64(v)
}

// changeIndexShowsMax bounds the shows changeIndex remembers; past it, it
// starts over (and readers read until it knows their show again).
const changeIndexShowsMax = 1 << 16

// changeIndex remembers, in memory, the last index at which each show's
// change log grew, so that a watcher woken by an entry of another show skips
// opening a snapshot. Like the layout cache it is not state: forgetting
// only costs reads.
//
// commit notes a batch's shows before it publishes the batch's index, and a
// reader loads the applied index before it asks; so a reader that sees an
// index also sees every change up to it, and may skip to that index when
// its show did not change. Restore resets it before publishing its index.
type changeIndex struct {
	mu struct {
		sync.Mutex
		base uint64            // changes at or below base are not known
		last map[string]uint64 // show -> last index with a change record
	}
}

func (c *changeIndex) reset(base uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.base, c.mu.last = base, nil
}

// note records the shows a batch committed up to index changed.
func (c *changeIndex) note(index uint64, shows map[string]uint64) {
	if len(shows) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.mu.last)+len(shows) > changeIndexShowsMax {
		c.mu.base, c.mu.last = index, nil
		return // every change up to index is now "not known"
	}
	if c.mu.last == nil {
		c.mu.last = make(map[string]uint64, len(shows))
	}
	for show, at := range shows {
		c.mu.last[show] = at
	}
}

// ShowChangedAfter reports whether show's change log may have a record
// after pos. False means it has none up to the applied index loaded before
// the call, so a watcher at pos may move on to that index without reading.
func (m *Machine) ShowChangedAfter(show string, pos uint64) bool {
	c := &m.changes
	c.mu.Lock()
	defer c.mu.Unlock()
	if pos < c.mu.base {
		return true
	}
	return c.mu.last[show] > pos
}

// ---- keys ----

// eventPrefix is the prefix of a show's change records.
func (m *Machine) eventPrefix(show string) []byte { return m.key(kindEvent, lenPrefixed(show)) }

// eventKey is a show's change record at revision: records of a show sort by
// revision.
func (m *Machine) eventKey(show string, rev uint64) []byte {
	return m.key(kindEvent, lenPrefixed(show), u64(rev))
}

// eventAgeKey indexes a change record by the log time it was applied at.
func (m *Machine) eventAgeKey(at int64, rev uint64, show string) []byte {
	return m.key(kindEventAge, u64(uint64(at)), u64(rev), lenPrefixed(show))
}

func (m *Machine) eventFloorKey() []byte { return m.key(kindEventFloor) }

// decodeEventKey returns the show and revision of a change record key.
func decodeEventKey(k []byte) (string, uint64, error) {
	if len(k) < groupPrefixLen+1+1 || k[groupPrefixLen] != kindEvent {
		return "", 0, errBadKey
	}
	body := k[groupPrefixLen+1:]
	n := int(body[0])
	if len(body) != 1+n+8 {
		return "", 0, errBadKey
	}
	return string(body[1 : 1+n]), binary.BigEndian.Uint64(body[1+n:]), nil
}

// decodeEventAgeKey returns the time, revision and show of an age key.
func decodeEventAgeKey(k []byte) (int64, uint64, string, error) {
	if len(k) < groupPrefixLen+1+8+8+1 || k[groupPrefixLen] != kindEventAge {
		return 0, 0, "", errBadKey
	}
	body := k[groupPrefixLen+1:]
	at := int64(binary.BigEndian.Uint64(body))
	rev := binary.BigEndian.Uint64(body[8:])
	body = body[16:]
	n := int(body[0])
	if len(body) != 1+n {
		return 0, 0, "", errBadKey
	}
	return at, rev, string(body[1:]), nil
}

// ---- reads ----

// SeatEvent is the change record of one show at one revision: the seats the
// entry at that raft index changed, in the order it changed them.
type SeatEvent struct {
	Revision    uint64
	AppliedAtMs int64
	Changes     []*ledgerpb.SeatChange
	Offers      []*ledgerpb.QueueOffer
	// Room is the show's waiting room after the entry, when it changed
	// (waitroom_events.go).
	Room *ledgerpb.RoomEvent
}

// ErrEventsPruned is returned when changes after the asked revision may have
// been pruned: the reader must start again from a seat map.
var ErrEventsPruned = errors.New("fsm: seat changes after that revision are no longer retained")

// SeatEvents returns a show's change records with revision > after, in
// revision order, at most limit of them. It returns ErrEventsPruned when
// after is below the floor (some record after it may be gone), so that no
// reader mistakes "pruned" for "nothing changed".
func (v *View) SeatEvents(show string, after uint64, limit int) ([]SeatEvent, error) {
	floor, err := v.EventFloor()
	if err != nil {
		return nil, err
	}
	if after < floor {
		return nil, fmt.Errorf("%w: %d is below the floor %d", ErrEventsPruned, after, floor)
	}
	if after >= v.applied || limit <= 0 {
		return nil, nil // no record is newer than the view (and after+1 must not wrap)
	}
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.eventKey(show, after+1), UpperBound: prefixEnd(v.m.eventPrefix(show))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []SeatEvent
	for ok := it.First(); ok && len(out) < limit; ok = it.Next() {
		_, rev, err := decodeEventKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("fsm: change record key %x: %w", it.Key(), err)
		}
		rec := &ledgerpb.SeatEventRecord{}
		if err := proto.Unmarshal(it.Value(), rec); err != nil {
			return nil, fmt.Errorf("fsm: decode change record of show %s at %d: %w", show, rev, err)
		}
		out = append(out, SeatEvent{Revision: rev, AppliedAtMs: rec.AppliedAtMs, Changes: rec.Changes, Offers: rec.Offers, Room: rec.Room})
	}
	return out, it.Error()
}

// EventFloor returns the highest revision whose change records were pruned
// (0 if none): records at or below it may be missing, records above it are
// all there.
func (v *View) EventFloor() (uint64, error) {
	b, closer, err := v.snapGet(v.m.eventFloorKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("fsm: read change log floor: %w", err)
	}
	defer closer.Close()
	if len(b) != 8 {
		return 0, fmt.Errorf("fsm: change log floor of %d bytes", len(b))
	}
	return binary.BigEndian.Uint64(b), nil
}

// ShowExists reports whether a show exists in the view, without decoding it.
func (v *View) ShowExists(id string) (bool, error) {
	_, err := v.layout(id)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// EventsPrunable reports whether a change record was applied before
// now - EventRetentionMs (Unix ms), so that an Expire entry proposed now
// would prune it. The leader's expiry driver asks, now and then, so that
// changes are pruned even in a group where no hold ever expires.
func (m *Machine) EventsPrunable(now int64) (bool, error) {
	horizon := now - EventRetentionMs
	if horizon <= 0 {
		return false, nil
	}
	v, err := m.View()
	if err != nil {
		return false, err
	}
	defer v.Close()
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: m.key(kindEventAge), UpperBound: m.key(kindEventAge, u64(uint64(horizon)))})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return it.First(), it.Error()
}
