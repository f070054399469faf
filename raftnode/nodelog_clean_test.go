// This file proves the node log's cleaner (nodelog_clean.go): a floor
// moved past compacted commits deletes the keys below it and a start reads
// the same logs from it; a crash between the floor record and its deletes
// leaves keys that the start never reads and its first sweep deletes; an
// idle group's entries are copied forward so the floor passes its old
// commits, and read the same, after a start too. The model test
// (nodelog_test.go) runs the cleaner under random steps and crashes.
package raftnode

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// smallCleaner shrinks the cleaner's steps for the node logs the test
// opens, so that a few hundred keys exercise it.
func smallCleaner(t *testing.T) {
	old := nodeLogCleaner
	nodeLogCleaner = cleanerTuning{minStep: 16, deleteChunk: 8, copyAfter: 64, copyChunk: 4}
	t.Cleanup(func() { nodeLogCleaner = old })
}

// tidyUp has the writer finish the cleaner's pending work; the writer is
// idle when it returns, so the test may read its state.
func tidyUp(t *testing.T, nl *nodeLog) {
	t.Helper()
	if err := nl.submit(&logReq{tidy: true}); err != nil {
		t.Fatal(err)
	}
}

// loadWithoutWriter reads the node log at path as a start does, and
// starts no writer: the test drives it by hand and closes its store.
func loadWithoutWriter(t *testing.T, path string) *nodeLog {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := loadNodeLog(store, path, nil)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	return loaded
}

// storedKeys counts the keys in [lo, hi) that hold something.
func storedKeys(t *testing.T, nl *nodeLog, lo, hi uint64) int {
	t.Helper()
	n := 0
	var l raft.Log
	for k := lo; k < hi; k++ {
		err := nl.store.GetLog(k, &l)
		if err == nil {
			n++
		} else if !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatal(err)
		}
	}
	return n
}

// checkFloor asserts that the floor is the oldest commit with a live
// entry, and that nothing lies below it.
func checkFloor(t *testing.T, nl *nodeLog) {
	t.Helper()
	low, _, _, _, err := nl.scan()
	if err != nil {
		t.Fatal(err)
	}
	if low-nl.floor >= nl.tune.minStep {
		t.Fatalf("the floor is %#x, the oldest live commit %#x", nl.floor, low)
	}
	if low < nl.floor {
		t.Fatalf("the floor %#x lies past the live commit %#x", nl.floor, low)
	}
	if n := storedKeys(t, nl, seqBase, nl.floor); n > 0 {
		t.Fatalf("%d keys below the floor %#x", n, nl.floor)
	}
}

// After compactions of every group the floor moves past their old
// commits, the keys below it go, and a start reads the same logs.
func TestNodeLogCleanDeletesBelowTheFloor(t *testing.T) {
	smallCleaner(t)
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	ids := []uint32{1, 2, 3}
	for first := uint64(1); first <= 40; first += 5 {
		for _, id := range ids {
			storeLogs(t, openTestGroup(t, nl, id), first, first+4)
		}
	}
	tidyUp(t, nl)
	if nl.floor != seqBase || nl.floorMoves != 0 {
		t.Fatalf("the floor moved to %#x before any compaction", nl.floor)
	}
	for _, id := range ids {
		deleteRange(t, openTestGroup(t, nl, id), 1, 35)
	}
	tidyUp(t, nl)
	if nl.floorMoves == 0 || nl.floor <= seqBase {
		t.Fatal("the floor did not move")
	}
	checkFloor(t, nl)
	floor := nl.floor
	nl, g := reopen(t, nl, 1)
	defer func() { nl.close() }()
	if nl.floor != floor {
		t.Fatalf("the floor is %#x after a start, was %#x", nl.floor, floor)
	}
	checkRange(t, g, 36, 40)
	for _, id := range ids[1:] {
		checkRange(t, openTestGroup(t, nl, id), 36, 40)
	}
	// Everything goes: the floor may name next.
	for _, id := range ids {
		deleteRange(t, openTestGroup(t, nl, id), 1, 40)
	}
	tidyUp(t, nl)
	if nl.floor != nl.next {
		t.Fatalf("with no live entry the floor is %#x, next %#x", nl.floor, nl.next)
	}
	checkFloor(t, nl)
	nl, g = reopen(t, nl, 1)
	checkRange(t, g, 0, 0)
	storeLogs(t, g, 41, 42)
	nl, g = reopen(t, nl, 1)
	checkRange(t, g, 41, 42)
}

// A crash after the floor record and before its deletes: the start walks
// from the floor, never reading the keys below it, and its sweep deletes
// them.
func TestNodeLogCrashBetweenTheFloorAndItsDeletes(t *testing.T) {
	smallCleaner(t)
	nodeLogCleaner.minStep = 1 << 40 // the writer never moves the floor
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	a, b := openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
	for first := uint64(1); first <= 30; first += 3 {
		storeLogs(t, a, first, first+2)
		storeLogs(t, b, first, first+2)
	}
	deleteRange(t, a, 1, 20)
	deleteRange(t, b, 1, 25)
	tidyUp(t, nl)
	low, _, _, _, err := nl.scan()
	if err != nil {
		t.Fatal(err)
	}
	if low <= seqBase || nl.floor != seqBase {
		t.Fatalf("the oldest live commit %#x, the floor %#x", low, nl.floor)
	}
	// What the cleaner writes first, alone.
	if err := nl.store.StoreLogs([]*raft.Log{floorRecord(low)}); err != nil {
		t.Fatal(err)
	}
	nl.close()
	// The start alone (no writer): it walks from the floor.
	loaded := loadWithoutWriter(t, nl.path)
	if loaded.floor != low || !loaded.sweepAll {
		t.Fatalf("a start finds the floor %#x (sweep all: %v), want %#x", loaded.floor, loaded.sweepAll, low)
	}
	if n := storedKeys(t, loaded, seqBase, low); n == 0 {
		t.Fatal("no keys below the floor: the crash was not played")
	}
	for id, first := range map[uint32]uint64{1: 21, 2: 26} {
		checkRange(t, openTestGroup(t, loaded, id), first, 30)
	}
	loaded.store.Close()
	nodeLogCleaner.minStep = 16
	nl = openTestLog(t, nl.path)
	defer func() { nl.close() }()
	a, b = openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
	tidyUp(t, nl)
	checkFloor(t, nl)
	checkRange(t, a, 21, 30)
	checkRange(t, b, 26, 30)
	// A group not opened after the start pins the floor as its bounds say.
	storeLogs(t, a, 31, 31)
	nl, a = reopen(t, nl, 1)
	deleteRange(t, a, 1, 30)
	tidyUp(t, nl)
	checkFloor(t, nl)
	nl, b = reopen(t, nl, 2)
	checkRange(t, b, 26, 30)
	checkRange(t, openTestGroup(t, nl, 1), 31, 31)
}

// An idle group keeps old entries while a busy one appends and compacts:
// the idle group's entries are copied forward, the floor passes its old
// commits, and its log reads the same, entry by entry, after a start too.
func TestNodeLogCopiesAnIdleGroupForward(t *testing.T) {
	smallCleaner(t)
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
	idle, busy := openTestGroup(t, nl, 7), openTestGroup(t, nl, 8)
	for first := uint64(1); first <= 30; first += 3 {
		storeLogs(t, idle, first, first+2)
	}
	oldest := seqBase
	want := make([]raft.Log, 31)
	for i := uint64(1); i <= 30; i++ {
		if err := idle.GetLog(i, &want[i]); err != nil {
			t.Fatal(err)
		}
	}
	same := func() {
		t.Helper()
		checkRange(t, idle, 1, 30)
		var l raft.Log
		for i := uint64(1); i <= 30; i++ {
			if err := idle.GetLog(i, &l); err != nil {
				t.Fatal(err)
			}
			if l.Index != want[i].Index || l.Term != want[i].Term || l.Type != want[i].Type || string(l.Data) != string(want[i].Data) {
				t.Fatalf("entry %d reads %+v, was %+v", i, l, want[i])
			}
		}
	}
	busyLast := uint64(0)
	appendBusy := func(rounds int) {
		for range rounds {
			storeLogs(t, busy, busyLast+1, busyLast+6)
			busyLast += 6
			if busyLast > 12 {
				deleteRange(t, busy, 1, busyLast-12)
			}
		}
	}
	appendBusy(60)
	tidyUp(t, nl)
	if nl.copied == 0 {
		t.Fatal("nothing was copied")
	}
	if nl.floor <= oldest+30 {
		t.Fatalf("the floor %#x did not pass the idle group's commits", nl.floor)
	}
	checkFloor(t, nl)
	same()
	checkRange(t, busy, busyLast-11, busyLast)
	nl, idle = reopen(t, nl, 7)
	busy = openTestGroup(t, nl, 8)
	same()
	checkRange(t, busy, busyLast-11, busyLast)
	// Copies of copies, and a group not opened when they start.
	floor := nl.floor
	nl, busy = reopen(t, nl, 8)
	appendBusy(60)
	tidyUp(t, nl)
	if nl.floor <= floor+30 || nl.copied == 0 {
		t.Fatalf("the floor %#x did not pass %#x with the unopened idle group (%d copied)", nl.floor, floor, nl.copied)
	}
	checkFloor(t, nl)
	idle = openTestGroup(t, nl, 7)
	same()
	nl, idle = reopen(t, nl, 7)
	same()
	// The idle group's appends and compactions go on as before.
	storeLogs(t, idle, 31, 33)
	deleteRange(t, idle, 1, 10)
	nl, idle = reopen(t, nl, 7)
	checkRange(t, idle, 11, 33)
}

// An idle group's few entries pin the floor: they are copied forward as
// soon as that frees minStep keys and pinnedShare times what it copies,
// long before the floor lies copyAfter keys behind (here never), and read
// the same.
func TestNodeLogCopiesThePinningGroupEarly(t *testing.T) {
	old := nodeLogCleaner
	nodeLogCleaner = cleanerTuning{minStep: 16, deleteChunk: 8, copyAfter: 1 << 40, copyChunk: 4}
	t.Cleanup(func() { nodeLogCleaner = old })
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
	idle, busy := openTestGroup(t, nl, 7), openTestGroup(t, nl, 8)
	storeLogs(t, idle, 1, 3)
	busyLast := uint64(0)
	for range 40 {
		storeLogs(t, busy, busyLast+1, busyLast+2)
		busyLast += 2
		if busyLast > 6 {
			deleteRange(t, busy, 1, busyLast-6)
		}
		tidyUp(t, nl)
		if pinnedShare*nl.copied > nl.floor-seqBase {
			t.Fatalf("%d entries copied to move the floor %d keys", nl.copied, nl.floor-seqBase)
		}
	}
	if nl.copied == 0 || nl.floorMoves == 0 {
		t.Fatalf("%d entries copied, %d floor moves", nl.copied, nl.floorMoves)
	}
	// The floor trails next by at most what a copy of the idle group's 3
	// entries must free, the busy group's live commits and a minStep.
	low, _, _, _, err := nl.scan()
	if err != nil {
		t.Fatal(err)
	}
	if nl.next-nl.floor > pinnedShare*3+16+16 || low-nl.floor >= 16 {
		t.Fatalf("the floor %#x, the oldest live commit %#x, next %#x", nl.floor, low, nl.next)
	}
	checkFloor(t, nl)
	checkRange(t, idle, 1, 3)
	checkRange(t, busy, busyLast-5, busyLast)
	nl, idle = reopen(t, nl, 7)
	checkRange(t, idle, 1, 3)
	checkRange(t, openTestGroup(t, nl, 8), busyLast-5, busyLast)
}

// A copy span replaces exactly its range: a start replays it so, and a
// conflict's append after it truncates the copied entries.
func TestNodeLogCopySpanReplay(t *testing.T) {
	smallCleaner(t)
	nodeLogCleaner.copyAfter = 1 << 40 // the test copies by hand
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	storeLogs(t, openTestGroup(t, nl, 4), 1, 10)
	nl.close()
	// One copy step, by hand, with no writer: entries 1..4.
	loaded := loadWithoutWriter(t, nl.path)
	loaded.copyBelow = loaded.next
	if err := loaded.copyStep(); err != nil {
		t.Fatal(err)
	}
	if loaded.copied != 4 {
		t.Fatalf("copied %d entries, want 4", loaded.copied)
	}
	loaded.store.Close()
	nl = openTestLog(t, nl.path)
	defer func() { nl.close() }()
	g := openTestGroup(t, nl, 4)
	checkRange(t, g, 1, 10)
	if l, _ := g.locOf(1); l.key < seqBase+11 {
		t.Fatalf("entry 1 at %#x: not the copy", l.key)
	}
	if l, _ := g.locOf(5); l.key != seqBase+5 {
		t.Fatalf("entry 5 at %#x, want the original %#x", l.key, seqBase+5)
	}
	deleteRange(t, g, 3, 10)
	storeGen(t, g, 3, 4, 1)
	nl, g = reopen(t, nl, 4)
	checkGens(t, g, 1, 4, func(i uint64) int {
		if i >= 3 {
			return 1
		}
		return 0
	})
}

// A group not opened since the start pins the floor only with what its
// bounds record leaves live: a reset voids its old commits, a floor the
// entries below it; what it pins is copied forward.
func TestNodeLogUnopenedGroupPinsAsItsBoundsSay(t *testing.T) {
	smallCleaner(t)
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
	gone, cut := openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
	var busy *groupLog
	storeLogs(t, gone, 1, 10)
	storeLogs(t, cut, 1, 10)
	storeLogs(t, cut, 11, 12)
	deleteRange(t, gone, 1, 10) // a reset
	deleteRange(t, cut, 1, 10)  // a floor: 11..12 stay, in a later commit
	keep := nl.next - 3         // the commit of cut's 11..12
	nl, busy = reopen(t, nl, 3)
	for first := uint64(1); first <= 40; first += 5 {
		storeLogs(t, busy, first, first+4)
	}
	deleteRange(t, busy, 1, 40)
	tidyUp(t, nl)
	// cut's two entries alone pin the floor, and are copied forward: the
	// floor passes their commit.
	if nl.copied != 2 || nl.floor <= keep {
		t.Fatalf("the floor is %#x after %d entries copied, want cut's 2 entries copied and the floor past their commit %#x", nl.floor, nl.copied, keep)
	}
	checkFloor(t, nl)
	checkRange(t, openTestGroup(t, nl, 1), 0, 0)
	checkRange(t, openTestGroup(t, nl, 2), 11, 12)
}

// A copy step takes a busy group's entries across the commits that hold
// them one or two at a time, up to copyChunk entries in one commit, and
// stops where the runs stop continuing its range below copyBelow.
func TestNodeLogCopiesAcrossCommits(t *testing.T) {
	smallCleaner(t)
	nodeLogCleaner.copyAfter = 1 << 40 // the test copies by hand
	nodeLogCleaner.copyChunk = 5
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	a, b := openTestGroup(t, nl, 4), openTestGroup(t, nl, 5)
	for i := uint64(1); i <= 8; i++ {
		storeLogs(t, a, i, i) // a commit each, between b's
		storeLogs(t, b, 2*i-1, 2*i)
	}
	nl.close()
	loaded := loadWithoutWriter(t, nl.path)
	loaded.copyBelow = loaded.next
	next := loaded.next
	if err := loaded.copyStep(); err != nil {
		t.Fatal(err)
	}
	// The oldest commit is a's entry 1: a's entries 1..5, from five
	// commits, in one.
	if loaded.copied != 5 || loaded.next != next+1+5 {
		t.Fatalf("copied %d entries in %d keys, want 5 in 6", loaded.copied, loaded.next-next)
	}
	ga, err := loaded.group(4)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 8; i++ {
		l, _ := ga.locOf(i)
		if copied := l.rec == next; copied != (i <= 5) {
			t.Fatalf("entry %d in the commit at %#x (the copy's: %#x)", i, l.rec, next)
		}
	}
	// The next step copies the rest of a's (6..8: its runs end), the one
	// after b's oldest, 1..5 of its 1..2, 3..4 and 5..6, a run cut.
	loaded.copyBelow = next
	for _, want := range []uint64{8, 13} {
		if err := loaded.copyStep(); err != nil {
			t.Fatal(err)
		}
		if loaded.copied != want {
			t.Fatalf("copied %d entries, want %d", loaded.copied, want)
		}
	}
	gb, err := loaded.group(5)
	if err != nil {
		t.Fatal(err)
	}
	for i := uint64(1); i <= 16; i++ {
		l, _ := gb.locOf(i)
		if copied := l.rec >= next; copied != (i <= 5) {
			t.Fatalf("b's entry %d in the commit at %#x (the copies' from %#x)", i, l.rec, next)
		}
	}
	loaded.store.Close()
	nl = openTestLog(t, nl.path)
	defer func() { nl.close() }()
	checkRange(t, openTestGroup(t, nl, 4), 1, 8)
	checkRange(t, openTestGroup(t, nl, 5), 1, 16)
}
