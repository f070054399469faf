// This file proves that reads see the ledger's seat states as they are:
// kept states are dropped by a write to the show and outlived by an expiry
// by the log clock, a view with a snapshot reads its own point, and shared
// seat lists survive concurrent marshalling.
package fsm

import (
	"fmt"
	"sync"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// withoutCacheChecks lets a test see what the kept states answer on their
// own (every other test has them checked against the store on each read).
func withoutCacheChecks(t *testing.T) {
	saved := checkLedger
	checkLedger = false
	t.Cleanup(func() { checkLedger = saved })
}

func seatStatesAt(t *testing.T, m *Machine) string {
	t.Helper()
	v := m.ReadView()
	defer v.Close()
	sm, err := v.SeatStates("s1")
	if err != nil {
		t.Fatal(err)
	}
	return sm.SeatStates
}

// The cached states of a show are served only while they are the show's
// states: a hold expiring by the log clock, with no write to the show, and
// a write to the show both make the next read see the change.
func TestSeatStatesCacheFollowsExpiryAndWrites(t *testing.T) {
	withoutCacheChecks(t)
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1000:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdShow("admin", "r2", testShow("s2", "A:4:std", "std:1000:EUR"))), 1)
	mustApply(t, m, 3, at(1000, cmdHold("fan", "h1", "s1", 1000, "A1", "A2")), 1)
	if got := seatStatesAt(t, m); got != "HHFF" {
		t.Fatalf("states after the hold = %s, want HHFF", got)
	}
	if m.led.shows["s1"].states.Load() == nil {
		t.Fatal("the states just read are not kept")
	}
	// Another show's entry moves the clock, still before the expiry.
	mustApply(t, m, 4, at(1500, cmdHold("fan", "h2", "s2", 1000, "A1")), 1)
	if got := seatStatesAt(t, m); got != "HHFF" {
		t.Fatalf("states at 1500 = %s, want HHFF", got)
	}
	// Past the expiry: no write to s1, yet its seats are free.
	mustApply(t, m, 5, at(2000, cmdHold("fan", "h3", "s2", 1000, "A2")), 1)
	if got := seatStatesAt(t, m); got != "FFFF" {
		t.Fatalf("states at the hold's expiry = %s, want FFFF", got)
	}
	// A write to s1 (its change log grows).
	mustApply(t, m, 6, at(2100, cmdHold("fan2", "h4", "s1", 60_000, "A4")), 1)
	if got := seatStatesAt(t, m); got != "FFFH" {
		t.Fatalf("states after a second hold = %s, want FFFH", got)
	}
}

// A view older than the cached states reads its own.
func TestSeatStatesCacheServesNoOlderView(t *testing.T) {
	withoutCacheChecks(t)
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1000:EUR"))), 1)
	old := mustView(t, m)
	defer old.Close()
	mustApply(t, m, 2, at(1000, cmdHold("fan", "h1", "s1", 60_000, "A1")), 1)
	if got := seatStatesAt(t, m); got != "HFFF" {
		t.Fatalf("states after the hold = %s, want HFFF", got)
	}
	sm, err := old.SeatStates("s1")
	if err != nil {
		t.Fatal(err)
	}
	if sm.SeatStates != "FFFF" || sm.Revision != 1 {
		t.Fatalf("the older view reads %s at %d, want FFFF at 1", sm.SeatStates, sm.Revision)
	}
}

// A view's index and clock, published without reading the meta record,
// are those of its snapshot, and a view taken before the show existed does
// not see it.
func TestViewPublishedIndexAndLayout(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	before := mustView(t, m)
	defer before.Close()
	mustApply(t, m, 1, at(1234, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1000:EUR"))), 1)
	v := mustView(t, m)
	defer v.Close()
	if v.Applied() != 1 || v.Clock() != 1234 {
		t.Fatalf("view at index %d clock %d, want 1 and 1234", v.Applied(), v.Clock())
	}
	if _, err := before.SeatStates("s1"); err != ErrNotFound {
		t.Fatalf("a view from before the show was created reads it: %v", err)
	}
	if sm, err := v.SeatMap("s1"); err != nil || len(sm.Seats) != 4 || sm.Free != 4 || sm.Seats[0].State != ledgerpb.SeatState_FREE {
		t.Fatalf("SeatMap = %v, %v", sm, err)
	}
}

func mustView(t *testing.T, m *Machine) *View {
	t.Helper()
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// A read view whose group commits before its first read that needs a
// snapshot moves to the snapshot's index and clock; a view from View is
// fixed when opened.
func TestReadViewMovesToItsSnapshot(t *testing.T) {
	withoutCacheChecks(t) // checkPublished would catch a mismatch: see the view's own answer
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1000:EUR"))), 1)
	rv := m.ReadView()
	defer rv.Close()
	fixed := mustView(t, m)
	defer fixed.Close()
	mustApply(t, m, 2, at(2000, cmdHold("fan", "h1", "s1", 60_000, "A1")), 1)
	sm, err := rv.SeatStates("s1")
	if err != nil {
		t.Fatal(err)
	}
	if rv.Applied() != 2 || rv.Clock() != 2000 || sm.SeatStates != "HFFF" || sm.Revision != 2 {
		t.Fatalf("read view at index %d clock %d reads %s at %d, want index 2, clock 2000, HFFF at 2", rv.Applied(), rv.Clock(), sm.SeatStates, sm.Revision)
	}
	sm, err = fixed.SeatStates("s1")
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Applied() != 1 || sm.SeatStates != "FFFF" || sm.Revision != 1 {
		t.Fatalf("view at index %d reads %s at %d, want FFFF at 1", fixed.Applied(), sm.SeatStates, sm.Revision)
	}
	// Served from the ledger: no snapshot taken.
	cached := m.ReadView()
	defer cached.Close()
	if sm, err := cached.SeatStates("s1"); err != nil || sm.SeatStates != "HFFF" || cached.snap != nil {
		t.Fatalf("a read of unchanged states = %v, %v, snapshot taken %v; want HFFF from the cache", sm, err, cached.snap != nil)
	}
}

// Views opened while entries apply see their snapshot's own index and
// clock (the published pair is checked against the meta record on every
// view in tests) and states that match a fresh read of the snapshot.
func TestViewsWhileApplying(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:20:std", "std:1000:EUR"))), 1)
	readWhileApplying(t, func() {
		v := m.ReadView()
		if _, err := v.SeatStates("s1"); err != nil {
			panic(err)
		}
		v.Close()
	}, func() {
		for i := range 3000 {
			index := uint64(i + 2)
			// Holds of one seat for 30 ms of log time, so seats free up by
			// expiry as well as by being taken again.
			mustApply(t, m, index, at(1000+int64(i)*10, cmdHold("fan", fmt.Sprintf("h%d", i), "s1", 30, fmt.Sprintf("A%d", 1+i%20))), 1)
		}
	})
}

// Maps served from one cache entry share their seats; gRPC and the HTTP
// gateway marshal them concurrently (run with -race).
func TestSharedSeatsMarshalConcurrently(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:20:std,B:20:std", "std:1000:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdHold("fan", "h1", "s1", 60_000, "A1", "A2")), 1)
	var maps []*ledgerpb.SeatMap
	for range 4 {
		v := m.ReadView()
		sm, err := v.SeatMap("s1")
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		maps = append(maps, sm)
	}
	if maps[0].Seats[0] != maps[3].Seats[0] {
		t.Fatal("two reads of unchanged states do not share their seats")
	}
	var wg sync.WaitGroup
	for i, sm := range maps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sm.ServedBy = fmt.Sprintf("n%d", i)
			for range 50 {
				b, err := proto.Marshal(sm)
				if err != nil {
					t.Error(err)
					return
				}
				if _, err := protojson.Marshal(sm); err != nil {
					t.Error(err)
					return
				}
				var back ledgerpb.SeatMap
				if err := proto.Unmarshal(b, &back); err != nil || back.Seats[0].State != ledgerpb.SeatState_HELD || back.Seats[2].State != ledgerpb.SeatState_FREE {
					t.Errorf("round trip: %v, %v", back.Seats[:3], err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
