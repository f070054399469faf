package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
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
	tx.changesOf(show).seatChanged(seat, state)
}

// seatChanged is txn.seatChanged in sc's show: a command that changes a
// hold's seats, which are all of one show, looks the show's changes up
// once (changesOf) rather than once a seat. sc is good until changesOf
// adds another show.
func (sc *showChanges) seatChanged(seat string, state ledgerpb.SeatState) {
	if !(state != ledgerpb.SeatState_SEAT_STATE_UNSPECIFIED && seat != "") {
		violated("seat %q of show %s changed to state %v", seat, sc.show, state)
	}
	sc.changes = appendSeatChange(sc.changes, seat, state)
}

// showChanges are one show's changes in the entry being applied, encoded.
// Their buffers are kept from entry to entry (txn.events).
type showChanges struct {
	show    string
	changes []byte // SeatEventRecord.changes fields
	offers  []byte // SeatEventRecord.offers fields
}

// changesOf returns show's changes in the entry being applied.
func (tx *txn) changesOf(show string) *showChanges {
	if i, ok := tx.eventAt[show]; ok {
		return &tx.events[i]
	}
	if tx.eventAt == nil {
		tx.eventAt = map[string]int{}
	}
	i := len(tx.events)
	if i < cap(tx.events) {
		tx.events = tx.events[:i+1]
	} else {
		tx.events = append(tx.events, showChanges{})
	}
	sc := &tx.events[i]
	sc.show, sc.changes, sc.offers = show, sc.changes[:0], sc.offers[:0]
	tx.eventAt[show] = i
	return sc
}

// offerMade records that the waiting queue offered hold to entry of show in
// the entry being applied; the offer goes out with the show's changes.
func (tx *txn) offerMade(show, entry, hold string) {
	sc := tx.changesOf(show)
	b := sc.offers
	size := protowire.SizeTag(offerEntryField) + protowire.SizeBytes(len(entry)) +
		protowire.SizeTag(offerHoldField) + protowire.SizeBytes(len(hold))
	b = protowire.AppendTag(b, eventOffersField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = protowire.AppendTag(b, offerEntryField, protowire.BytesType)
	b = protowire.AppendString(b, entry)
	b = protowire.AppendTag(b, offerHoldField, protowire.BytesType)
	sc.offers = protowire.AppendString(b, hold)
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

// appendEventRecord appends a SeatEventRecord with the encoded changes and
// offers to b.
func appendEventRecord(b []byte, appliedAt int64, changes, offers []byte) []byte {
	if appliedAt != 0 { // proto3: a zero scalar is not written
		b = protowire.AppendTag(b, eventAppliedAtField, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(appliedAt))
	}
	return append(append(b, changes...), offers...)
}

// flushEvents writes the changes of the entry just applied: one record per
// show it touched, keeping the order in which the entry changed the seats (a
// seat may change twice: FREE when an expired hold lets go, then HELD by the
// hold that took it). Shows are written in sorted order, so replicas build
// identical batches whatever order the entry touched them in.
func (tx *txn) flushEvents() {
	if len(tx.events) == 0 {
		return
	}
	slices.SortFunc(tx.events, func(a, b showChanges) int { return strings.Compare(a.show, b.show) })
	bucket := eventBucket(tx.now)
	if bucket >= tx.m.eventBuckets {
		// The bucket's first record: note where it starts. The log clock
		// never goes back, so no older bucket gets records any more.
		tx.set(tx.m.eventBucketKey(bucket), u64(tx.index))
		tx.m.eventBuckets = bucket + 1
	}
	for i := range tx.events {
		sc := &tx.events[i]
		// An offer holds seats, so its show has changes too; the offers
		// follow them, as proto.Marshal orders the fields.
		if len(sc.changes) <= 0 {
			violated("empty change list of show %s at index %d (%d bytes of offers)", sc.show, tx.index, len(sc.offers))
		}
		// The key is new: it holds the entry's index, which applyEntry
		// asserts is above every index applied before.
		tx.scratch = appendEventRecord(tx.scratch[:0], tx.now, sc.changes, sc.offers)
		tx.keyBuf = tx.m.appendEventKey(tx.keyBuf[:0], bucket, sc.show, tx.index)
		tx.set(tx.keyBuf, tx.scratch)
		st := tx.m.led.shows[sc.show]
		if st == nil {
			violated("changes of missing show %s at index %d", sc.show, tx.index)
		}
		tx.touched = append(tx.touched, showTouch{st.id, st.num, tx.index})
	}
	// One revision record for the entry, naming its shows: a record per
	// show would be one more record per command under load.
	tx.scratch = appendEventRevShows(tx.scratch[:0], tx.events)
	tx.keyBuf = tx.m.appendEventRevKey(tx.keyBuf[:0], bucket, tx.index)
	tx.set(tx.keyBuf, tx.scratch)
	tx.events = tx.events[:0]
	clear(tx.eventAt)
}

// pruneEvents forgets the change records of every bucket that ended before
// the retention horizon, with one range deletion, and raises the floor to
// just below the first revision of the oldest bucket kept (below the
// entry's index when none is kept): every record above the floor is still
// there, or, at the entry's index, about to be.
func (tx *txn) pruneEvents() {
	horizon := tx.now - EventRetentionMs
	if horizon <= 0 {
		return
	}
	below := eventBucket(horizon) // buckets < below ended by the horizon
	pruned := false
	tx.scan(tx.m.eventBucketKey(0), tx.m.eventBucketKey(below), 1, func([]byte) { pruned = true })
	if !pruned {
		return
	}
	tx.deleteRange(tx.m.appendKind(nil, kindEvent), binary.BigEndian.AppendUint64(tx.m.appendKind(nil, kindEvent), below))
	tx.deleteRange(tx.m.appendKind(nil, kindEventRev), binary.BigEndian.AppendUint64(tx.m.appendKind(nil, kindEventRev), below))
	tx.deleteRange(tx.m.eventBucketKey(0), tx.m.eventBucketKey(below))
	floor := tx.index - 1
	tx.scan(tx.m.eventBucketKey(below), prefixEnd(tx.m.key(kindEventBucket)), 1, func(k []byte) {
		v, ok := tx.read(k)
		if !ok || len(v) != 8 {
			violated("change bucket %x without its first revision", k)
		}
		floor = binary.BigEndian.Uint64(v) - 1
	})
	tx.set(tx.m.eventFloorKey(), u64(max(floor, tx.eventFloor())))
}

// eventFloor reads the floor through the batch; 0 when nothing was pruned.
func (tx *txn) eventFloor() uint64 {
	v, closer, err := tx.store().Get(tx.m.eventFloorKey())
	if errors.Is(err, pebble.ErrNotFound) {
		return 0
	}
	must(err, "read change log floor")
	defer closer.Close()
	if len(v) != 8 {
		violated("change log floor of %d bytes", len(v))
	}
	return binary.BigEndian.Uint64(v)
}

// changeIndex remembers, in memory, the last index at which each show's
// change log grew, so that a watcher woken by an entry of another show skips
// opening a snapshot. Like the layout cache it is not state: forgetting
// only costs reads.
//
// commit notes a batch's shows before it publishes the batch's index, and a
// reader loads the applied index before it asks; so a reader that sees an
// index also sees every change up to it, and may skip to that index when
// its show did not change. Restore resets it before publishing its index.
//
// It is kept by show number (showState.num), an array write per changed
// show for apply; a map by id, written once per show, is the readers' way
// in. Memory: 8 bytes per show (up to the highest number that changed)
// and a map entry per show that changed.
type changeIndex struct {
	mu struct {
		sync.Mutex
		base uint64            // changes at or below base are not known
		last []uint64          // by show number: the last index with a change record, 0 none known
		nums map[string]uint32 // show -> number, for the shows last has
	}
}

func (c *changeIndex) reset(base uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.base, c.mu.last, c.mu.nums = base, nil, nil
}

// showTouch is a show, by id and number, and an index at which its change
// log grew.
type showTouch struct {
	show string
	num  uint32
	at   uint64
}

// note records the shows a batch committed up to index changed, in the
// order they changed (a show may come more than once; the last counts).
func (c *changeIndex) note(index uint64, shows []showTouch) {
	if len(shows) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range shows {
		if n := int(t.num) + 1; n > len(c.mu.last) {
			c.mu.last = append(c.mu.last, make([]uint64, n-len(c.mu.last))...)
		}
		if c.mu.last[t.num] == 0 {
			if c.mu.nums == nil {
				c.mu.nums = map[string]uint32{}
			}
			c.mu.nums[t.show] = t.num
		}
		c.mu.last[t.num] = t.at
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
	num, ok := c.mu.nums[show]
	return ok && c.mu.last[num] > pos
}

// ---- keys ----

// eventBucketMs is the span of log time whose change records share a key
// prefix (their bucket): records are pruned a bucket at a time, with one
// range deletion, instead of by an age index written and deleted with each
// record.
const eventBucketMs = 5 * 60 * 1000

// eventBucket is the bucket of a record applied at log time at.
func eventBucket(at int64) uint64 { return uint64(max(at, 0)) / eventBucketMs }

// eventShowPrefix is the prefix of a show's change records in bucket.
func (m *Machine) eventShowPrefix(bucket uint64, show string) []byte {
	return appendLenPrefixed(binary.BigEndian.AppendUint64(m.appendKind(nil, kindEvent), bucket), show)
}

// eventKey is a show's change record at revision, in the bucket of the log
// time it was applied at: a show's records sort by revision within a
// bucket, and buckets by time, which orders revisions too.
func (m *Machine) eventKey(bucket uint64, show string, rev uint64) []byte {
	return m.appendEventKey(nil, bucket, show, rev)
}

func (m *Machine) appendEventKey(dst []byte, bucket uint64, show string, rev uint64) []byte {
	k := binary.BigEndian.AppendUint64(m.appendKind(dst, kindEvent), bucket)
	return binary.BigEndian.AppendUint64(appendLenPrefixed(k, show), rev)
}

// eventRevKey is the revision record of the entry at rev in bucket: it
// names the shows whose change records the entry wrote
// (appendEventRevShows), for reads of the whole group's changes in
// revision order (GroupEvents); a show's records are keyed for reads of
// one show.
func (m *Machine) eventRevKey(bucket, rev uint64) []byte {
	return m.appendEventRevKey(nil, bucket, rev)
}

func (m *Machine) appendEventRevKey(dst []byte, bucket, rev uint64) []byte {
	k := binary.BigEndian.AppendUint64(m.appendKind(dst, kindEventRev), bucket)
	return binary.BigEndian.AppendUint64(k, rev)
}

// decodeEventRevKey returns the bucket and revision of a revision record's
// key.
func decodeEventRevKey(k []byte) (uint64, uint64, error) {
	if len(k) != groupPrefixLen+1+8+8 || k[groupPrefixLen] != kindEventRev {
		return 0, 0, errBadKey
	}
	body := k[groupPrefixLen+1:]
	return binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:]), nil
}

// appendEventRevShows encodes a revision record: the entry's shows, each
// length-prefixed, sorted as length-prefixed strings (the order of the
// record per show that it replaced). It sorts events so.
func appendEventRevShows(b []byte, events []showChanges) []byte {
	slices.SortFunc(events, func(x, y showChanges) int {
		if len(x.show) != len(y.show) {
			return len(x.show) - len(y.show)
		}
		return strings.Compare(x.show, y.show)
	})
	for i := range events {
		b = appendLenPrefixed(b, events[i].show)
	}
	return b
}

// decodeEventRevShows returns the shows of a revision record.
func decodeEventRevShows(v []byte) ([]string, error) {
	var shows []string
	for len(v) > 0 {
		n := int(v[0])
		if n == 0 || len(v) < 1+n {
			return nil, errBadKey
		}
		shows = append(shows, string(v[1:1+n]))
		v = v[1+n:]
	}
	if len(shows) == 0 {
		return nil, errBadKey
	}
	return shows, nil
}

// eventBucketKey holds the first revision written to bucket: a reader
// after a revision starts at the last bucket that begins at or before it.
func (m *Machine) eventBucketKey(bucket uint64) []byte {
	return binary.BigEndian.AppendUint64(m.appendKind(nil, kindEventBucket), bucket)
}

func (m *Machine) eventFloorKey() []byte { return m.key(kindEventFloor) }

// decodeEventKey returns the bucket, show and revision of a change record
// key.
func decodeEventKey(k []byte) (uint64, string, uint64, error) {
	if len(k) < groupPrefixLen+1+8+1 || k[groupPrefixLen] != kindEvent {
		return 0, "", 0, errBadKey
	}
	body := k[groupPrefixLen+1:]
	bucket := binary.BigEndian.Uint64(body)
	body = body[8:]
	n := int(body[0])
	if len(body) != 1+n+8 {
		return 0, "", 0, errBadKey
	}
	return bucket, string(body[1 : 1+n]), binary.BigEndian.Uint64(body[1+n:]), nil
}

// decodeEventBucketKey returns the bucket of a bucket key.
func decodeEventBucketKey(k []byte) (uint64, error) {
	if len(k) != groupPrefixLen+1+8 || k[groupPrefixLen] != kindEventBucket {
		return 0, errBadKey
	}
	return binary.BigEndian.Uint64(k[groupPrefixLen+1:]), nil
}

// ---- reads ----

// SeatEvent is the change record of one show at one revision: the seats the
// entry at that raft index changed, in the order it changed them.
type SeatEvent struct {
	Revision    uint64
	AppliedAtMs int64
	Changes     []*ledgerpb.SeatChange
	Offers      []*ledgerpb.QueueOffer
	// HoldChanges are the holds the entry created, closed, confirmed or
	// refunded in the show (webhook.go).
	HoldChanges []*ledgerpb.WebhookHoldChange
	// Room is the show's waiting room after the entry, when it changed
	// (waitroom_events.go).
	Room *ledgerpb.RoomEvent
	// Admissions are the entries the room admitted (waitroom_events.go).
	Admissions []*ledgerpb.RoomAdmission
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
	first, err := v.eventBucketFrom(after + 1)
	if err != nil {
		return nil, err
	}
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.eventKey(first, "", 0), UpperBound: prefixEnd(v.m.appendKind(nil, kindEvent))})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []SeatEvent
	// One seek per bucket from first on: a show's records after `after`
	// in each, in revision order.
	for bucket := first; len(out) < limit; bucket++ {
		prefix := v.m.eventShowPrefix(bucket, show)
		ok := it.SeekGE(binary.BigEndian.AppendUint64(prefix, after+1))
		for ; ok && len(out) < limit && bytes.HasPrefix(it.Key(), prefix); ok = it.Next() {
			_, _, rev, err := decodeEventKey(it.Key())
			if err != nil {
				return nil, fmt.Errorf("fsm: change record key %x: %w", it.Key(), err)
			}
			ev, err := decodeSeatEvent(show, rev, it.Value())
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
		}
		if !ok {
			break // past the last record of every bucket
		}
		// Skip to the next bucket that has any record.
		next, _, _, err := decodeEventKey(it.Key())
		if err != nil {
			return nil, fmt.Errorf("fsm: change record key %x: %w", it.Key(), err)
		}
		if next > bucket {
			bucket = next - 1
		}
	}
	return out, it.Error()
}

// loadEventBuckets returns 1 + the newest bucket of change records the store
// has begun, 0 when it has none (Machine.eventBuckets).
func (m *Machine) loadEventBuckets(r reader) (uint64, error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: m.eventBucketKey(0), UpperBound: prefixEnd(m.appendKind(nil, kindEventBucket))})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	if !it.Last() {
		return 0, it.Error()
	}
	bucket, err := decodeEventBucketKey(it.Key())
	if err != nil {
		return 0, fmt.Errorf("fsm: change bucket key %x: %w", it.Key(), err)
	}
	return bucket + 1, nil
}

// decodeSeatEvent decodes show's change record at rev.
func decodeSeatEvent(show string, rev uint64, b []byte) (SeatEvent, error) {
	rec := &ledgerpb.SeatEventRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return SeatEvent{}, fmt.Errorf("fsm: decode change record of show %s at %d: %w", show, rev, err)
	}
	return SeatEvent{Revision: rev, AppliedAtMs: rec.AppliedAtMs, Changes: rec.Changes, Offers: rec.Offers,
		HoldChanges: rec.HoldChanges, Room: rec.Room, Admissions: rec.Admissions}, nil
}

// eventBucketFrom returns the bucket of change records in which revision
// rev or the first record after it is: the last bucket that begins at or
// before rev (0 when none does; buckets before it hold only older
// revisions).
func (v *View) eventBucketFrom(rev uint64) (uint64, error) {
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.eventBucketKey(0), UpperBound: prefixEnd(v.m.appendKind(nil, kindEventBucket))})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var from uint64
	for ok := it.First(); ok; ok = it.Next() {
		bucket, err := decodeEventBucketKey(it.Key())
		if err != nil || len(it.Value()) != 8 {
			return 0, fmt.Errorf("fsm: change bucket key %x: malformed", it.Key())
		}
		if binary.BigEndian.Uint64(it.Value()) > rev {
			break
		}
		from = bucket
	}
	return from, it.Error()
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

// EventsPrunable reports whether a bucket of change records ended before
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
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: m.eventBucketKey(0), UpperBound: m.eventBucketKey(eventBucket(horizon))})
	if err != nil {
		return false, err
	}
	defer it.Close()
	return it.First(), it.Error()
}
