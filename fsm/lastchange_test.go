// This file proves View.ShowLastChange: over random entries (holds,
// confirms, releases, expiries, batches, clock jumps past the retention
// horizon) it is the newest record SeatEvents returns from the floor on,
// 0 when there is none, and never below the floor; a replica restored from
// a snapshot answers alike at the same index.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// checkLastChange compares ShowLastChange with the change log's records.
func checkLastChange(t *testing.T, m *Machine, shows []string) map[string]uint64 {
	t.Helper()
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	floor, err := v.EventFloor()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, show := range shows {
		evs, err := allEvents(v, show, floor)
		if err != nil {
			t.Fatalf("SeatEvents(%s, after floor %d): %v", show, floor, err)
		}
		want := uint64(0)
		if len(evs) > 0 {
			want = evs[len(evs)-1].Revision
		}
		last, err := v.ShowLastChange(show)
		if err != nil || last != want {
			t.Fatalf("ShowLastChange(%s) at %d (floor %d) = %d, %v; want %d, the newest record", show, v.Applied(), floor, last, err, want)
		}
		if last != 0 && last <= floor {
			t.Fatalf("ShowLastChange(%s) = %d, at or below the floor %d", show, last, floor)
		}
		got[show] = last
	}
	return got
}

func TestShowLastChangeIsTheNewestRecord(t *testing.T) {
	seed := testSeed(t)
	shows := []string{"s1", "s2", "nope"}
	for run := range 4 {
		m := newTestMachine(t, newTestDB(t), 9)
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, 700+uint64(run)))})
		for range 300 {
			index, cmd := g.entry()
			res, err := applyRecover(m, index, cmd)
			if err != nil {
				t.Fatalf("run %d: %s: %v", run, opName(cmd), err)
			}
			g.observe(cmd, res)
			checkLastChange(t, m, shows)
		}
		dst := newTestMachine(t, newTestDB(t), 9)
		if err := dst.Restore(bytes.NewReader(snapshotBytes(t, m))); err != nil {
			t.Fatalf("run %d: Restore: %v", run, err)
		}
		if a, b := checkLastChange(t, m, shows), checkLastChange(t, dst, shows); len(a) != len(b) || a["s1"] != b["s1"] || a["s2"] != b["s2"] {
			t.Errorf("run %d: ShowLastChange on the source %v, on the restored replica %v", run, a, b)
		}
	}
}

func TestShowLastChange(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	last := func(show string) uint64 {
		t.Helper()
		v, err := m.View()
		if err != nil {
			t.Fatal(err)
		}
		defer v.Close()
		rev, err := v.ShowLastChange(show)
		if err != nil {
			t.Fatalf("ShowLastChange(%s): %v", show, err)
		}
		return rev
	}
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdShow("admin", "r2", testShow("s2", "A:4:std", "std:100:EUR"))), 1)
	if got := last("s1"); got != 0 {
		t.Errorf("ShowLastChange(s1) before any hold = %d, want 0 (a show's creation changes no seat)", got)
	}
	mustApply(t, m, 3, at(1000, cmdHold("c1", "r1", "s1", 0, "A1")), 1)
	mustApply(t, m, 4, at(eventBucketMs+2000, cmdHold("c1", "r2", "s2", 0, "A1")), 1) // the next bucket
	mustApply(t, m, 5, at(eventBucketMs+3000, cmdHold("c1", "r3", "s2", 0, "A2")), 1)
	if got := last("s1"); got != 3 {
		t.Errorf("ShowLastChange(s1) = %d, want 3: its last change, a bucket before the newest", got)
	}
	if got := last("s2"); got != 5 {
		t.Errorf("ShowLastChange(s2) = %d, want 5", got)
	}
	// Past the retention the records go, and the holds expire: s1's
	// expiry is its last change now, s2's holds expire in the same entry.
	mustApply(t, m, 6, at(2*eventBucketMs+EventRetentionMs, cmdExpire(2*eventBucketMs+EventRetentionMs, 100)), 1)
	if got := last("s1"); got != 6 {
		t.Errorf("ShowLastChange(s1) after the expiry = %d, want 6", got)
	}
	mustApply(t, m, 7, at(4*eventBucketMs+2*EventRetentionMs, cmdExpire(0, 1)), 1)
	if got := last("s1"); got != 0 {
		t.Errorf("ShowLastChange(s1) once every record was pruned = %d, want 0", got)
	}
}
