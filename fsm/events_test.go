// This file proves the change log (doc.go, "Change log") beyond the
// events.txt scenario: over thousands of random entries (holds, confirms,
// releases, expiries, batches, retries, clock jumps past the retention
// horizon) the last retained change of every seat equals the seat's stored
// state, records only ever appear at the entry's own index, and readers are
// told "pruned" exactly when the floor passes them; a snapshot carries the
// records and the floor; the leader's prune check sees old records; and the
// key decoders round-trip (fuzzed). It also runs the events and eventfloor
// statements of the scenario scripts.
package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// eventsString renders records as the scenario scripts write them:
// "3:A1=HELD,A2=HELD 4:A1=BOOKED".
func eventsString(evs []SeatEvent) string {
	if len(evs) == 0 {
		return "none"
	}
	parts := make([]string, len(evs))
	for i, e := range evs {
		cs := make([]string, len(e.Changes))
		for j, c := range e.Changes {
			cs[j] = c.SeatId + "=" + c.State.String()
		}
		parts[i] = fmt.Sprintf("%d:%s", e.Revision, strings.Join(cs, ","))
	}
	return strings.Join(parts, " ")
}

// allEvents reads every retained record of a show after a revision.
func allEvents(v *View, show string, after uint64) ([]SeatEvent, error) {
	return v.SeatEvents(show, after, 1<<30)
}

// checkEvents runs "events <show> [after=<n>] <records...>|none|pruned".
func (s *scenario) checkEvents(f []string) {
	if len(f) < 3 {
		s.fatalf("events needs a show and records, none or pruned")
	}
	var after uint64
	var want []string
	for _, x := range f[2:] {
		if v, ok := strings.CutPrefix(x, "after="); ok {
			after = uint64(s.parseInt(v))
			continue
		}
		want = append(want, x)
	}
	v := s.view()
	defer v.Close()
	evs, err := allEvents(v, f[1], after)
	if len(want) == 1 && want[0] == "pruned" {
		if !errors.Is(err, ErrEventsPruned) {
			s.errorf("SeatEvents(%s, after %d) = %s, %v; want ErrEventsPruned", f[1], after, eventsString(evs), err)
		}
		return
	}
	if err != nil {
		s.fatalf("SeatEvents(%s, after %d): %v", f[1], after, err)
	}
	if got := eventsString(evs); got != strings.Join(want, " ") {
		s.errorf("SeatEvents(%s, after %d) = %s, want %s", f[1], after, got, strings.Join(want, " "))
	}
}

// checkEventFloor runs "eventfloor <n>".
func (s *scenario) checkEventFloor(f []string) {
	v := s.view()
	defer v.Close()
	got, err := v.EventFloor()
	if err != nil {
		s.fatalf("EventFloor: %v", err)
	}
	if want := uint64(s.int(f, 1)); got != want {
		s.errorf("EventFloor() = %d, want %d", got, want)
	}
}

// storedSeats returns a show's seats by stored record: HELD or BOOKED as
// written, FREE when absent. Unlike SeatMap it does not read holds expired
// by the clock as FREE: the change log reports what entries wrote.
func storedSeats(v *View, show string) (map[string]ledgerpb.SeatState, error) {
	l, err := v.layout(show)
	if err != nil {
		return nil, err
	}
	out := make(map[string]ledgerpb.SeatState, l.total)
	for i := range l.total {
		out[seatName(l, i)] = ledgerpb.SeatState_FREE
	}
	snap, err := v.snapshot()
	if err != nil {
		return nil, err
	}
	holds, err := v.m.liveHolds(snap, show)
	if err != nil {
		return nil, err
	}
	t := newHoldTable()
	owners, err := v.m.placeSeats(&t, &showState{id: show, l: l}, holds)
	if err != nil {
		return nil, err
	}
	for i := range owners.len() {
		if r := owners.ref(i); r != 0 {
			out[seatName(l, i)] = ledgerpb.SeatState_HELD
			if t.at(r).state == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
				out[seatName(l, i)] = ledgerpb.SeatState_BOOKED
			}
		}
	}
	return out, nil
}

// checkEventLog checks the change log of the shows against the stored
// seats: the last retained change of a seat is its state (changes after a
// retained one are never pruned first), a seat without retained changes is
// FREE unless something was pruned, records lie above the floor and at or
// below the applied index, and a reader below the floor is told so.
func checkEventLog(m *Machine, shows []string) error {
	v, err := m.View()
	if err != nil {
		return err
	}
	defer v.Close()
	floor, err := v.EventFloor()
	if err != nil {
		return err
	}
	for _, show := range shows {
		stored, err := storedSeats(v, show)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		evs, err := allEvents(v, show, floor)
		if err != nil {
			return fmt.Errorf("SeatEvents(%s, after floor %d): %v", show, floor, err)
		}
		last := map[string]ledgerpb.SeatState{}
		prev := floor
		for _, e := range evs {
			if e.Revision <= prev || e.Revision > v.Applied() || len(e.Changes) == 0 {
				return fmt.Errorf("show %s: record at %d after %d (floor %d, applied %d) with %d changes", show, e.Revision, prev, floor, v.Applied(), len(e.Changes))
			}
			prev = e.Revision
			for _, c := range e.Changes {
				last[c.SeatId] = c.State
			}
		}
		for seat, st := range stored {
			got, changed := last[seat]
			if !changed && floor > 0 {
				continue // its changes may be pruned
			}
			if !changed {
				got = ledgerpb.SeatState_FREE
			}
			if got != st {
				return fmt.Errorf("show %s seat %s: change log ends at %s, stored state %s (floor %d)", show, seat, got, st, floor)
			}
		}
		// A watcher may skip reading when the in-memory index says no
		// change: then there must be none.
		for _, pos := range []uint64{0, floor, v.Applied() / 2, v.Applied() - min(v.Applied(), 3), v.Applied()} {
			if pos < floor || m.ShowChangedAfter(show, pos) {
				continue
			}
			if evs, _ := v.SeatEvents(show, pos, 1); len(evs) > 0 {
				return fmt.Errorf("ShowChangedAfter(%s, %d) = false, but the log has a record at %d", show, pos, evs[0].Revision)
			}
		}
		if floor > 0 {
			if _, err := v.SeatEvents(show, floor-1, 1); !errors.Is(err, ErrEventsPruned) {
				return fmt.Errorf("SeatEvents(%s, after %d) below the floor %d = %v, want ErrEventsPruned", show, floor-1, floor, err)
			}
		}
	}
	return nil
}

func TestEventLogMatchesSeats(t *testing.T) {
	seed := testSeed(t)
	pruned := 0
	for run := range 6 {
		m := newTestMachine(t, newTestDB(t), 9)
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, 500+uint64(run)))})
		for range 300 {
			index, cmd := g.entry()
			res, err := applyRecover(m, index, cmd)
			if err != nil {
				t.Fatalf("run %d: %s: %v", run, opName(cmd), err)
			}
			g.observe(cmd, res)
			if err := checkEventLog(m, []string{"s1", "s2"}); err != nil {
				t.Fatalf("run %d after entry %d (%s): %v", run, index, opName(cmd), err)
			}
		}
		v, err := m.View()
		if err != nil {
			t.Fatal(err)
		}
		if f, _ := v.EventFloor(); f > 0 {
			pruned++
		}
		v.Close()
	}
	if pruned == 0 {
		t.Errorf("no run pruned any change record: the generator no longer reaches the retention horizon")
	}
}

// TestEventsSurviveSnapshot: a replica restored from a snapshot serves the
// same records and floor as its source, and both keep writing identical ones.
func TestEventsSurviveSnapshot(t *testing.T) {
	src := newTestMachine(t, newTestDB(t), 2)
	mustApply(t, src, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	mustApply(t, src, 2, at(1000, cmdHold("c1", "r1", "s1", 0, "A1", "A2")), 1)
	mustApply(t, src, 3, at(eventBucketMs+2000, cmdHold("c1", "r2", "s1", 0, "A3")), 1)
	// Prune the first record's bucket: the floor must travel too.
	mustApply(t, src, 4, at(eventBucketMs+EventRetentionMs, cmdExpire(0, 1)), 1)
	dst := newTestMachine(t, newTestDB(t), 2)
	if err := dst.Restore(bytes.NewReader(snapshotBytes(t, src))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	want := "3:A3=HELD"
	for _, m := range []*Machine{src, dst} {
		mustApply(t, m, 5, at(eventBucketMs+EventRetentionMs+1000, cmdHold("c2", "r1", "s1", 0, "A4")), 1)
	}
	want += " 5:A4=HELD"
	for name, m := range map[string]*Machine{"source": src, "restored": dst} {
		v, err := m.View()
		if err != nil {
			t.Fatal(err)
		}
		floor, err := v.EventFloor()
		evs, err2 := allEvents(v, "s1", 2)
		_, err3 := v.SeatEvents("s1", 1, 10)
		v.Close()
		if err != nil || err2 != nil || floor != 2 || eventsString(evs) != want {
			t.Errorf("%s: EventFloor() = %d (%v), SeatEvents(s1, after 2) = %s (%v); want 2 and %s", name, floor, err, eventsString(evs), err2, want)
		}
		if !errors.Is(err3, ErrEventsPruned) {
			t.Errorf("%s: SeatEvents(s1, after 1) = %v, want ErrEventsPruned", name, err3)
		}
	}
	if a, b := mustDigest(t, src), mustDigest(t, dst); a != b {
		t.Errorf("restored digest %v, source %v", b, a)
	}
}

// TestEventsPrunable: the leader's check sees a record once its bucket
// ended before the horizon by the leader's clock, and not after an Expire
// pruned it.
func TestEventsPrunable(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	prunable := func(now int64) bool {
		t.Helper()
		ok, err := m.EventsPrunable(now)
		if err != nil {
			t.Fatalf("EventsPrunable(%d): %v", now, err)
		}
		return ok
	}
	mustApply(t, m, 1, at(5000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	if prunable(5000 + 2*EventRetentionMs) {
		t.Errorf("EventsPrunable with no record = true, want false")
	}
	mustApply(t, m, 2, at(5000, cmdHold("c1", "r1", "s1", 0, "A1")), 1)
	end := int64(eventBucketMs) // the record's bucket ends here
	if prunable(end + EventRetentionMs - 1) {
		t.Errorf("EventsPrunable(bucket end + retention - 1) = true, want false (not older yet)")
	}
	if !prunable(end + EventRetentionMs) {
		t.Errorf("EventsPrunable(bucket end + retention) = false, want true")
	}
	mustApply(t, m, 3, at(end+EventRetentionMs, cmdExpire(0, 0)), 1)
	if prunable(end + EventRetentionMs) {
		t.Errorf("EventsPrunable after the Expire that pruned it = true, want false")
	}
}

// TestEventKeysSortByRevision: a show's records sort by revision within a
// bucket, buckets sort by time before shows, shows stay apart, and the
// bucket keys sort by bucket.
func TestEventKeysSortByRevision(t *testing.T) {
	m := &Machine{group: 3, prefix: groupPrefix(3)}
	revs := []uint64{1, 255, 256, 1 << 40}
	for i := 1; i < len(revs); i++ {
		if bytes.Compare(m.eventKey(4, "s1", revs[i-1]), m.eventKey(4, "s1", revs[i])) >= 0 {
			t.Errorf("eventKey(4, s1, %d) >= eventKey(4, s1, %d)", revs[i-1], revs[i])
		}
		if bytes.Compare(m.eventBucketKey(revs[i-1]), m.eventBucketKey(revs[i])) >= 0 {
			t.Errorf("eventBucketKey(%d) >= eventBucketKey(%d)", revs[i-1], revs[i])
		}
	}
	if bytes.HasPrefix(m.eventKey(4, "s10", 1), m.eventShowPrefix(4, "s1")) {
		t.Errorf("change records of show s10 fall under the prefix of show s1")
	}
	if bytes.Compare(m.eventRevKey(1, 99), m.eventRevKey(1, 100)) >= 0 {
		t.Errorf("eventRevKey(1, 99) >= eventRevKey(1, 100)")
	}
	if bytes.Compare(m.eventKey(1, "zz", 99), m.eventKey(2, "a", 1)) >= 0 {
		t.Errorf("eventKey(bucket 1) >= eventKey(bucket 2)")
	}
	if got, want := eventBucket(eventBucketMs-1), uint64(0); got != want {
		t.Errorf("eventBucket(%d) = %d, want %d", eventBucketMs-1, got, want)
	}
	if got, want := eventBucket(-5), uint64(0); got != want {
		t.Errorf("eventBucket(-5) = %d, want %d", got, want)
	}
	bucket, show, rev, err := decodeEventKey(m.eventKey(9, "ab", 77))
	if err != nil || bucket != 9 || show != "ab" || rev != 77 {
		t.Errorf("decodeEventKey(eventKey(9, ab, 77)) = %d, %q, %d, %v", bucket, show, rev, err)
	}
}

func FuzzDecodeEventKeys(f *testing.F) {
	m := &Machine{group: 7, prefix: groupPrefix(7)}
	f.Add(m.eventKey(3, "s1", 12))
	f.Add(m.eventKey(0, "", 0))
	f.Add(m.eventBucketKey(1000))
	f.Add(m.eventBucketKey(1 << 63))
	f.Add(m.eventRevKey(3, 12))
	f.Add([]byte("G\x00\x00\x00\x07\x0a\x05s1"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		var mk *Machine
		if len(k) >= groupPrefixLen {
			mk = &Machine{prefix: bytes.Clone(k[:groupPrefixLen])}
		}
		if bucket, show, rev, err := decodeEventKey(k); err == nil {
			if got := mk.eventKey(bucket, show, rev); !bytes.Equal(got, k) {
				t.Fatalf("eventKey(decodeEventKey(%x)) = %x", k, got)
			}
		}
		if bucket, rev, err := decodeEventRevKey(k); err == nil {
			if got := mk.eventRevKey(bucket, rev); !bytes.Equal(got, k) {
				t.Fatalf("eventRevKey(decodeEventRevKey(%x)) = %x", k, got)
			}
		}
		if shows, err := decodeEventRevShows(k); err == nil {
			events := make([]showChanges, len(shows))
			for i, s := range shows {
				events[i].show = s
			}
			if got := appendEventRevShows(nil, events); !bytes.Equal(got, k) && isLenPrefixedSorted(shows) {
				t.Fatalf("appendEventRevShows(decodeEventRevShows(%x)) = %x", k, got)
			}
		}
		if bucket, err := decodeEventBucketKey(k); err == nil {
			if got := mk.eventBucketKey(bucket); !bytes.Equal(got, k) {
				t.Fatalf("eventBucketKey(decodeEventBucketKey(%x)) = %x", k, got)
			}
		}
	})
}

// TestEventRecordEncoding: the hand-written encoder of change records
// (seatChanged, offerMade, appendEventRecord) writes exactly what
// proto.Marshal writes for the same SeatEventRecord.
func TestEventRecordEncoding(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	states := []ledgerpb.SeatState{ledgerpb.SeatState_FREE, ledgerpb.SeatState_HELD, ledgerpb.SeatState_BOOKED}
	tx := &txn{}
	for i := range 200 {
		rec := &ledgerpb.SeatEventRecord{}
		if i > 0 {
			rec.AppliedAtMs = int64(r.Uint64N(ClockMaxMs + 1))
		}
		for range 1 + r.IntN(12) {
			seat := fmt.Sprintf("%s%d", strings.Repeat("Z", 1+r.IntN(3)), 1+r.IntN(500))
			state := states[r.IntN(len(states))]
			rec.Changes = append(rec.Changes, &ledgerpb.SeatChange{SeatId: seat, State: state})
			tx.seatChanged("s1", seat, state)
		}
		for j := range r.IntN(3) {
			o := &ledgerpb.QueueOffer{EntryId: fmt.Sprintf("q%d-%d", i, j), HoldId: fmt.Sprintf("h%d-%d", i, j)}
			rec.Offers = append(rec.Offers, o)
			tx.offerMade("s1", o.EntryId, o.HoldId)
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		if len(tx.events) != 1 {
			t.Fatalf("changes of %d shows, want 1", len(tx.events))
		}
		sc := tx.events[0]
		if got := appendEventRecord(nil, rec.AppliedAtMs, sc.changes, sc.offers); !bytes.Equal(got, want) {
			t.Fatalf("appendEventRecord(%v) = %x, proto.Marshal = %x", rec, got, want)
		}
		tx.events = tx.events[:0]
		clear(tx.eventAt)
	}
}

// TestShowChangedAfter: the in-memory index of changes answers "no change"
// only when it knows, and knows nothing from before a restart or a restore.
func TestShowChangedAfter(t *testing.T) {
	db := newTestDB(t)
	m := newTestMachine(t, db, 1)
	check := func(m *Machine, show string, pos uint64, want bool) {
		t.Helper()
		if got := m.ShowChangedAfter(show, pos); got != want {
			t.Errorf("ShowChangedAfter(%s, %d) at applied %d = %v, want %v", show, pos, m.Applied(), got, want)
		}
	}
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	check(m, "s1", 0, false) // a show's creation changes no seat
	mustApply(t, m, 2, at(1000, cmdHold("c1", "r1", "s1", 0, "A1")), 1)
	mustApply(t, m, 3, at(1000, cmdShow("admin", "r2", testShow("s2", "A:4:std", "std:100:EUR"))), 1)
	check(m, "s1", 1, true)
	check(m, "s1", 2, false)
	check(m, "s2", 0, false)
	// A restarted machine knows nothing before its applied index.
	if err := m.Checkpoint(); err != nil { // as the node closed
		t.Fatal(err)
	}
	again := newTestMachine(t, db, 1)
	check(again, "s1", 1, true)
	check(again, "s2", 2, true)
	check(again, "s2", 3, false)
	// Nor does a restored one.
	dst := newTestMachine(t, newTestDB(t), 1)
	check(dst, "s1", 0, false)
	if err := dst.Restore(bytes.NewReader(snapshotBytes(t, m))); err != nil {
		t.Fatal(err)
	}
	check(dst, "s1", 0, true)
	check(dst, "s1", 3, false)
}

// isLenPrefixedSorted tells whether shows are in a revision record's order.
func isLenPrefixedSorted(shows []string) bool {
	for i := 1; i < len(shows); i++ {
		a, b := shows[i-1], shows[i]
		if len(a) > len(b) || len(a) == len(b) && a > b {
			return false
		}
	}
	return true
}
