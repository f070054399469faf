package raftnode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"time"

	"github.com/hashicorp/raft"
)

// The node log's cleaner (nodelog.go's top comment gives the design). It
// runs on the writer goroutine, which owns next and the groups' runs, one
// bounded step at a time between requests (tidy), so appends and removals
// never wait for more than a step:
//
//   - clean: look for the floor (the oldest commit record with a live
//     entry: scan) and, if it moved at least minStep keys, write the floor
//     record, durably, on its own;
//   - sweep: delete the keys below the floor, deleteChunk keys a step;
//   - copy: move the live entries of the oldest commits forward, copyChunk
//     entries a step, in commits of their own with a copy span.
//
// Why a copy never brings back an entry that raft removed. A copy span
// replaces exactly its range [first, first+n) of the group's entries, and
// a start replays the spans in commit order. A copy writes entries that are
// live when it commits (chosen afresh from the runs at each step, on the
// writer: no append or removal comes between the choice and the commit).
// What removes entries later is, in commit order after the copy: an append
// span (a conflict's append) that truncates from its first index on,
// copied entries included, as it did the originals; a group's floor or
// reset in its bounds record, which the start applies after the replay
// (a copy commit below a reset is void for the group, as any); or a
// suffix removal without an append, which has no record: after a crash
// its entries come back, from the copy as from the original, the state
// the replica had acknowledged, as without a cleaner. A copy of entries
// that were already removed in memory is never written (they are not in
// the runs), and a start from the floor never reads the commits below it,
// so entries removed by a suffix removal whose commit lies below the
// floor do not come back at all.

// LogFloorMovedMsg is the message of the log line a node writes when its
// raft log's cleaner moved the log's floor past compacted entries (the
// fault harness counts them).
const LogFloorMovedMsg = "moved the raft log's floor"

// LogCleanerEnv names the environment variable that shrinks the node
// log's cleaner, read by a build with the faults tag alone
// (nodelog_fault.go): "minStep,deleteChunk,copyAfter,copyChunk" (keys,
// keys, keys, entries). The fault harness sets it so that floor moves,
// sweeps and copies happen within a short run, under its faults.
const LogCleanerEnv = "SEATD_FAULTS_LOG_CLEANER"

// floorRecord encodes the floor record naming key.
func floorRecord(key uint64) *raft.Log {
	data := binary.BigEndian.AppendUint64(nil, key)
	data = binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
	return &raft.Log{Index: floorKey, Type: raft.LogNoop, Data: data}
}

// tidyPending reports whether the cleaner has work for tidy.
func (nl *nodeLog) tidyPending() bool {
	if nl.tidyErr != nil {
		return false
	}
	return nl.swept < nl.floor || nl.copyBelow != 0 || nl.cleanDue ||
		(nl.next-nl.floor > nl.tune.copyAfter && nl.next >= nl.copyCheck)
}

// tidy runs one step of the cleaner's work; a failure stops it until the
// next removal (the writer's next commit most likely fails too).
func (nl *nodeLog) tidy() {
	var err error
	step, start := cleanSweep, time.Now()
	switch {
	case nl.swept < nl.floor:
		end := min(nl.floor, nl.swept+nl.tune.deleteChunk)
		if nl.sweepAll {
			// A start does not know how far a sweep got: one DeleteRange
			// costs what lies there: what the last floor moves left
			// unswept, a few chunks unless a crash came right after them.
			end = nl.floor
		}
		if err = nl.store.DeleteRange(nl.swept, end-1); err == nil {
			nl.swept, nl.sweepAll = end, false
		}
	case nl.copyBelow != 0:
		step = cleanCopy
		err = nl.copyStep()
	default:
		step = cleanFloor
		err = nl.clean()
	}
	if err != nil {
		nl.tidyErr = fmt.Errorf("raftnode: clean the raft log %s: %w", nl.path, err)
	}
	if nl.observeClean != nil {
		nl.observeClean(step, time.Since(start), nl.tidyErr)
	}
}

// The cleaner's steps, as its metrics name them.
const (
	cleanFloor = "floor" // look for the floor, and write its record if it moved
	cleanSweep = "sweep" // delete keys below the floor
	cleanCopy  = "copy"  // copy live entries forward
	cleanRoom  = "room"  // write room ahead of bbolt's pages (nodelog_room.go)
)

// eachLive calls fn with every run of live entries in the sequence and its
// group: gl if it is open (id is then gl.id), else nil and the group's id.
// Live is inside a group's runs; a group not opened in this process has
// the runs of the walked spans past its bounds record's reset, cut at its
// floor, as group will give it.
func (nl *nodeLog) eachLive(fn func(gl *groupLog, id uint32, r logRun)) error {
	nl.mu.Lock()
	defer nl.mu.Unlock()
	for _, gl := range nl.groups {
		// The writer alone changes runs: it reads them without g.mu.
		for _, r := range gl.runs {
			if r.rec != 0 { // 0: legacy keys
				fn(gl, gl.id, r)
			}
		}
	}
	for wid, runs := range nl.walked {
		b, _, err := (&groupLog{nl: nl, id: wid, base: uint64(wid) << logIndexBits}).readBounds()
		if err != nil {
			return err
		}
		var kept []logRun
		for _, r := range runs {
			if r.rec >= b.reset {
				kept = append(kept, r)
			}
		}
		for _, r := range cutRuns(kept, b.floor) {
			fn(nil, wid, r)
		}
	}
	return nil
}

// scan returns the oldest commit record with a live entry (next if none),
// the number of live entries in the sequence, and the group that has the
// oldest: g if it is open, else its id.
func (nl *nodeLog) scan() (low, live uint64, g *groupLog, id uint32, err error) {
	low = nl.next
	err = nl.eachLive(func(gl *groupLog, gid uint32, r logRun) {
		live += r.n
		if r.rec < low {
			low, g, id = r.rec, gl, gid
		}
	})
	return low, live, g, id, err
}

// pinnedShare: the group pinning the floor is copied forward when its
// entries there are fewer than 1/pinnedShare of the keys the copy frees:
// an idle group's (the catalog's), not a busy one's, which holds about
// one key in (groups appending) there and compacts them itself soon. It
// bounds the copies to 1/pinnedShare of the keys the log writes.
const pinnedShare = 16

// pinned returns what copying owner, the group with the oldest live
// commit (scan's), would free: above, the oldest commit with a live entry
// of any other group (next if none), and cost, owner's live entries in
// commits below above. An idle group's entries (the catalog's) pin the
// floor while the busy groups' compactions free everything above them:
// copying the few moves the floor to above.
func (nl *nodeLog) pinned(owner uint32) (above, cost uint64, err error) {
	above = nl.next
	var own []logRun
	err = nl.eachLive(func(_ *groupLog, gid uint32, r logRun) {
		if gid != owner {
			above = min(above, r.rec)
		} else {
			own = append(own, r)
		}
	})
	for _, r := range own {
		if r.rec < above {
			cost += r.n
		}
	}
	return above, cost, err
}

// clean moves the floor to the oldest commit record with a live entry, if
// that is at least minStep keys on: the floor record first, durable on its
// own, then the sweep deletes below it (a crash in between leaves keys
// below the floor, which a start never reads and its first sweep deletes).
// And it starts copying when the floor lies more than copyAfter keys
// behind next and the live entries are fewer than half of those keys:
// copying then writes at most one key per key it frees, so it at most
// doubles the writes however the groups append.
func (nl *nodeLog) clean() error {
	nl.cleanDue = false
	// The floor may name next: nothing of a failed commit may lie there.
	if err := nl.settle(); err != nil {
		return err
	}
	low, live, _, owner, err := nl.scan()
	if err != nil {
		return err
	}
	if low-nl.floor >= nl.tune.minStep {
		if err := nl.store.StoreLogs([]*raft.Log{floorRecord(low)}); err != nil {
			return err
		}
		if nl.logFloor != nil {
			nl.logFloor(low-nl.floor, nl.copied)
		}
		nl.floor = low
		nl.floorMoves++
	}
	// The group of the oldest live commit alone pins the floor: copy its
	// entries below the next group's oldest, if that frees minStep keys
	// at least and pinnedShare times as many as it copies.
	if low < nl.next {
		above, cost, err := nl.pinned(owner)
		if err != nil {
			return err
		}
		if freed := above - low; freed >= nl.tune.minStep && pinnedShare*cost < freed {
			nl.copyBelow = above
			return nil
		}
	}
	if nl.next >= nl.copyCheck {
		nl.copyCheck = nl.next + nl.tune.copyAfter/4
		if span := nl.next - nl.floor; span > nl.tune.copyAfter && 2*live < span {
			nl.copyBelow = nl.floor + span/2
		}
	}
	return nil
}

// copyStep copies up to copyChunk live entries of a commit below
// copyBelow forward, in a commit of its own whose copy span replaces them:
// the oldest run of the group it copied last while it has one (a look at
// that group's runs alone), else the run of the oldest commit with a live
// entry (a scan of every group's). Once no live entry lies in a commit
// below copyBelow, it ends the copying and has the floor looked for.
func (nl *nodeLog) copyStep() error {
	if err := nl.settle(); err != nil {
		return err
	}
	g := nl.copyGroup
	var from logRun
	if g != nil {
		for _, r := range g.runs {
			if r.rec != 0 && r.rec < nl.copyBelow && (from.n == 0 || r.rec < from.rec) {
				from = r
			}
		}
	}
	if from.n == 0 {
		low, _, lg, id, err := nl.scan()
		if err != nil {
			return err
		}
		if low >= nl.copyBelow {
			nl.copyBelow, nl.copyGroup, nl.cleanDue = 0, nil, true
			return nil
		}
		if g = lg; g == nil {
			// A group not opened in this process: open it (raft's
			// replica will find it open, as group promises).
			if g, err = nl.group(id); err != nil {
				return err
			}
		}
		for _, r := range g.runs {
			if r.rec == low {
				from = r
				break
			}
		}
		if from.n == 0 {
			return fmt.Errorf("group %d has no run of the commit at %#x", g.id, low)
		}
		nl.copyGroup = g
	}
	// The copy goes on through the group's runs that continue from's
	// range in commits below copyBelow, up to copyChunk entries: a busy
	// group's entries lie one or two to a commit, and a copy commit per
	// run cost a commit, its fsyncs and a pass over the group's runs for
	// every one or two entries it moved (15 % of node CPU in the tenth
	// minute of the uniform load: docs/PERFORMANCE-JOURNAL.md, "The
	// cleaner's copies, a run at a time").
	src := nl.copySrc[:0]
	n := uint64(0)
	for k := searchRuns(g.runs, from.first); k < len(g.runs) && n < nl.tune.copyChunk; k++ {
		r := g.runs[k]
		if len(src) > 0 && (r.rec == 0 || r.rec >= nl.copyBelow || r.first != src[len(src)-1].end()) {
			break
		}
		r.n = min(r.n, nl.tune.copyChunk-n)
		src = append(src, r)
		n += r.n
	}
	nl.copySrc = src
	rec := nl.next
	entries := make([]*raft.Log, 0, n)
	copies := make([]raft.Log, n)
	for _, r := range src {
		for i := range r.n {
			c := &copies[len(entries)]
			if err := nl.readEntry(r.loc(r.first+i), c); err != nil {
				return fmt.Errorf("read entry %d of group %d at %#x: %w", r.first+i, g.id, r.key+i, err)
			}
			entries = append(entries, c)
		}
	}
	logs := nl.packCommit(nil, rec, []commitSpan{{kind: spanCopy, group: g.id, first: from.first, count: uint32(n)}}, entries)
	if err := nl.store.StoreLogs(logs); err != nil {
		nl.unsure = true
		return err
	}
	nl.next = rec + 1 + n
	nl.copied += n
	g.mu.Lock()
	g.runs = replaceRun(g.runs, logRun{first: from.first, n: n, key: rec + 1, rec: rec, packed: true})
	g.mu.Unlock()
	return nil
}
