// This file proves the node log (nodelog.go) keeps each group's raft log
// as a store of its own would: entries, first and last index, removals of
// a prefix, a suffix or everything; across a restart after appends of many
// groups sharing commits, after each kind of removal (a suffix removal not
// followed by its append comes back, as the design allows; a group whose
// whole log went never sees its old entries again), against a model of
// random steps; that it reads logs written before the key sequence (legacy
// per-group keys: their bounds record, the last index found past it, a
// removal a crash interrupted) alone and mixed with sequence entries; that
// damaged bounds, commit or floor records and legacy bounds naming missing
// entries are refused; that writing lingers for more appends only while
// the log is busy and never overtakes a removal; and that a group's log
// tells when its append in progress ends (the proposer waits for it). The
// cleaner has its own file (nodelog_clean_test.go) and runs in the model
// test.
package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"path/filepath"
	"reflect"
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

// entryData is the data of entry i of group g written in generation gen
// (0: the first time; a conflict's append writes a later one).
func entryData(group uint32, i uint64, gen int) string {
	if gen == 0 {
		return fmt.Sprintf("g%d-e%d", group, i)
	}
	return fmt.Sprintf("g%d-e%d-v%d", group, i, gen)
}

func entryTerm(i uint64, gen int) uint64 { return 1 + i/10 + uint64(gen)*1000 }

func entries(group uint32, first, last uint64) []*raft.Log { return entriesGen(group, first, last, 0) }

func entriesGen(group uint32, first, last uint64, gen int) []*raft.Log {
	var out []*raft.Log
	for i := first; i <= last; i++ {
		out = append(out, &raft.Log{Index: i, Term: entryTerm(i, gen), Type: raft.LogCommand, Data: []byte(entryData(group, i, gen))})
	}
	return out
}

// checkRange asserts g holds exactly [first, last] (0, 0: nothing) with
// the data entries() gives, and nothing around it.
func checkRange(t *testing.T, g *groupLog, first, last uint64) {
	t.Helper()
	checkGens(t, g, first, last, func(uint64) int { return 0 })
}

// checkGens asserts g holds exactly [first, last], entry i of generation
// gen(i).
func checkGens(t *testing.T, g *groupLog, first, last uint64, gen func(i uint64) int) {
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
		if want := entryData(g.id, i, gen(i)); l.Index != i || string(l.Data) != want || l.Term != entryTerm(i, gen(i)) {
			t.Fatalf("group %d GetLog(%d) = index %d term %d %q, want %q", g.id, i, l.Index, l.Term, l.Data, want)
		}
	}
	outside := []uint64{0, 1, 2}
	if last > 0 {
		outside = []uint64{first - 1, last + 1}
	}
	for _, i := range outside {
		if err := g.GetLog(i, &l); !errors.Is(err, raft.ErrLogNotFound) {
			t.Fatalf("group %d GetLog(%d) outside [%d, %d] = %v, want ErrLogNotFound", g.id, i, first, last, err)
		}
	}
}

// storeLogs appends entries(g.id, first, last) to g.
func storeLogs(t *testing.T, g *groupLog, first, last uint64) {
	t.Helper()
	storeGen(t, g, first, last, 0)
}

func storeGen(t *testing.T, g *groupLog, first, last uint64, gen int) {
	t.Helper()
	if err := g.StoreLogs(entriesGen(g.id, first, last, gen)); err != nil {
		t.Fatalf("group %d StoreLogs(%d..%d): %v", g.id, first, last, err)
	}
}

func deleteRange(t *testing.T, g *groupLog, lo, hi uint64) {
	t.Helper()
	if err := g.DeleteRange(lo, hi); err != nil {
		t.Fatalf("group %d DeleteRange(%d, %d): %v", g.id, lo, hi, err)
	}
}

// checkRecord asserts the bounds record g's store holds.
func checkRecord(t *testing.T, g *groupLog, want logBounds) {
	t.Helper()
	got, _, err := g.readBounds()
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

// encodeBoundsV1 is a bounds record as a seatd before the key sequence
// wrote it.
func encodeBoundsV1(b logBounds) []byte {
	buf := make([]byte, boundsBytesV1)
	for i, v := range [...]uint64{b.first, b.last, b.delFirst, b.delLast} {
		binary.BigEndian.PutUint64(buf[8*i:], v)
	}
	binary.BigEndian.PutUint32(buf[32:], crc32.Checksum(buf[:32], castagnoli))
	return buf
}

// writeLegacy writes, as a seatd before the key sequence did, entries
// first..last of group id at its own keys and a bounds record naming
// [first, recorded] (its appends that only extended the log left the
// record behind).
func writeLegacy(t *testing.T, nl *nodeLog, id uint32, first, last, recorded uint64) {
	t.Helper()
	base := uint64(id) << logIndexBits
	logs := entries(id, first, last)
	for _, l := range logs {
		l.Index |= base
	}
	logs = append(logs, &raft.Log{Index: base | boundsIndex, Type: raft.LogNoop, Data: encodeBoundsV1(logBounds{first: first, last: recorded})})
	if err := nl.store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
}

// legacyStored reports whether group id's legacy key of index holds
// something.
func legacyStored(t *testing.T, nl *nodeLog, id uint32, index uint64) bool {
	t.Helper()
	var l raft.Log
	err := nl.store.GetLog(uint64(id)<<logIndexBits|index, &l)
	if err != nil && !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func TestNodeLogKeepsGroupsApart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	a, b, c := openTestGroup(t, nl, 0), openTestGroup(t, nl, 1), openTestGroup(t, nl, 1023)
	checkRange(t, a, 0, 0)
	for _, g := range []*groupLog{a, b, c} {
		storeLogs(t, g, 1, 30)
	}
	if err := b.StoreLog(entries(1, 31, 31)[0]); err != nil {
		t.Fatal(err)
	}
	checkRange(t, a, 1, 30)
	checkRange(t, b, 1, 31)
	checkRange(t, c, 1, 30)

	// Compaction removes a prefix; a follower's conflict a suffix, and
	// appends anew from its start.
	deleteRange(t, a, 1, 10)
	deleteRange(t, b, 21, 31)
	deleteRange(t, c, 1, 30)
	checkRange(t, a, 11, 30)
	checkRange(t, b, 1, 20)
	checkRange(t, c, 0, 0)
	storeGen(t, b, 21, 25, 1)
	bGens := func(i uint64) int { return map[bool]int{true: 1}[i > 20] }
	checkGens(t, b, 1, 25, bGens)
	// After a snapshot install the log starts anywhere.
	storeLogs(t, c, 500, 505)
	checkRange(t, c, 500, 505)
	if err := nl.close(); err != nil {
		t.Fatal(err)
	}

	nl = openTestLog(t, path)
	defer nl.close()
	a, b, c = openTestGroup(t, nl, 0), openTestGroup(t, nl, 1), openTestGroup(t, nl, 1023)
	checkRange(t, a, 11, 30)
	checkGens(t, b, 1, 25, bGens)
	checkRange(t, c, 500, 505)
	if err := nl.wipe(1); err != nil {
		t.Fatal(err)
	}
	if again := openTestGroup(t, nl, 1); again != b {
		t.Fatal("group(1) after wipe is another groupLog")
	}
	checkRange(t, b, 0, 0)
	checkRange(t, a, 11, 30)
}

// A group id whose legacy keys would reach the sequence is refused.
func TestNodeLogRefusesLargeGroupIDs(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer nl.close()
	if _, err := nl.group(maxGroupID + 1); err == nil {
		t.Fatalf("group %d opened", maxGroupID+1)
	}
	g := openTestGroup(t, nl, maxGroupID)
	storeLogs(t, g, 1, 3)
	if g.key(boundsIndex) >= seqBase {
		t.Fatalf("group %d's bounds key %#x lies in the sequence", g.id, g.key(boundsIndex))
	}
	if err := g.StoreLogs([]*raft.Log{{Index: logIndexMax + 1}}); err == nil {
		t.Fatal("an index beyond the group's key space was stored")
	}
	if err := nl.wipe(maxGroupID + 1); err != nil {
		t.Fatal(err)
	}
}

// Many groups append at once, sharing commits; a start finds every
// group's entries from the commit records.
func TestNodeLogReopensAfterManyGroupsAppend(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	var commits, appends atomic.Int64
	nl.observe = func(n int) { commits.Add(1); appends.Add(int64(n)) }
	const groups, rounds = 16, 20
	var wg sync.WaitGroup
	lasts := make([]uint64, groups)
	for id := range uint32(groups) {
		g := openTestGroup(t, nl, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := uint64(1)
			for r := range rounds {
				n := uint64(1 + (int(id)+r)%3)
				if err := g.StoreLogs(entries(id, next, next+n-1)); err != nil {
					t.Error(err)
					return
				}
				next += n
			}
			lasts[id] = next - 1
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if commits.Load() >= appends.Load() {
		t.Logf("no commit was shared: %d appends in %d commits", appends.Load(), commits.Load())
	}
	next := nl.next
	nl.close()
	nl = openTestLog(t, nl.path)
	defer nl.close()
	if nl.next != next {
		t.Fatalf("the walk ended at %#x, the writer at %#x", nl.next, next)
	}
	for id := range uint32(groups) {
		checkRange(t, openTestGroup(t, nl, id), 1, lasts[id])
	}
}

// Raft truncates a follower's tail on a conflict and appends anew at its
// start; compaction removes a prefix; a snapshot's install removes the
// whole log and appends past the snapshot.
func TestNodeLogReopensAfterRemovals(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 5)
	storeLogs(t, g, 1, 30)
	storeLogs(t, g, 31, 50)
	checkRecord(t, g, logBounds{}) // appends write no bounds record

	// A suffix removal is not recorded: without the append that follows
	// it, a start finds the entries as they were before it.
	deleteRange(t, g, 41, 50)
	checkRange(t, g, 1, 40)
	checkRecord(t, g, logBounds{})
	nl, g = reopen(t, nl, 5)
	checkRange(t, g, 1, 50)

	// With the append, its span truncates them again.
	deleteRange(t, g, 41, 50)
	storeGen(t, g, 41, 45, 1)
	gens := func(i uint64) int { return map[bool]int{true: 1}[i > 40 && i <= 45] }
	nl, g = reopen(t, nl, 5)
	checkGens(t, g, 1, 45, gens)

	// Compaction, then appends past it.
	storeLogs(t, g, 46, 60)
	deleteRange(t, g, 1, 20)
	checkRecord(t, g, logBounds{floor: 21})
	storeLogs(t, g, 61, 70)
	nl, g = reopen(t, nl, 5)
	checkGens(t, g, 21, 70, gens)

	// A truncation right after a reopen, and an append right after it.
	deleteRange(t, g, 65, 70)
	storeGen(t, g, 65, 66, 2)
	gens2 := func(i uint64) int {
		if i >= 65 {
			return 2
		}
		return gens(i)
	}
	nl, g = reopen(t, nl, 5)
	checkGens(t, g, 21, 66, gens2)

	// A middle removal is the runs' alone too.
	deleteRange(t, g, 30, 31)
	if err := g.GetLog(30, new(raft.Log)); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("GetLog(30) after removing [30, 31]: %v", err)
	}
	nl, g = reopen(t, nl, 5)
	checkGens(t, g, 21, 66, gens2)

	// A snapshot's install: the whole log goes, and the log starts past
	// the snapshot; then everything again, and it starts low, below
	// indexes it held: none of the old entries may show.
	deleteRange(t, g, 21, 66)
	checkRange(t, g, 0, 0)
	reset := nl.next
	checkRecord(t, g, logBounds{reset: reset})
	storeGen(t, g, 200, 210, 3)
	nl, g = reopen(t, nl, 5)
	checkGens(t, g, 200, 210, func(uint64) int { return 3 })
	deleteRange(t, g, 200, 210)
	storeGen(t, g, 3, 5, 4)
	nl, g = reopen(t, nl, 5)
	defer nl.close()
	checkGens(t, g, 3, 5, func(uint64) int { return 4 })
	storeGen(t, g, 6, 6, 4)
	checkGens(t, g, 3, 6, func(uint64) int { return 4 })
}

// A group that leaves the node (wipe) and is added again starts empty,
// and never finds its old entries, in this process or after a start.
func TestNodeLogReaddedGroupStartsAfresh(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 9)
	other := openTestGroup(t, nl, 10)
	storeLogs(t, g, 1, 30)
	storeLogs(t, other, 1, 5)
	if err := nl.wipe(9); err != nil {
		t.Fatal(err)
	}
	nl, g = reopen(t, nl, 9)
	checkRange(t, g, 0, 0)
	storeGen(t, g, 1, 5, 1)
	nl, g = reopen(t, nl, 9)
	defer nl.close()
	checkGens(t, g, 1, 5, func(uint64) int { return 1 })
	checkRange(t, openTestGroup(t, nl, 10), 1, 5)
	// An empty group's wipe writes nothing.
	if err := nl.wipe(11); err != nil {
		t.Fatal(err)
	}
	checkRecord(t, openTestGroup(t, nl, 11), logBounds{})
}

// An append below a group's recorded floor (raft never makes one) lowers
// the floor in its commit, so that a start keeps it.
func TestNodeLogAppendBelowTheFloor(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 2)
	storeLogs(t, g, 1, 20)
	deleteRange(t, g, 1, 10)
	storeGen(t, g, 5, 8, 1)
	checkRecord(t, g, logBounds{floor: 5})
	nl, g = reopen(t, nl, 2)
	defer nl.close()
	checkGens(t, g, 5, 8, func(uint64) int { return 1 })
}

// A model of a group's log: entry index -> generation.
type modelLog struct {
	first, last uint64
	gen         map[uint64]int
}

func (m *modelLog) appendGen(first, last uint64, gen int) {
	for i := first; i <= max(m.last, last); i++ {
		if i > last {
			delete(m.gen, i)
		} else {
			m.gen[i] = gen
		}
	}
	if m.last == 0 {
		m.first = first
	}
	m.last = last
}

func (m *modelLog) cut(hi uint64) { // hi < last
	for i := m.first; i <= hi; i++ {
		delete(m.gen, i)
	}
	m.first = hi + 1
}

// Groups take random steps as raft does (appends, a conflict's truncation
// and its append, compactions, a snapshot's install), several at once so
// that they share commits, some groups from a legacy log, group 0 mostly
// idle so that the cleaner copies it forward between the others' requests;
// the node log is reopened now and then (wherever the cleaner is: its
// copies and floor moves are interleaved with the steps), sometimes right
// after truncations that a crash loses (they come back, or a prefix of
// them, if the floor passed some of their commits), sometimes right after
// a floor record whose deletes did not happen, and must match the model.
func TestNodeLogMatchesAModel(t *testing.T) {
	smallCleaner(t)
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
			const groups = 6
			models := make([]*modelLog, groups)
			for id := range uint32(groups) {
				models[id] = &modelLog{gen: map[uint64]int{}}
				if id%2 == 1 && seed > 0 {
					n := uint64(5 + rng.IntN(20))
					writeLegacy(t, nl, id, 1, n, 1+uint64(rng.IntN(int(n))))
					models[id].appendGen(1, n, 0)
				}
			}
			nl.close()
			nl = openTestLog(t, nl.path)
			defer func() { nl.close() }()
			gs := make([]*groupLog, groups)
			for id := range uint32(groups) {
				gs[id] = openTestGroup(t, nl, id)
			}
			check := func(step int) {
				t.Helper()
				for id, m := range models {
					checkGens(t, gs[id], m.first, m.last, func(i uint64) int { return m.gen[i] })
				}
			}
			var moves, copied uint64 // by the node logs closed
			for step := 1; step <= 120; step++ {
				type op struct {
					kind int
					a, n uint64
				}
				ops := make([]op, groups)
				for id, m := range models {
					o := op{kind: rng.IntN(10), n: uint64(1 + rng.IntN(4))}
					switch {
					case id == 0 && m.last > 0 && rng.IntN(10) > 0:
						o.kind = 4 // idle
					case m.last == 0 || o.kind < 5:
						o.kind = 0 // append
						o.a = m.last + 1
						if m.last == 0 {
							o.a = uint64(1 + rng.IntN(50))
						}
					case o.kind < 7 && m.last > m.first+1:
						o.kind = 1 // conflict
						o.a = m.first + 1 + uint64(rng.IntN(int(m.last-m.first)))
					case o.kind < 9 && m.last > m.first+2:
						o.kind = 2 // compaction
						o.a = m.first + uint64(rng.IntN(int(m.last-m.first)))
					default:
						o.kind = 3 // snapshot install
						o.a = uint64(1 + rng.IntN(int(m.last+20)))
					}
					ops[id] = o
				}
				var wg sync.WaitGroup
				for id := range ops {
					o, g, m := ops[id], gs[id], models[id]
					wg.Add(1)
					go func() {
						defer wg.Done()
						var err error
						switch o.kind {
						case 0:
							err = g.StoreLogs(entriesGen(g.id, o.a, o.a+o.n-1, step))
						case 1:
							if err = g.DeleteRange(o.a, m.last); err == nil {
								err = g.StoreLogs(entriesGen(g.id, o.a, o.a+o.n-1, step))
							}
						case 2:
							err = g.DeleteRange(m.first, o.a)
						case 3:
							if err = g.DeleteRange(m.first, m.last); err == nil {
								err = g.StoreLogs(entriesGen(g.id, o.a, o.a+o.n-1, step))
							}
						}
						if err != nil {
							t.Errorf("step %d group %d op %+v: %v", step, g.id, o, err)
						}
					}()
				}
				wg.Wait()
				if t.Failed() {
					t.FailNow()
				}
				for id, o := range ops {
					m := models[id]
					switch o.kind {
					case 0, 1:
						m.appendGen(o.a, o.a+o.n-1, step)
					case 2:
						m.cut(o.a)
					case 3:
						m.gen, m.first, m.last = map[uint64]int{}, 0, 0
						m.appendGen(o.a, o.a+o.n-1, step)
					}
				}
				check(step)
				reopenAll := func() {
					nl.close()
					moves, copied = moves+nl.floorMoves, copied+nl.copied
					nl = openTestLog(t, nl.path)
					for id := range uint32(groups) {
						gs[id] = openTestGroup(t, nl, id)
					}
				}
				if rng.IntN(12) == 0 {
					reopenAll()
					check(step)
				}
				if rng.IntN(15) == 0 {
					// A crash right after conflicts' truncations, before
					// their appends, some after a compaction too: the
					// truncations are lost, the compactions not. The
					// cleaner may run in between: the entries of commits
					// its floor passed stay removed, and what comes back
					// is a prefix of the truncated suffix.
					los := make([]uint64, groups)
					for id, m := range models {
						if m.last < m.first+3 {
							continue
						}
						g := gs[id]
						lo := m.first + 2 + uint64(rng.IntN(int(m.last-m.first-1)))
						los[id] = lo
						deleteRange(t, g, lo, m.last)
						if rng.IntN(2) == 0 {
							hi := m.first + uint64(rng.IntN(int(lo-1-m.first)))
							deleteRange(t, g, m.first, hi)
							m.cut(hi)
						}
					}
					if rng.IntN(2) == 0 {
						tidyUp(t, nl)
					}
					reopenAll()
					for id, m := range models {
						last, _ := gs[id].LastIndex()
						if los[id] == 0 {
							continue
						}
						if last < los[id]-1 || last > m.last {
							t.Fatalf("step %d group %d: after a crash that lost truncations from %d the last index is %d, want %d..%d", step, id, los[id], last, los[id]-1, m.last)
						}
						for i := last + 1; i <= m.last; i++ {
							delete(m.gen, i)
						}
						m.last = last
					}
					check(step)
				}
				if rng.IntN(10) == 0 {
					tidyUp(t, nl)
					checkFloor(t, nl)
				}
				if rng.IntN(20) == 0 {
					// A crash right after the cleaner's floor record,
					// before its deletes.
					tidyUp(t, nl)
					low, _, _, _, err := nl.scan()
					if err != nil {
						t.Fatal(err)
					}
					if err := nl.store.StoreLogs([]*raft.Log{floorRecord(low)}); err != nil {
						t.Fatal(err)
					}
					reopenAll()
					check(step)
				}
			}
			tidyUp(t, nl)
			checkFloor(t, nl)
			moves, copied = moves+nl.floorMoves, copied+nl.copied
			t.Logf("floor moves %d, entries copied %d, keys walked %d", moves, copied, nl.next-nl.floor)
			if moves == 0 || copied == 0 {
				t.Fatalf("the cleaner did not run (floor moves %d, entries copied %d)", moves, copied)
			}
			// Every legacy key is gone once its entries are.
			for id, m := range models {
				for i := uint64(1); i < m.first; i++ {
					if legacyStored(t, nl, uint32(id), i) {
						t.Fatalf("group %d: legacy entry %d below the first index %d is still stored", id, i, m.first)
					}
				}
			}
		})
	}
}

// A log written before the key sequence: its entries are read through the
// bounds record and the last index found past it; appends go to the
// sequence after them; a start reads both; removals delete the legacy
// entries they cover, and a suffix removal leaves them (as the sequence's).
func TestNodeLogReadsLegacyAndSequenceEntries(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	writeLegacy(t, nl, 3, 1, 30, 10)
	writeLegacy(t, nl, 4, 5, 9, 9)
	nl, g := reopen(t, nl, 3)
	checkRange(t, g, 1, 30)
	checkRange(t, openTestGroup(t, nl, 4), 5, 9)
	storeLogs(t, g, 31, 40)
	if legacyStored(t, nl, 3, 31) {
		t.Fatal("an append went to a legacy key")
	}
	nl, g = reopen(t, nl, 3)
	checkRange(t, g, 1, 40)

	// A conflict inside the legacy entries, and its append.
	deleteRange(t, g, 25, 40)
	storeGen(t, g, 25, 28, 1)
	gens := func(i uint64) int { return map[bool]int{true: 1}[i >= 25] }
	nl, g = reopen(t, nl, 3)
	checkGens(t, g, 1, 28, gens)
	if !legacyStored(t, nl, 3, 30) {
		t.Fatal("a suffix removal deleted legacy entries")
	}

	// A suffix removal inside the legacy entries, not followed by its
	// append, comes back.
	deleteRange(t, g, 20, 28)
	checkRange(t, g, 1, 19)
	nl, g = reopen(t, nl, 3)
	checkGens(t, g, 1, 28, gens)

	// Compaction into the legacy entries deletes them; the record names
	// the rest, with their last as found (30: past the span's cut), and
	// the range it deletes (the next record drops it).
	deleteRange(t, g, 1, 10)
	checkRecord(t, g, logBounds{first: 11, last: 30, delFirst: 1, delLast: 10, floor: 11})
	for i := uint64(1); i <= 10; i++ {
		if legacyStored(t, nl, 3, i) {
			t.Fatalf("compacted legacy entry %d is still stored", i)
		}
	}
	nl, g = reopen(t, nl, 3)
	checkGens(t, g, 11, 28, gens)
	// Compaction short of the legacy entries that the conflict's append
	// shadows (27..30): they stay until the floor passes them.
	deleteRange(t, g, 11, 26)
	checkRecord(t, g, logBounds{first: 27, last: 30, delFirst: 11, delLast: 26, floor: 27})
	nl, g = reopen(t, nl, 3)
	checkGens(t, g, 27, 28, gens)
	storeGen(t, g, 29, 35, 2)
	deleteRange(t, g, 27, 32)
	checkRecord(t, g, logBounds{delFirst: 27, delLast: 30, floor: 33})
	nl, g = reopen(t, nl, 3)
	checkGens(t, g, 33, 35, func(uint64) int { return 2 })
	for i := uint64(1); i <= 30; i++ {
		if legacyStored(t, nl, 3, i) {
			t.Fatalf("compacted legacy entry %d is still stored", i)
		}
	}

	// The whole log of a legacy group goes, legacy keys and all.
	g4 := openTestGroup(t, nl, 4)
	deleteRange(t, g4, 5, 9)
	for i := uint64(5); i <= 9; i++ {
		if legacyStored(t, nl, 4, i) {
			t.Fatalf("removed legacy entry %d is still stored", i)
		}
	}
	storeGen(t, g4, 1, 2, 1)
	nl, g4 = reopen(t, nl, 4)
	defer nl.close()
	checkGens(t, g4, 1, 2, func(uint64) int { return 1 })
}

// A start finds the last legacy index however many entries follow the
// recorded last (the search doubles, then halves).
func TestNodeLogFindsTheLastIndex(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
	for i, n := range []uint64{0, 1, 2, 3, 7, 8, 9, 100, 1000, 1025} {
		id := uint32(10 + i)
		writeLegacy(t, nl, id, 1, 5+n, 5)
		var g *groupLog
		nl, g = reopen(t, nl, id)
		if l, _ := g.LastIndex(); l != 5+n {
			t.Fatalf("%d entries past the recorded last 5: LastIndex = %d, want %d", n, l, 5+n)
		}
	}
}

// A crash inside a removal, after it wrote the bounds record and before it
// deleted the legacy entries: the next start deletes them (before it
// looks for the last index, which a leftover tail would extend).
func TestNodeLogSurvivesACrashInsideARemoval(t *testing.T) {
	for _, tc := range []struct {
		name   string
		crash  []byte // the bounds record written before the crash
		first  uint64
		last   uint64
		stored uint64 // legacy entries 1..stored are in the store at the crash
	}{
		// A seatd before the sequence, removing a suffix.
		{"legacy tail", encodeBoundsV1(logBounds{first: 1, last: 40, delFirst: 41, delLast: 50}), 1, 40, 50},
		{"legacy tail to the end of the key space", encodeBoundsV1(logBounds{first: 1, last: 40, delFirst: 41, delLast: logIndexMax}), 1, 40, 50},
		{"legacy prefix", encodeBoundsV1(logBounds{first: 21, last: 50, delFirst: 1, delLast: 20}), 21, 50, 50},
		// This one: compaction, and the whole log.
		{"prefix", logBounds{first: 21, last: 50, delFirst: 1, delLast: 20, floor: 21}.encode(), 21, 50, 50},
		{"everything", logBounds{delFirst: 1, delLast: 50, reset: seqBase}.encode(), 0, 0, 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
			writeLegacy(t, nl, 6, 1, tc.stored, 10)
			if err := nl.store.StoreLogs([]*raft.Log{{Index: 6<<logIndexBits | boundsIndex, Data: tc.crash}}); err != nil {
				t.Fatal(err)
			}
			nl, g := reopen(t, nl, 6)
			defer func() { nl.close() }()
			checkRange(t, g, tc.first, tc.last)
			for i := uint64(1); i <= tc.stored; i++ {
				if (i < tc.first || i > tc.last) && legacyStored(t, nl, 6, i) {
					t.Fatalf("entry %d of the interrupted removal is still stored", i)
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

// A crash between a removal's record and its deletes, made by stopping
// the deletes: the log reads as the record says.
func TestNodeLogCrashAfterTheRemovalRecord(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	writeLegacy(t, nl, 8, 1, 20, 20)
	nl, g := reopen(t, nl, 8)
	storeLogs(t, g, 21, 30)
	// remove's record for compacting [1, 25], without its delete.
	b := logBounds{delFirst: 1, delLast: 20, floor: 26}
	if err := nl.store.StoreLogs([]*raft.Log{g.boundsLog(b)}); err != nil {
		t.Fatal(err)
	}
	nl, g = reopen(t, nl, 8)
	checkRange(t, g, 26, 30)
	for i := uint64(1); i <= 20; i++ {
		if legacyStored(t, nl, 8, i) {
			t.Fatalf("legacy entry %d is still stored", i)
		}
	}
	// The whole log's record, without its effect in memory.
	if err := nl.store.StoreLogs([]*raft.Log{g.boundsLog(logBounds{reset: nl.next})}); err != nil {
		t.Fatal(err)
	}
	nl, g = reopen(t, nl, 8)
	defer nl.close()
	checkRange(t, g, 0, 0)
}

// A bounds record from before the sequence (36 bytes) reads with floor and
// reset 0; every record this one writes has all six fields.
func TestNodeLogBoundsRecordFormats(t *testing.T) {
	b := logBounds{first: 3, last: 9, delFirst: 1, delLast: 2}
	got, err := decodeBounds(1, encodeBoundsV1(b))
	if err != nil || got != b {
		t.Fatalf("an old record decodes to %+v, %v, want %+v", got, err, b)
	}
	b.floor, b.reset = 3, seqBase+7
	if got, err := decodeBounds(1, b.encode()); err != nil || got != b {
		t.Fatalf("a record decodes to %+v, %v, want %+v", got, err, b)
	}
	for _, bad := range []logBounds{{floor: logIndexMax + 2}, {reset: 5}, {reset: floorKey}, {first: 2, last: 1}} {
		if _, err := decodeBounds(1, bad.encode()); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("%+v decodes: %v", bad, err)
		}
	}
	if len(b.encode()) != boundsBytes {
		t.Fatal("encode writes the old length")
	}
}

// A group this layout opens has its bounds record in the longer form
// before it appends, whether its log is new or from before the sequence:
// a seatd from before the sequence, which reads only records of the old
// length, then refuses the log rather than open it without the entries
// appended since (which it cannot see).
func TestNodeLogOpenedGroupsRefuseAnOlderSeatd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	writeLegacy(t, nl, 2, 1, 20, 10)
	nl.close()
	nl = openTestLog(t, path)
	defer func() { nl.close() }()
	for _, id := range []uint32{2, 3} { // from before the sequence; new
		g := openTestGroup(t, nl, id)
		storeLogs(t, g, 21, 25)
		var l raft.Log
		if err := nl.store.GetLog(g.key(boundsIndex), &l); err != nil {
			t.Fatalf("group %d: no bounds record (%v)", id, err)
		}
		if len(l.Data) != boundsBytes {
			t.Fatalf("group %d: a bounds record of %d bytes, which a seatd from before the sequence reads", id, len(l.Data))
		}
	}
	nl, g := reopen(t, nl, 2)
	checkRange(t, g, 1, 25)
}

func TestNodeLogRefusesDamagedBounds(t *testing.T) {
	for _, data := range [][]byte{logBounds{first: 1, last: 5}.encode(), encodeBoundsV1(logBounds{first: 1, last: 5})} {
		nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
		writeLegacy(t, nl, 2, 1, 5, 5)
		data[3] ^= 0x10
		if err := nl.store.StoreLogs([]*raft.Log{{Index: 2<<logIndexBits | boundsIndex, Data: data}}); err != nil {
			t.Fatal(err)
		}
		nl.close()
		nl = openTestLog(t, nl.path)
		if _, err := nl.group(2); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("opening a group with damaged bounds: %v, want ErrCorruptLog", err)
		}
		// Its wipe removes every legacy key it may have.
		if err := nl.wipe(2); err != nil {
			t.Fatal(err)
		}
		if legacyStored(t, nl, 2, 3) {
			t.Fatal("wipe left a legacy entry of a group with damaged bounds")
		}
		nl, g := reopen(t, nl, 2)
		checkRange(t, g, 0, 0)
		nl.close()
	}
}

// A legacy bounds record naming entries the store lacks is a damaged log,
// not a shorter one.
func TestNodeLogRefusesBoundsBeyondItsEntries(t *testing.T) {
	for _, missing := range []uint64{1, 10} {
		nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
		writeLegacy(t, nl, 7, 1, 10, 10)
		if err := nl.store.DeleteRange(7<<logIndexBits|missing, 7<<logIndexBits|missing); err != nil {
			t.Fatal(err)
		}
		if _, err := nl.group(7); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("bounds [1, 10] without entry %d: group = %v, want ErrCorruptLog", missing, err)
		}
		nl.close()
	}
}

// commitRecords returns the keys of the log's commit records.
func commitRecords(t *testing.T, nl *nodeLog) []uint64 {
	t.Helper()
	var keys []uint64
	var l raft.Log
	for key := seqBase; key < nl.next; {
		if err := nl.store.GetLog(key, &l); err != nil {
			t.Fatal(err)
		}
		n, _, err := decodeCommitRecord(l.Data, nil)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, key)
		key += 1 + n
	}
	return keys
}

// A commit record with a flipped bit, anywhere in it, is refused: the
// start cannot know where the commit's entries end.
func TestNodeLogRefusesADamagedCommitRecord(t *testing.T) {
	for k := range 3 {
		nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
		a, b := openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
		storeLogs(t, a, 1, 3)
		storeLogs(t, b, 1, 2)
		storeLogs(t, a, 4, 4)
		keys := commitRecords(t, nl)
		if len(keys) != 3 {
			t.Fatalf("%d commit records, want 3", len(keys))
		}
		var rec raft.Log
		if err := nl.store.GetLog(keys[k], &rec); err != nil {
			t.Fatal(err)
		}
		for bit := range len(rec.Data) * 8 {
			data := append([]byte(nil), rec.Data...)
			data[bit/8] ^= 1 << (bit % 8)
			if _, _, err := decodeCommitRecord(data, nil); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("record at %#x with bit %d flipped decodes: %v", keys[k], bit, err)
			}
		}
		rec.Data[len(rec.Data)/2] ^= 0x04
		if err := nl.store.StoreLog(&rec); err != nil {
			t.Fatal(err)
		}
		nl.close()
		refusedAsCorrupt(t, nl.path, "a damaged record at %#x: ", keys[k])
	}
}

// refusedAsCorrupt asserts that opening the node log at path fails with
// ErrCorruptLog; what (a format, with args) says what was damaged.
func refusedAsCorrupt(t *testing.T, path, what string, args ...any) {
	t.Helper()
	if bad, err := openNodeLog(path); !errors.Is(err, ErrCorruptLog) {
		if bad != nil {
			bad.close()
		}
		t.Fatalf("%sopenNodeLog = %v, want ErrCorruptLog", fmt.Sprintf(what, args...), err)
	}
}

// Keys past the last commit record's entries mean a record went missing:
// refused, not overwritten.
func TestNodeLogRefusesKeysPastTheRecords(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	storeLogs(t, openTestGroup(t, nl, 1), 1, 3)
	if err := nl.store.StoreLogs([]*raft.Log{{Index: nl.next + 5, Data: []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	nl.close()
	refusedAsCorrupt(t, nl.path, "")
}

// A commit that failed may be on disk all the same: the writer deletes
// whatever lies at or past the next record's key before its next change,
// so a start finds no keys past the records.
func TestNodeLogSettlesAfterAFailedCommit(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 1)
	storeLogs(t, g, 1, 3)
	// What a failed commit of entries 4..9 left, played here (the writer
	// is idle between appends).
	stray := []*raft.Log{{Index: nl.next, Data: appendCommitRecord(nil, []commitSpan{{group: 1, first: 4, count: 6}})}}
	for i := range uint64(6) {
		stray = append(stray, &raft.Log{Index: nl.next + 1 + i, Data: []byte("stray")})
	}
	if err := nl.store.StoreLogs(stray); err != nil {
		t.Fatal(err)
	}
	nl.unsure = true
	storeLogs(t, g, 4, 5)
	nl, g = reopen(t, nl, 1)
	checkRange(t, g, 1, 5)
	// Before a removal too: its reset names next.
	stray[0].Index = nl.next
	if err := nl.store.StoreLogs(stray[:1]); err != nil {
		t.Fatal(err)
	}
	nl.unsure = true
	deleteRange(t, g, 1, 5)
	nl, g = reopen(t, nl, 1)
	defer nl.close()
	checkRange(t, g, 0, 0)
}

// A floor record moves the walk's start (the cleaner writes it before
// deleting what lies below; nodelog_clean_test.go).
func TestNodeLogWalksFromTheFloor(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 1)
	storeLogs(t, g, 1, 5)
	floor := nl.next
	storeLogs(t, g, 6, 8)
	data := binary.BigEndian.AppendUint64(nil, floor)
	data = binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
	if err := nl.store.StoreLogs([]*raft.Log{{Index: floorKey, Data: data}}); err != nil {
		t.Fatal(err)
	}
	if err := nl.store.DeleteRange(seqBase, floor-1); err != nil {
		t.Fatal(err)
	}
	nl, g = reopen(t, nl, 1)
	checkRange(t, g, 6, 8)
	storeLogs(t, g, 9, 9)
	data[2] ^= 1
	if err := nl.store.StoreLogs([]*raft.Log{{Index: floorKey, Data: data}}); err != nil {
		t.Fatal(err)
	}
	nl.close()
	refusedAsCorrupt(t, nl.path, "a damaged floor record: ")
}

// The commit record's decoder never panics, and what it accepts encodes
// back to the same bytes.
func FuzzCommitRecord(f *testing.F) {
	f.Add(appendCommitRecord(nil, nil))
	f.Add(appendCommitRecord(nil, []commitSpan{{group: 1, first: 1, count: 3}}))
	f.Add(appendCommitRecord(nil, []commitSpan{{group: 1, first: 7, count: 1}, {group: maxGroupID, first: logIndexMax, count: 1}, {group: 1, first: 2, count: 9}}))
	f.Add(appendCommitRecord(nil, []commitSpan{{kind: spanCopy, group: 3, first: 5, count: 4}, {group: 3, first: 7, count: 2}}))
	f.Add(appendCommitRecord(nil, []commitSpan{{kind: spanCopy + 1, group: 1, first: 1, count: 1}}))
	f.Add(appendCommitRecordVersion(nil, commitEntryKeys, []commitSpan{{group: 2, first: 4, count: 3}}))
	f.Add(appendCommitRecordVersion(nil, commitPacked+1, []commitSpan{{group: 2, first: 4, count: 3}}))
	f.Add([]byte{1, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var spans []commitSpan
		n, packed, err := decodeCommitRecord(data, func(s commitSpan) { spans = append(spans, s) })
		if err != nil {
			if !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("an error not ErrCorruptLog: %v", err)
			}
			return
		}
		var total uint64
		for _, s := range spans {
			if s.kind != spanAppend && s.kind != spanCopy {
				t.Fatalf("accepts a span of kind %d", s.kind)
			}
			total += uint64(s.count)
		}
		if total != n {
			t.Fatalf("decode counts %d entries, its spans %d", n, total)
		}
		v := byte(commitEntryKeys)
		if packed {
			v = commitPacked
		}
		if again := appendCommitRecordVersion(nil, v, spans); string(again) != string(data) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", data, spans, again)
		}
	})
}

// The runs' operations (the append rule, a copy's replacement, cuts and
// removals) against a slice of indexes.
func TestLogRunsFollowTheAppendRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for round := range 200 {
		var runs []logRun
		var keys []uint64 // keys[i] is index i's key, 0: none
		key := uint64(1000)
		for step := range 30 {
			first := uint64(1 + rng.IntN(40))
			n := uint64(1 + rng.IntN(5))
			switch rng.IntN(5) {
			case 0, 1:
				runs = appendRun(runs, logRun{first: first, n: n, key: key, rec: uint64(step)})
				if uint64(len(keys)) > first {
					keys = keys[:first]
				}
				for uint64(len(keys)) < first+n {
					keys = append(keys, 0)
				}
				for i := range n {
					keys[first+i] = key + i
				}
				key += n + 1
			case 2:
				runs = cutRuns(runs, first)
				for i := range min(first, uint64(len(keys))) {
					keys[i] = 0
				}
			case 3:
				runs = removeRuns(runs, first, first+n-1)
				for i := first; i < first+n && i < uint64(len(keys)); i++ {
					keys[i] = 0
				}
			case 4: // a copy span: exactly its range
				runs = replaceRun(runs, logRun{first: first, n: n, key: key, rec: uint64(step)})
				for uint64(len(keys)) < first+n {
					keys = append(keys, 0)
				}
				for i := range n {
					keys[first+i] = key + i
				}
				key += n + 1
			}
			var got []uint64
			for _, r := range runs {
				if r.n == 0 {
					t.Fatalf("round %d: an empty run in %+v", round, runs)
				}
				for uint64(len(got)) < r.first {
					got = append(got, 0)
				}
				for i := range r.n {
					got = append(got, r.key+i)
				}
			}
			want := keys
			for len(want) > 0 && want[len(want)-1] == 0 {
				want = want[:len(want)-1]
			}
			if len(got) == 0 && len(want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("round %d step %d: runs %+v give keys %v, want %v", round, step, runs, got, want)
			}
		}
	}
}

// Groups appending at once share commits, and each reads back exactly its
// own entries, after a start too.
func TestNodeLogConcurrentGroupsShareCommits(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	defer func() { nl.close() }()
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
	type span struct{ first, last uint64 }
	spans := make([]span, groups)
	for i, g := range gs {
		first, last := g.bounds()
		if first < 2 || last < rounds {
			t.Fatalf("group %d holds [%d, %d]", g.id, first, last)
		}
		checkRange(t, g, first, last)
		spans[i] = span{first, last}
	}
	if appends.Load() != groups*rounds {
		t.Fatalf("%d appends observed, want %d", appends.Load(), groups*rounds)
	}
	t.Logf("%d appends in %d commits", appends.Load(), commits.Load())
	nl.close()
	nl = openTestLog(t, nl.path)
	for i, s := range spans {
		checkRange(t, openTestGroup(t, nl, uint32(i)), s.first, s.last)
	}
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
