// This file proves the node log (nodelog.go) keeps each group's raft log
// as a store of its own would: entries, first and last index, removals of
// a prefix, a suffix or everything; across a restart, including one that
// interrupted a removal, one after appends that left the bounds record
// behind the last index (found from the entries), and one after a removal
// and appends past it (whose range the record no longer names); that
// bounds naming missing entries are refused; with many groups appending at
// once (and sharing commits, lingering for more only while the log is
// busy, a removal never overtaken); and that a group's log tells when its
// append in progress ends (the proposer waits for it).
package raftnode

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func openTestLog(t *testing.T, path string) *nodeLog {
	t.Helper()
	nl, err := openNodeLog(path)
	if err != nil {
		t.Fatal(err)
	}
	return nl
}

func openTestGroup(t *testing.T, nl *nodeLog, id uint32) *groupLog {
	t.Helper()
	g, err := nl.group(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func entries(group uint32, first, last uint64) []*raft.Log {
	var out []*raft.Log
	for i := first; i <= last; i++ {
		out = append(out, &raft.Log{Index: i, Term: 1 + i/10, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("g%d-e%d", group, i))})
	}
	return out
}

// checkRange asserts g holds exactly [first, last] (0, 0: nothing) with
// the data entries() gives, and nothing around it.
func checkRange(t *testing.T, g *groupLog, first, last uint64) {
	t.Helper()
	if f, _ := g.FirstIndex(); f != first {
		t.Fatalf("group %d FirstIndex = %d, want %d", g.id, f, first)
	}
	if l, _ := g.LastIndex(); l != last {
		t.Fatalf("group %d LastIndex = %d, want %d", g.id, l, last)
	}
	var l raft.Log
	for i := first; i <= last && last > 0; i++ {
		if err := g.GetLog(i, &l); err != nil {
			t.Fatalf("group %d GetLog(%d): %v", g.id, i, err)
		}
		if want := fmt.Sprintf("g%d-e%d", g.id, i); l.Index != i || string(l.Data) != want || l.Term != 1+i/10 {
			t.Fatalf("group %d GetLog(%d) = index %d term %d %q, want %q", g.id, i, l.Index, l.Term, l.Data, want)
		}
	}
	if last == 0 {
		for _, i := range []uint64{0, 1, 2} {
			if err := g.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
				t.Fatalf("empty group %d GetLog(%d) = %v, want ErrLogNotFound", g.id, i, err)
			}
		}
		return
	}
	for _, i := range []uint64{first - 1, last + 1} {
		if err := g.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("group %d GetLog(%d) outside [%d, %d] = %v, want ErrLogNotFound", g.id, i, first, last, err)
		}
		// The store itself holds nothing of the group there.
		if err := g.nl.store.GetLog(g.key(i), &l); i > 0 && !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("group %d: the store still holds index %d outside [%d, %d] (%v)", g.id, i, first, last, err)
		}
	}
}

func TestNodeLogKeepsGroupsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	a, b, c := openTestGroup(t, nl, 0), openTestGroup(t, nl, 1), openTestGroup(t, nl, 1023)
	checkRange(t, a, 0, 0)
	for _, g := range []*groupLog{a, b, c} {
		if err := g.StoreLogs(entries(g.id, 1, 30)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.StoreLog(entries(1, 31, 31)[0]); err != nil {
		t.Fatal(err)
	}
	checkRange(t, a, 1, 30)
	checkRange(t, b, 1, 31)
	checkRange(t, c, 1, 30)

	// Compaction removes a prefix; a follower's conflict a suffix.
	if err := a.DeleteRange(1, 10); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteRange(21, 31); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteRange(1, 30); err != nil {
		t.Fatal(err)
	}
	checkRange(t, a, 11, 30)
	checkRange(t, b, 1, 20)
	checkRange(t, c, 0, 0)
	// After a snapshot install the log starts anywhere.
	if err := c.StoreLogs(entries(1023, 500, 505)); err != nil {
		t.Fatal(err)
	}
	checkRange(t, c, 500, 505)
	if err := nl.close(); err != nil {
		t.Fatal(err)
	}

	nl = openTestLog(t, path)
	defer nl.close()
	a, b, c = openTestGroup(t, nl, 0), openTestGroup(t, nl, 1), openTestGroup(t, nl, 1023)
	checkRange(t, a, 11, 30)
	checkRange(t, b, 1, 20)
	checkRange(t, c, 500, 505)
	if err := nl.wipe(1); err != nil {
		t.Fatal(err)
	}
	b = openTestGroup(t, nl, 1)
	checkRange(t, b, 0, 0)
	checkRange(t, a, 11, 30)
}

// A crash after a removal wrote the new bounds but before it deleted the
// entries leaves them in the store; the next start deletes them.
func TestNodeLogFinishesAnInterruptedRemoval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	g := openTestGroup(t, nl, 3)
	if err := g.StoreLogs(entries(3, 1, 50)); err != nil {
		t.Fatal(err)
	}
	// The first half of remove(1, 20) only: the bounds, not the delete.
	b := logBounds{first: 21, last: 50, delFirst: 1, delLast: 20}
	if err := nl.store.StoreLogs([]*raft.Log{g.boundsLog(b)}); err != nil {
		t.Fatal(err)
	}
	nl.close()

	nl = openTestLog(t, path)
	defer nl.close()
	g = openTestGroup(t, nl, 3)
	checkRange(t, g, 21, 50)
	var l raft.Log
	for i := uint64(1); i <= 20; i++ {
		if err := nl.store.GetLog(g.key(i), &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("entry %d of the interrupted removal is still stored (%v)", i, err)
		}
	}
}

func TestNodeLogRefusesDamagedBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	g := openTestGroup(t, nl, 2)
	if err := g.StoreLogs(entries(2, 1, 5)); err != nil {
		t.Fatal(err)
	}
	data := logBounds{first: 1, last: 5}.encode()
	data[3] ^= 0x10
	if err := nl.store.StoreLogs([]*raft.Log{{Index: g.key(boundsIndex), Data: data}}); err != nil {
		t.Fatal(err)
	}
	if _, err := nl.group(2); !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("opening a group with damaged bounds: %v, want ErrCorruptLog", err)
	}
	if err := g.StoreLogs([]*raft.Log{{Index: logIndexMax + 1}}); err == nil {
		t.Fatal("an index beyond the group's key space was stored")
	}
	nl.close()
}

// storeLogs appends entries(g.id, first, last) to g.
func storeLogs(t *testing.T, g *groupLog, first, last uint64) {
	t.Helper()
	if err := g.StoreLogs(entries(g.id, first, last)); err != nil {
		t.Fatalf("group %d StoreLogs(%d..%d): %v", g.id, first, last, err)
	}
}

// checkRecord asserts the bounds record g's store holds.
func checkRecord(t *testing.T, g *groupLog, want logBounds) {
	t.Helper()
	got, err := g.readBounds()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("group %d bounds record = %+v, want %+v", g.id, got, want)
	}
}

// reopen closes nl and opens it again with group id.
func reopen(t *testing.T, nl *nodeLog, id uint32) (*nodeLog, *groupLog) {
	t.Helper()
	if err := nl.close(); err != nil {
		t.Fatal(err)
	}
	nl = openTestLog(t, nl.path)
	return nl, openTestGroup(t, nl, id)
}

// Appends that only extend a group's log leave its bounds record as it
// was; a start finds the last index from the entries themselves.
func TestNodeLogAppendsLeaveTheBoundsRecord(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 4)
	storeLogs(t, g, 1, 10) // the group's first entries: recorded
	checkRecord(t, g, logBounds{first: 1, last: 10})
	storeLogs(t, g, 11, 20)
	storeLogs(t, g, 21, 21)
	storeLogs(t, g, 22, 40)
	checkRecord(t, g, logBounds{first: 1, last: 10})
	checkRange(t, g, 1, 40)

	nl, g = reopen(t, nl, 4)
	checkRange(t, g, 1, 40)
	storeLogs(t, g, 41, 45)
	checkRecord(t, g, logBounds{first: 1, last: 10})
	nl, g = reopen(t, nl, 4)
	defer nl.close()
	checkRange(t, g, 1, 45)
}

// A start finds the last index however many entries follow the recorded
// last (the search doubles, then halves).
func TestNodeLogFindsTheLastIndex(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
	for i, n := range []uint64{0, 1, 2, 3, 7, 8, 9, 100, 1000, 1025} {
		id := uint32(10 + i)
		g := openTestGroup(t, nl, id)
		storeLogs(t, g, 1, 5)
		if n > 0 {
			storeLogs(t, g, 6, 5+n)
		}
		nl, g = reopen(t, nl, id)
		if l, _ := g.LastIndex(); l != 5+n {
			t.Fatalf("%d entries past the recorded last 5: LastIndex = %d, want %d", n, l, 5+n)
		}
	}
}

// Raft truncates a follower's tail on a conflict and appends anew after
// it; compaction removes a prefix. Each is recorded, and the next append
// clears the removal's range from the record: were it left, the next
// start would delete the entries appended since.
func TestNodeLogReopensAfterRemovals(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 5)
	storeLogs(t, g, 1, 30)
	storeLogs(t, g, 31, 50)
	if err := g.DeleteRange(41, 50); err != nil {
		t.Fatal(err)
	}
	checkRecord(t, g, logBounds{first: 1, last: 40, delFirst: 41, delLast: 50})
	nl, g = reopen(t, nl, 5)
	checkRange(t, g, 1, 40)

	storeLogs(t, g, 41, 45)
	checkRecord(t, g, logBounds{first: 1, last: 45})
	nl, g = reopen(t, nl, 5)
	checkRange(t, g, 1, 45)

	// Compaction, then appends past it.
	storeLogs(t, g, 46, 60)
	if err := g.DeleteRange(1, 20); err != nil {
		t.Fatal(err)
	}
	checkRecord(t, g, logBounds{first: 21, last: 60, delFirst: 1, delLast: 20})
	storeLogs(t, g, 61, 70)
	storeLogs(t, g, 71, 80)
	checkRecord(t, g, logBounds{first: 21, last: 70})
	nl, g = reopen(t, nl, 5)
	checkRange(t, g, 21, 80)

	// A truncation right after a reopen, and an append right after it.
	if err := g.DeleteRange(75, 80); err != nil {
		t.Fatal(err)
	}
	storeLogs(t, g, 75, 76)
	nl, g = reopen(t, nl, 5)
	defer nl.close()
	checkRange(t, g, 21, 76)
}

// A crash inside a removal, after it wrote the bounds and before it
// deleted: the next start deletes the range before it looks for the last
// index, which the leftover tail would otherwise extend.
func TestNodeLogSurvivesACrashInsideARemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		crash  logBounds // the bounds remove wrote before the crash
		first  uint64
		last   uint64
		stored uint64 // entries 1..stored are in the store at the crash
	}{
		{"tail", logBounds{first: 1, last: 40, delFirst: 41, delLast: 50}, 1, 40, 50},
		{"tail to the end of the key space", logBounds{first: 1, last: 40, delFirst: 41, delLast: logIndexMax}, 1, 40, 50},
		{"prefix", logBounds{first: 21, last: 50, delFirst: 1, delLast: 20}, 21, 50, 50},
		{"everything", logBounds{delFirst: 1, delLast: logIndexMax}, 0, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
			g := openTestGroup(t, nl, 6)
			storeLogs(t, g, 1, 10)
			storeLogs(t, g, 11, tc.stored) // past the recorded last 10
			if err := nl.store.StoreLogs([]*raft.Log{g.boundsLog(tc.crash)}); err != nil {
				t.Fatal(err)
			}
			nl, g = reopen(t, nl, 6)
			defer func() { nl.close() }()
			checkRange(t, g, tc.first, tc.last)
			var l raft.Log
			for i := tc.last + 1; i <= tc.stored; i++ {
				if err := nl.store.GetLog(g.key(i), &l); !errors.Is(err, raft.ErrLogNotFound) {
					t.Fatalf("entry %d of the interrupted removal is still stored (%v)", i, err)
				}
			}
			// The group appends on as usual, and keeps it across a start.
			storeLogs(t, g, tc.last+1, tc.last+5)
			if tc.first == 0 {
				tc.first = 1
			}
			nl, g = reopen(t, nl, 6)
			checkRange(t, g, tc.first, tc.last+5)
		})
	}
}

// A bounds record naming entries the store lacks is a damaged log, not a
// shorter one.
func TestNodeLogRefusesBoundsBeyondItsEntries(t *testing.T) {
	for _, missing := range []uint64{1, 10} {
		nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
		g := openTestGroup(t, nl, 7)
		storeLogs(t, g, 1, 10)
		if err := nl.store.DeleteRange(g.key(missing), g.key(missing)); err != nil {
			t.Fatal(err)
		}
		if _, err := nl.group(7); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("bounds [1, 10] without entry %d: group = %v, want ErrCorruptLog", missing, err)
		}
		nl.close()
	}
}

// Groups appending at once share commits, and each reads back exactly its
// own entries.
func TestNodeLogConcurrentGroupsShareCommits(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer nl.close()
	var commits, appends atomic.Int64
	nl.observe = func(n int) { commits.Add(1); appends.Add(int64(n)) }
	const groups, rounds, per = 8, 40, 5
	gs := make([]*groupLog, groups)
	for i := range gs {
		gs[i] = openTestGroup(t, nl, uint32(i))
	}
	var wg sync.WaitGroup
	errs := make(chan error, groups)
	for _, g := range gs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g.id), 1))
			next := uint64(1)
			for r := 0; r < rounds; r++ {
				n := uint64(1 + rng.IntN(per))
				if err := g.StoreLogs(entries(g.id, next, next+n-1)); err != nil {
					errs <- err
					return
				}
				next += n
				if r == rounds/2 {
					if err := g.DeleteRange(1, next/2); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, g := range gs {
		first, last := g.bounds()
		if first < 2 || last < rounds {
			t.Fatalf("group %d holds [%d, %d]", g.id, first, last)
		}
		checkRange(t, g, first, last)
	}
	if appends.Load() != groups*rounds {
		t.Fatalf("%d appends observed, want %d", appends.Load(), groups*rounds)
	}
	t.Logf("%d appends in %d commits", appends.Load(), commits.Load())
}

// The writer lingers for more appends only when the log is busy: the
// previous commit carried several appends and ended moments ago.
func TestNodeLogLingersOnlyWhenBusy(t *testing.T) {
	for _, c := range []struct {
		n, last int
		since   time.Duration
		want    bool
	}{
		{1, 3, time.Millisecond, true},
		{nodeLogLingerAppends - 1, 2, 0, true},
		{nodeLogLingerAppends, 3, 0, false},     // full already
		{1, 1, time.Millisecond, false},         // a few clients: one append a commit
		{1, 0, 0, false},                        // the first commit
		{2, 3, nodeLogBusyGap, false},           // quiet: the last commit is old
		{2, 3, time.Hour, false},                //
		{nodeLogLingerAppends + 5, 3, 0, false}, // past full
		{1, nodeLogLingerAppends, time.Microsecond, true},
	} {
		if got := lingerWorthIt(c.n, c.last, c.since); got != c.want {
			t.Errorf("lingerWorthIt(%d, %d, %v) = %v, want %v", c.n, c.last, c.since, got, c.want)
		}
	}
}

// While lingering, the writer takes appends until the batch is full and
// stops at a removal, which runs after the batch as it would have without
// the linger; with nothing arriving it gives up after nodeLogLinger.
func TestNodeLogLingerKeepsRemovalsInOrder(t *testing.T) {
	nl := &nodeLog{reqs: make(chan *logReq, 64), stop: make(chan struct{})}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	a := func() *logReq { return &logReq{} }

	batch := []*logReq{a()}
	del := &logReq{del: true}
	nl.reqs <- a()
	nl.reqs <- del
	nl.reqs <- a()
	if next := nl.linger(timer, &batch); next != del || len(batch) != 2 {
		t.Fatalf("linger before a removal = %p with %d appends, want the removal %p with 2", next, len(batch), del)
	}
	if len(nl.reqs) != 1 {
		t.Fatalf("%d requests left queued, want the append behind the removal", len(nl.reqs))
	}
	<-nl.reqs

	batch = batch[:1]
	for range nodeLogLingerAppends + 2 {
		nl.reqs <- a()
	}
	if next := nl.linger(timer, &batch); next != nil || len(batch) != nodeLogLingerAppends {
		t.Fatalf("linger on a full queue = %v with %d appends, want nil with %d", next, len(batch), nodeLogLingerAppends)
	}
	if len(nl.reqs) != 3 {
		t.Fatalf("%d requests left queued, want 3 for the next commit", len(nl.reqs))
	}
	for len(nl.reqs) > 0 {
		<-nl.reqs
	}

	batch = batch[:1]
	start := time.Now()
	if next := nl.linger(timer, &batch); next != nil || len(batch) != 1 {
		t.Fatalf("linger on an empty queue = %v with %d appends, want nil with 1", next, len(batch))
	}
	if waited := time.Since(start); waited < nodeLogLinger {
		t.Fatalf("linger gave up after %v, want at least %v", waited, nodeLogLinger)
	}
}

// A group's log tells when an append is in progress and when it ends, for
// the proposer (proposer.go, awaitLogWrite): nil before and after, and a
// channel that closes when the append returns.
func TestNodeLogTellsWhenAnAppendEnds(t *testing.T) {
	nl := &nodeLog{reqs: make(chan *logReq, 1), stop: make(chan struct{}), done: make(chan struct{})}
	g := &groupLog{nl: nl, id: 3, base: 3 << logIndexBits}
	if end := g.appending(); end != nil {
		t.Fatal("appending() before any append is not nil")
	}
	stored := make(chan error, 1)
	go func() { stored <- g.StoreLogs(entries(3, 1, 2)) }()
	r := <-nl.reqs // the writer's part, played here: the append waits for it
	end := g.appending()
	if end == nil {
		t.Fatal("appending() during an append is nil")
	}
	select {
	case <-end:
		t.Fatal("appending() closed before the append ended")
	default:
	}
	r.done <- nil
	<-end
	if err := <-stored; err != nil {
		t.Fatal(err)
	}
	if end := g.appending(); end != nil {
		t.Fatal("appending() after the append is not nil")
	}
}
