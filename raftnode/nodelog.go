package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// The node log: one raft-boltdb store (<data>/raft/log.db) holds the raft
// log of every group this node hosts. A single writer commits the appends
// of all groups waiting together in one transaction, so the groups share
// its fsyncs and a round of replication costs a node no more with more
// groups, as multi-raft systems keep all their ranges' logs in one engine
// (docs/PERFORMANCE.md, "The node log").
//
// Layout: entry i of group g is the store's entry g<<48 | i (48 bits of
// index per group: 2.8e14 entries). Entry g<<48 | boundsIndex holds the
// group's bounds: its first and last index and a range that a removal may
// have left behind. The record is written only when something other than
// the last index changes: an append to an empty group or one that does not
// extend the log by last+1 onwards, the first append after a removal (which
// clears the removal's range), and every removal. An append that only
// extends the log writes its entries alone, so the recorded last may trail
// the log: a start takes the last index from the store, as the end of the
// run of entries that follows the recorded last (findLast). That run is
// contiguous and nothing of the group lies beyond it, as appends extend by
// last+1 and anything else records the bounds. A removal writes the new
// bounds first and deletes after, so a crash in between leaves only
// entries outside the bounds, which the next start deletes before it
// looks for the last index.
//
// A group's stable store (current term, vote) stays in its own
// group-N/raft.db: it is written only on elections.

const (
	logIndexBits = 48
	// logIndexMax is the largest raft index a group may use.
	logIndexMax = 1<<logIndexBits - 2
	// boundsIndex is the index of the group's bounds record.
	boundsIndex = 1<<logIndexBits - 1
)

// logBounds is a group's range in the node log: [first, last], both 0 when
// the group has no entries; [delFirst, delLast] is a removal that may not
// have finished (0, 0: none).
type logBounds struct {
	first, last       uint64
	delFirst, delLast uint64
}

const boundsBytes = 4*8 + 4 // four indexes and a CRC-32C

func (b logBounds) encode() []byte {
	buf := make([]byte, boundsBytes)
	binary.BigEndian.PutUint64(buf[0:], b.first)
	binary.BigEndian.PutUint64(buf[8:], b.last)
	binary.BigEndian.PutUint64(buf[16:], b.delFirst)
	binary.BigEndian.PutUint64(buf[24:], b.delLast)
	binary.BigEndian.PutUint32(buf[32:], crc32.Checksum(buf[:32], castagnoli))
	return buf
}

func decodeBounds(group uint32, data []byte) (logBounds, error) {
	if len(data) != boundsBytes || crc32.Checksum(data[:32], castagnoli) != binary.BigEndian.Uint32(data[32:]) {
		return logBounds{}, fmt.Errorf("%w: the bounds record of group %d fails its checksum", ErrCorruptLog, group)
	}
	b := logBounds{
		first:    binary.BigEndian.Uint64(data[0:]),
		last:     binary.BigEndian.Uint64(data[8:]),
		delFirst: binary.BigEndian.Uint64(data[16:]),
		delLast:  binary.BigEndian.Uint64(data[24:]),
	}
	if b.first > b.last || b.last > logIndexMax || (b.first == 0) != (b.last == 0) {
		return logBounds{}, fmt.Errorf("%w: group %d has impossible bounds [%d, %d]", ErrCorruptLog, group, b.first, b.last)
	}
	return b, nil
}

// nodeLog is the node's raft log store; every change goes through its
// writer goroutine, which commits the appends waiting together in one
// transaction.
type nodeLog struct {
	store *raftboltdb.BoltStore
	path  string
	reqs  chan *logReq
	stop  chan struct{}
	done  chan struct{}
	// observe, if set, is told the appends each commit carried (metrics).
	observe func(appends int)
	// copies is append's copies of the entries, reused by the writer.
	copies []raft.Log
}

// logReq is an append (logs) or a removal of [delFirst, delLast].
type logReq struct {
	g                 *groupLog
	logs              []*raft.Log
	del               bool
	delFirst, delLast uint64
	done              chan error
}

// openNodeLog opens (creating) the node log at path.
func openNodeLog(path string) (*nodeLog, error) {
	// NoSync false: an acknowledged entry is on disk on a quorum.
	// NoFreelistSync: a commit does not write bbolt's list of free pages
	// (etcd's setting); opening rebuilds it by scanning the file. The
	// hash-map freelist finds free pages without a sorted array's copies,
	// which matter once raft's compactions have freed many.
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, NoSync: false,
		BoltOptions: &bbolt.Options{Timeout: 0, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}})
	if err != nil {
		return nil, fmt.Errorf("raftnode: open raft log %s: %w", path, err)
	}
	nl := &nodeLog{store: store, path: path, reqs: make(chan *logReq, 64), stop: make(chan struct{}), done: make(chan struct{})}
	go nl.run()
	return nl, nil
}

// close stops the writer and closes the store; the groups must be closed.
func (nl *nodeLog) close() error {
	close(nl.stop)
	<-nl.done
	return nl.store.Close()
}

// group opens group id's log: reads its bounds and deletes what a removal
// left behind.
func (nl *nodeLog) group(id uint32) (*groupLog, error) {
	g := &groupLog{nl: nl, id: id, base: uint64(id) << logIndexBits}
	b, err := g.readBounds()
	if err != nil {
		return nil, err
	}
	if b.delLast >= b.delFirst && b.delLast > 0 {
		// A removal that a crash interrupted (or one that finished, with
		// no bounds written since): finish it before looking for the last
		// index, which its range may reach past.
		if err := nl.store.DeleteRange(g.key(b.delFirst), g.key(b.delLast)); err != nil {
			return nil, fmt.Errorf("raftnode: finish removing entries of group %d: %w", id, err)
		}
	}
	last, err := g.findLast(b)
	if err != nil {
		return nil, err
	}
	g.recorded = b
	g.first, g.last = b.first, last
	return g, nil
}

// findLast returns the group's last index: the end of the run of entries
// that follows the recorded last b.last (nodeLog's comment says why it is
// one run). It doubles its step past b.last until it finds no entry, then
// halves back: O(log n) reads for n entries appended since the bounds were
// written. The entries at b.first and b.last must exist.
func (g *groupLog) findLast(b logBounds) (uint64, error) {
	if b.last == 0 {
		return 0, nil
	}
	for _, i := range []uint64{b.first, b.last} {
		if ok, err := g.stored(i); err != nil || !ok {
			if err == nil {
				err = fmt.Errorf("%w: group %d's bounds are [%d, %d] but entry %d is missing", ErrCorruptLog, g.id, b.first, b.last, i)
			}
			return 0, err
		}
	}
	have, step := b.last, uint64(1) // have is stored
	for {
		next := min(have+step, logIndexMax)
		if next == have {
			return have, nil
		}
		ok, err := g.stored(next)
		if err != nil {
			return 0, err
		}
		if !ok {
			break
		}
		have, step = next, step*2
	}
	// have is stored, have+step is not (or lies past logIndexMax).
	for step > 1 {
		step /= 2
		next := min(have+step, logIndexMax)
		ok, err := g.stored(next)
		if err != nil {
			return 0, err
		}
		if ok {
			have = next
		}
	}
	return have, nil
}

// stored reports whether the store holds entry index of the group.
func (g *groupLog) stored(index uint64) (bool, error) {
	var l raft.Log
	err := g.nl.store.GetLog(g.key(index), &l)
	if errors.Is(err, raft.ErrLogNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("raftnode: read entry %d of group %d: %w", index, g.id, err)
	}
	return true, nil
}

// wipe deletes every entry of group id, for a replica that leaves the group
// (no replica of it may be open).
func (nl *nodeLog) wipe(id uint32) error {
	g := &groupLog{nl: nl, id: id, base: uint64(id) << logIndexBits}
	b, err := g.readBounds()
	if err != nil {
		// A damaged bounds record is no reason to keep the entries.
		b = logBounds{first: 1, last: logIndexMax}
	}
	if b.last == 0 {
		return nil
	}
	return g.DeleteRange(1, logIndexMax)
}

// submit hands r to the writer and waits for its answer. r.done, if set,
// must be empty (a reused request: the writer answers each once, and a
// request is reused only after its answer or once the writer stopped).
func (nl *nodeLog) submit(r *logReq) error {
	if r.done == nil {
		r.done = make(chan error, 1)
	}
	select {
	case nl.reqs <- r:
	case <-nl.stop:
		return errNodeLogClosed
	}
	select {
	case err := <-r.done:
		return err
	case <-nl.done:
		// The writer stopped; it may have finished r on its way out.
		select {
		case err := <-r.done:
			return err
		default:
			return errNodeLogClosed
		}
	}
}

var errNodeLogClosed = errors.New("raftnode: raft log closed")

// run is the writer: it takes the first waiting request and every append
// queued behind it, commits the appends in one transaction, and runs
// removals on their own, in the order they came. While the log is busy it
// lingers for more appends before a small commit (linger).
func (nl *nodeLog) run() {
	defer close(nl.done)
	var batch []*logReq
	var logs []*raft.Log
	var lastCommit time.Time
	lastAppends := 0
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for {
		var next *logReq
		select {
		case next = <-nl.reqs:
		case <-nl.stop:
			return
		}
		for next != nil {
			if next.del {
				next.done <- next.g.remove(next.delFirst, next.delLast)
				next = nil
				break
			}
			batch = append(batch[:0], next)
			next = nil
		drain:
			for {
				select {
				case r := <-nl.reqs:
					if r.del {
						next = r // after this batch
						break drain
					}
					batch = append(batch, r)
				default:
					break drain
				}
			}
			if next == nil && lingerWorthIt(len(batch), lastAppends, time.Since(lastCommit)) {
				next = nl.linger(linger, &batch)
			}
			var err error
			logs, err = nl.append(batch, logs[:0])
			lastCommit, lastAppends = time.Now(), len(batch)
			for _, r := range batch {
				r.done <- err
			}
			clear(logs) // drop the references to raft's entries
		}
	}
}

// A commit of the node log costs the same whether it carries one group's
// append or many, so while the log is busy the writer waits up to
// nodeLogLinger for more appends before committing fewer than
// nodeLogLingerAppends (docs/PERFORMANCE.md, "The node log lingers"). Busy
// means the previous commit ended less than nodeLogBusyGap ago and carried
// more than one append: with a few clients each commit carries one, and a
// linger would only add its millisecond to every request.
const (
	nodeLogLinger        = time.Millisecond
	nodeLogLingerAppends = 8
	nodeLogBusyGap       = 5 * time.Millisecond
)

// lingerWorthIt reports whether the writer should linger before committing
// n appends, the previous commit having carried last appends and ended
// since ago.
func lingerWorthIt(n, last int, since time.Duration) bool {
	return n < nodeLogLingerAppends && last > 1 && since < nodeLogBusyGap
}

// linger adds appends to batch until it holds nodeLogLingerAppends or
// nodeLogLinger has passed. A removal ends it: linger returns it, for run
// to execute after this batch, as it would have without lingering.
func (nl *nodeLog) linger(t *time.Timer, batch *[]*logReq) *logReq {
	t.Reset(nodeLogLinger)
	defer t.Stop() // Go 1.23 timers: Stop also drains, so Reset starts clean
	for len(*batch) < nodeLogLingerAppends {
		select {
		case r := <-nl.reqs:
			if r.del {
				return r
			}
			*batch = append(*batch, r)
		case <-t.C:
			return nil
		case <-nl.stop:
			return nil // commit what we have; run sees stop next
		}
	}
	return nil
}

// append writes the entries of batch in one transaction, with the bounds
// record of each group whose append changes more than its last index
// (nodeLog's comment), then publishes the bounds.
func (nl *nodeLog) append(batch []*logReq, logs []*raft.Log) ([]*raft.Log, error) {
	type update struct {
		g      *groupLog
		b      logBounds
		record bool // the bounds record must be written
	}
	var room [8]update // the groups of a commit, mostly few
	updates := room[:0]
	n := 0
	for _, r := range batch {
		n += len(r.logs)
	}
	if cap(nl.copies) < n {
		nl.copies = make([]raft.Log, n)
	}
	copies := nl.copies[:n]
	defer clear(copies) // raft's data is not ours to keep
	for _, r := range batch {
		u := -1
		for i := range updates {
			if updates[i].g == r.g {
				u = i
			}
		}
		if u < 0 {
			first, last := r.g.bounds()
			rec := r.g.recorded
			// A removal's range stays in the record until a write clears
			// it: left there, the next start would delete what was
			// appended since.
			record := rec.delFirst != 0 || rec.delLast != 0 || rec.first != first
			updates = append(updates, update{g: r.g, b: logBounds{first: first, last: last}, record: record})
			u = len(updates) - 1
		}
		b := &updates[u].b
		for _, l := range r.logs {
			if b.last == 0 || l.Index != b.last+1 {
				// The first entry of an empty group, a gap or an
				// overwrite: no longer one run past the recorded last.
				updates[u].record = true
			}
			if b.last == 0 {
				b.first, b.last = l.Index, l.Index
			}
			b.first, b.last = min(b.first, l.Index), max(b.last, l.Index)
			c := &copies[0]
			copies = copies[1:]
			*c = *l
			c.Index = r.g.key(l.Index)
			logs = append(logs, c)
		}
	}
	for _, u := range updates {
		if u.record {
			logs = append(logs, u.g.boundsLog(u.b))
		}
	}
	if err := nl.store.StoreLogs(logs); err != nil {
		return logs, err
	}
	for _, u := range updates {
		if u.record {
			u.g.recorded = u.b
		}
		u.g.setBounds(u.b.first, u.b.last)
	}
	if nl.observe != nil {
		nl.observe(len(batch))
	}
	return logs, nil
}

// groupLog is one group's view of the node log: a raft.LogStore.
type groupLog struct {
	nl   *nodeLog
	id   uint32
	base uint64

	// mu guards first, last and appendEnd.
	mu          sync.RWMutex
	first, last uint64 // 0, 0: empty
	// appendEnd is closed when the append in progress ends; nil when
	// none is (appending).
	appendEnd chan struct{}

	// recorded is the group's bounds record as stored; its last may trail
	// last. Owned by the writer goroutine (set before it sees the group).
	recorded logBounds

	// req is StoreLogs' request, reused while reqBusy is held: raft
	// appends a group's entries from one goroutine, so another append
	// finds it busy only if that ever changes, and then makes its own.
	req     logReq
	reqBusy atomic.Bool
}

func (g *groupLog) key(index uint64) uint64 { return g.base | index }

func (g *groupLog) bounds() (first, last uint64) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.first, g.last
}

func (g *groupLog) setBounds(first, last uint64) {
	g.mu.Lock()
	g.first, g.last = first, last
	g.mu.Unlock()
}

func (g *groupLog) boundsLog(b logBounds) *raft.Log {
	return &raft.Log{Index: g.key(boundsIndex), Type: raft.LogNoop, Data: b.encode()}
}

func (g *groupLog) readBounds() (logBounds, error) {
	var l raft.Log
	err := g.nl.store.GetLog(g.key(boundsIndex), &l)
	if errors.Is(err, raft.ErrLogNotFound) {
		return logBounds{}, nil
	}
	if err != nil {
		return logBounds{}, fmt.Errorf("raftnode: read bounds of group %d: %w", g.id, err)
	}
	return decodeBounds(g.id, l.Data)
}

// FirstIndex is the group's first index, 0 if it has no entries.
func (g *groupLog) FirstIndex() (uint64, error) {
	first, _ := g.bounds()
	return first, nil
}

// LastIndex is the group's last index, 0 if it has no entries.
func (g *groupLog) LastIndex() (uint64, error) {
	_, last := g.bounds()
	return last, nil
}

// GetLog reads entry index of the group.
func (g *groupLog) GetLog(index uint64, l *raft.Log) error {
	first, last := g.bounds()
	if index < first || index > last || last == 0 {
		return raft.ErrLogNotFound
	}
	if err := g.nl.store.GetLog(g.key(index), l); err != nil {
		return err
	}
	l.Index = index
	return nil
}

// StoreLog appends one entry.
func (g *groupLog) StoreLog(l *raft.Log) error { return g.StoreLogs([]*raft.Log{l}) }

// StoreLogs appends entries; it returns once they are on disk, committed
// with whatever other groups appended at the same time.
func (g *groupLog) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	for _, l := range logs {
		// Checked here, so that one group's bad append never fails the
		// others' appends that share its commit.
		if l.Index == 0 || l.Index > logIndexMax {
			return fmt.Errorf("raftnode: group %d: log index %d out of range 1..%d", g.id, l.Index, uint64(logIndexMax))
		}
	}
	done := make(chan struct{})
	g.mu.Lock()
	g.appendEnd = done
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		if g.appendEnd == done {
			g.appendEnd = nil
		}
		g.mu.Unlock()
		close(done)
	}()
	if !g.reqBusy.CompareAndSwap(false, true) {
		return g.nl.submit(&logReq{g: g, logs: logs})
	}
	defer g.reqBusy.Store(false)
	r := &g.req
	if r.done == nil {
		r.done = make(chan error, 1)
	}
	r.g, r.logs = g, logs
	err := g.nl.submit(r)
	r.logs = nil // raft's entries are not ours to keep
	return err
}

// appending returns a channel closed when the group's append in progress
// ends, or nil if none is in progress. On a leader the append is raft's
// leader loop writing entries it took from its queue (the proposer waits
// for it: proposer.go).
func (g *groupLog) appending() <-chan struct{} {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.appendEnd
}

// DeleteRange removes the entries [min, max].
func (g *groupLog) DeleteRange(min, max uint64) error {
	if min > max {
		return nil
	}
	return g.nl.submit(&logReq{g: g, del: true, delFirst: min, delLast: max})
}

// remove runs on the writer: it writes the bounds that hold once
// [lo, hi] is gone, with the range to delete, then deletes it. A crash
// in between leaves the range to the next start (nodeLog.group).
func (g *groupLog) remove(lo, hi uint64) error {
	hi = min(hi, logIndexMax)
	lo = max(lo, 1)
	if lo > hi {
		return nil
	}
	first, last := g.bounds()
	b := logBounds{first: first, last: last, delFirst: lo, delLast: hi}
	switch {
	case last == 0:
	case lo <= first && hi >= last:
		b.first, b.last = 0, 0
	case lo <= first && hi >= first:
		b.first = hi + 1
	case hi >= last && lo <= last:
		b.last = lo - 1
	}
	if err := g.nl.store.StoreLogs([]*raft.Log{g.boundsLog(b)}); err != nil {
		return err
	}
	g.recorded = b
	// Readers stop seeing the range before it goes.
	g.setBounds(b.first, b.last)
	return g.nl.store.DeleteRange(g.key(lo), g.key(hi))
}
