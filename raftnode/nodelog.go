package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
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
// (docs/PERFORMANCE-SHAPE.md, "The node log").
//
// Layout: one key sequence for every group, from seqBase up. Each commit
// writes, at the sequence's next key, a commit record naming its spans
// (group, first raft index, count), and the commit's entries right after
// it in span order; the next commit's record follows its last entry. So a
// commit touches one leaf of the tree (and the branch above it) however
// many groups it carries: with a key range per group it touched a leaf and
// a branch page per group, and bbolt's element arrays for those branch
// pages were half the bytes a loaded node allocated (docs/
// PERFORMANCE-JOURNAL.md, "One key sequence for the node log, measured end
// to end"). An entry's key is its place in the sequence; a group reads its
// entries through its runs, in memory: raft indexes [first, first+n) at
// keys key..key+n-1. A commit's entries are packed in one value at the
// key after its record (nodelog_pack.go), so the keys past it up to the
// next record hold nothing; commits written before packs (their records'
// version says so) keep theirs one to a key, with Index = the key.
//
// A start walks the commit records from the floor (a record at
// floorKey; absent: seqBase) to the first key that holds nothing, and
// replays the spans by raft's own rule for an append: a span of group g at
// index i drops g's entries from i on and adds its own. So a conflict's
// truncation (raft truncates a suffix only right before it appends at its
// start) needs no record: lost in a crash, the truncated entries come back
// as they were, a state the replica had already acknowledged, and the
// append that followed, if it is on disk, truncates them again.
//
// Removals that raft must find done after a crash are records, not key
// ranges: each group keeps a bounds record at g<<48 | boundsIndex, written
// before raft is answered. A prefix removal (compaction) records the
// group's floor, below which its entries are gone; a removal of the whole
// log (a snapshot's install, DropGroup) records the sequence key at which
// the group starts afresh (reset): spans in commit records below it are
// void for the group, so a group added again never finds its old entries.
//
// The cleaner (nodelog_clean.go) deletes sequence keys. A group's entry is
// live while it is in the group's runs (past its floor and reset; a group
// not opened in this process is live as its walked spans and its bounds
// record say). The floor is the oldest commit record with a live entry
// (next if none): the writer, after a removal moved a group's floor or
// reset, writes the floor record on its own, durably, if the floor moved
// at least cleanerTuning.minStep keys, and then deletes the keys below it
// with DeleteRange, a chunk between two requests. A crash in between
// leaves keys below the floor: a start never reads them (its walk begins
// at the floor) and its writer deletes them all in one step. An idle group
// would pin the floor for ever (raft keeps its trailing entries): when the
// group of the oldest live commit would free at least minStep keys, and
// 16 times what it copies, by having its live entries below the next group's
// oldest commit copied forward (the catalog's few, the usual case), or
// when the floor lies more than copyAfter keys behind next and the live
// entries are fewer than half of those keys, the writer copies the live
// entries of the oldest commits forward, a chunk between two requests,
// each chunk a commit of its own whose span has kind "copy": a copy span replaces
// exactly its range of the group's entries and truncates nothing past it
// (nodelog_clean.go says why a copy never brings back a removed entry).
// Copies break the order of index and commit, so a crash after a suffix
// removal with no record may bring back only the part of it whose commits
// lie past the floor; a start drops what lies past a gap (dropAfterGap):
// a prefix of the removed suffix comes back, which raft allows as it
// allows the whole.
//
// So a start walks the commit records between the floor and next: the
// live entries, the commits that hold them and whatever was appended
// since the cleaner last ran; while no copy is due, at most copyAfter keys
// (2^18 entries and records) or twice the live entries, whichever is
// more, plus what was appended since the last removal or copy (a floor
// waits for a removal, or for copyAfter/4 keys of appends). The copies
// cost at most one written entry for each key they free, so they at most
// double the log's writes.
//
// Logs written before the sequence (entry i of group g at g<<48 | i) are
// read as they were: the bounds record's first four fields name the
// group's legacy entries (their first and last index; appends that only
// extended the log did not update the last, found from the entries:
// findLast) and a removal that may not have finished, and the group's
// legacy entries become its first run. New appends never go to legacy
// keys; a prefix or whole-log removal that covers legacy entries records
// them in the bounds record's removal range and deletes them by key range
// after the record is written (a crash in between leaves the range to the
// next start). The bounds record now has two more fields (floor, reset):
// a seatd from before the sequence refuses it (its length), so a node
// cannot go back to an older binary once it ran this one.
//
// A group's stable store (current term, vote) stays in its own
// group-N/raft.db: it is written only on elections.

const (
	logIndexBits = 48
	// logIndexMax is the largest raft index a group may use.
	logIndexMax = 1<<logIndexBits - 2
	// boundsIndex is the index of the group's bounds record.
	boundsIndex = 1<<logIndexBits - 1
	// maxGroupID is the largest group id the node log holds: the legacy
	// keys g<<48 | i stay below seqBase.
	maxGroupID = 1<<(62-logIndexBits) - 2
	// seqBase is the first key of the sequence.
	seqBase = uint64(1) << 62
	// floorKey holds the sequence's floor: the key of its first commit
	// record (absent: seqBase), written by the cleaner. It lies below
	// seqBase (it is the bounds key of group maxGroupID+1, which no group
	// uses), so that the store's last key is the sequence's last: a start
	// checks that nothing lies past the last commit's entries.
	floorKey = seqBase - 1
)

// cleanerTuning is the cleaner's: tests shrink it; a node log copies it
// when it opens.
type cleanerTuning struct {
	// minStep: the floor moves only this many keys at least, so that each
	// move (a floor record, an fsync, and the deletes' fsyncs) frees
	// enough keys to pay for itself.
	minStep uint64
	// deleteChunk: keys one DeleteRange removes below the floor; the
	// writer runs one chunk between its requests.
	deleteChunk uint64
	// copyAfter: when the floor lies more than this many keys behind
	// next, and the live entries are fewer than half of those keys, the
	// oldest live entries are copied forward (copyStep), whatever their
	// groups; one group pinning the floor is copied sooner (clean).
	copyAfter uint64
	// copyChunk: entries one copy commit carries.
	copyChunk uint64
}

var nodeLogCleaner = cleanerTuning{minStep: 1 << 14, deleteChunk: 8 << 10, copyAfter: 1 << 18, copyChunk: 256}

// logBounds is a group's bounds record. first, last: its legacy entries
// (0, 0: none); [delFirst, delLast]: a removal of legacy entries that may
// not have finished (0, 0: none); floor: raft indexes below it are gone;
// reset: spans in commit records at keys below it are void for the group
// (0: none).
type logBounds struct {
	first, last       uint64
	delFirst, delLast uint64
	floor, reset      uint64
}

const (
	boundsBytesV1 = 4*8 + 4 // before the sequence: four indexes and a CRC-32C
	boundsBytes   = 6*8 + 4 // six fields and a CRC-32C
)

func (b logBounds) encode() []byte {
	buf := make([]byte, boundsBytes)
	for i, v := range [...]uint64{b.first, b.last, b.delFirst, b.delLast, b.floor, b.reset} {
		binary.BigEndian.PutUint64(buf[8*i:], v)
	}
	binary.BigEndian.PutUint32(buf[48:], crc32.Checksum(buf[:48], castagnoli))
	return buf
}

// decodeBounds reads a bounds record of either length (a record from
// before the sequence has floor and reset 0).
func decodeBounds(group uint32, data []byte) (logBounds, error) {
	n := len(data) - 4
	if (len(data) != boundsBytes && len(data) != boundsBytesV1) || crc32.Checksum(data[:n], castagnoli) != binary.BigEndian.Uint32(data[n:]) {
		return logBounds{}, fmt.Errorf("%w: the bounds record of group %d fails its checksum", ErrCorruptLog, group)
	}
	b := logBounds{
		first:    binary.BigEndian.Uint64(data[0:]),
		last:     binary.BigEndian.Uint64(data[8:]),
		delFirst: binary.BigEndian.Uint64(data[16:]),
		delLast:  binary.BigEndian.Uint64(data[24:]),
	}
	if len(data) == boundsBytes {
		b.floor = binary.BigEndian.Uint64(data[32:])
		b.reset = binary.BigEndian.Uint64(data[40:])
	}
	if b.first > b.last || b.last > logIndexMax || (b.first == 0) != (b.last == 0) {
		return logBounds{}, fmt.Errorf("%w: group %d has impossible bounds [%d, %d]", ErrCorruptLog, group, b.first, b.last)
	}
	if b.floor > logIndexMax+1 || (b.reset != 0 && (b.reset < seqBase || b.reset == math.MaxUint64)) {
		return logBounds{}, fmt.Errorf("%w: group %d has an impossible floor %d or reset %#x", ErrCorruptLog, group, b.floor, b.reset)
	}
	return b, nil
}

// A commit record: a version byte, the number of spans (uint32), the spans
// (a kind byte, the group uint32, the first raft index uint64, the count
// uint32), a CRC-32C of all before it; big-endian. Version
// commitEntryKeys: the commit's entries lie one to a key after the record;
// commitPacked: they lie in one value, the pack, at the key after it
// (nodelog_pack.go). Only packed commits are written now; a seatd from
// before them refuses a log that holds one (the version).
const (
	commitEntryKeys = 1
	commitPacked    = 2
	commitHeadBytes = 1 + 4
	commitSpanBytes = 1 + 4 + 8 + 4
	// spanAppend is an append (raft's rule: it drops the group's entries
	// from its first index on).
	spanAppend = 0
	// spanCopy is the cleaner's copy of live entries: it replaces exactly
	// its range of the group's entries, and drops nothing past it.
	spanCopy = 1
)

// commitSpan is one span of a commit record.
type commitSpan struct {
	kind  byte
	group uint32
	first uint64
	count uint32
}

// appendCommitRecord appends the encoded record of a packed commit of
// spans to buf.
func appendCommitRecord(buf []byte, spans []commitSpan) []byte {
	return appendCommitRecordVersion(buf, commitPacked, spans)
}

// appendCommitRecordVersion appends the record of spans, of version v, to
// buf.
func appendCommitRecordVersion(buf []byte, v byte, spans []commitSpan) []byte {
	start := len(buf)
	buf = append(buf, v)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(spans)))
	for _, s := range spans {
		buf = append(buf, s.kind)
		buf = binary.BigEndian.AppendUint32(buf, s.group)
		buf = binary.BigEndian.AppendUint64(buf, s.first)
		buf = binary.BigEndian.AppendUint32(buf, s.count)
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf[start:], castagnoli))
}

// decodeCommitRecord calls span for each span of the record in data, in
// order, and returns the number of entries the commit holds and whether
// they are packed. It refuses (ErrCorruptLog) a record that fails its
// checksum or names an impossible span.
func decodeCommitRecord(data []byte, span func(commitSpan)) (uint64, bool, error) {
	if len(data) < commitHeadBytes+4 {
		return 0, false, fmt.Errorf("%w: a commit record of %d bytes", ErrCorruptLog, len(data))
	}
	n := len(data) - 4
	if crc32.Checksum(data[:n], castagnoli) != binary.BigEndian.Uint32(data[n:]) {
		return 0, false, fmt.Errorf("%w: a commit record fails its checksum", ErrCorruptLog)
	}
	if data[0] != commitEntryKeys && data[0] != commitPacked {
		return 0, false, fmt.Errorf("%w: a commit record of version %d", ErrCorruptLog, data[0])
	}
	count := uint64(binary.BigEndian.Uint32(data[1:]))
	if uint64(n-commitHeadBytes) != count*commitSpanBytes {
		return 0, false, fmt.Errorf("%w: a commit record of %d bytes names %d spans", ErrCorruptLog, len(data), count)
	}
	var total uint64
	for p := commitHeadBytes; p < n; p += commitSpanBytes {
		s := commitSpan{
			kind:  data[p],
			group: binary.BigEndian.Uint32(data[p+1:]),
			first: binary.BigEndian.Uint64(data[p+5:]),
			count: binary.BigEndian.Uint32(data[p+13:]),
		}
		if s.kind > spanCopy || s.group > maxGroupID || s.count == 0 || s.first == 0 || s.first > logIndexMax || uint64(s.count)-1 > logIndexMax-s.first {
			return 0, false, fmt.Errorf("%w: a commit record names an impossible span (kind %d, group %d, %d entries from %d)", ErrCorruptLog, s.kind, s.group, s.count, s.first)
		}
		total += uint64(s.count)
		if span != nil {
			span(s)
		}
	}
	return total, data[0] == commitPacked, nil
}

// logRun is a run of a group's entries: raft indexes [first, first+n) at
// keys key..key+n-1, written by the commit whose record is at key rec (0:
// legacy keys); packed: that commit's entries are packed (nodelog_pack.go).
type logRun struct {
	first, n, key, rec uint64
	packed             bool
}

// loc returns where the run's entry index lies.
func (r logRun) loc(index uint64) logLoc {
	return logLoc{key: r.key + index - r.first, rec: r.rec, packed: r.packed}
}

func (r logRun) end() uint64 { return r.first + r.n }

// searchRuns returns the first run of runs (sorted, disjoint) that ends
// past index, or len(runs).
func searchRuns(runs []logRun, index uint64) int {
	lo, hi := 0, len(runs)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if runs[m].end() > index {
			hi = m
		} else {
			lo = m + 1
		}
	}
	return lo
}

// truncateRuns drops the entries from index i on.
func truncateRuns(runs []logRun, i uint64) []logRun {
	k := searchRuns(runs, i)
	if k < len(runs) && runs[k].first < i {
		runs[k].n = i - runs[k].first
		k++
	}
	return runs[:k]
}

// cutRuns drops the entries below index i.
func cutRuns(runs []logRun, i uint64) []logRun {
	runs = runs[searchRuns(runs, i):]
	if len(runs) > 0 && runs[0].first < i {
		d := i - runs[0].first
		runs[0].first, runs[0].key, runs[0].n = i, runs[0].key+d, runs[0].n-d
	}
	return runs
}

// appendRun applies raft's rule for an append: r drops the entries from
// its first index on, and follows what is left.
func appendRun(runs []logRun, r logRun) []logRun {
	runs = truncateRuns(runs, r.first)
	if k := len(runs) - 1; k >= 0 && runs[k].end() == r.first && runs[k].key+runs[k].n == r.key && runs[k].rec == r.rec {
		runs[k].n += r.n
		return runs
	}
	return append(runs, r)
}

// replaceRun applies a copy span: r replaces exactly the entries
// [r.first, r.end()), and what follows stays.
func replaceRun(runs []logRun, r logRun) []logRun {
	tail := cutRuns(append([]logRun(nil), runs...), r.end())
	runs = append(truncateRuns(runs, r.first), r)
	return append(runs, tail...)
}

// applySpan applies a span of kind to runs.
func applySpan(runs []logRun, kind byte, r logRun) []logRun {
	if kind == spanCopy {
		return replaceRun(runs, r)
	}
	return appendRun(runs, r)
}

// removeRuns drops the entries [lo, hi].
func removeRuns(runs []logRun, lo, hi uint64) []logRun {
	var tail []logRun
	if hi < logIndexMax {
		tail = cutRuns(append([]logRun(nil), runs...), hi+1)
	}
	return append(truncateRuns(runs, lo), tail...)
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
	// observeClean, if set, is told each step of the cleaner, what it
	// took and the error that stopped the cleaner if it failed (metrics).
	observeClean func(step string, took time.Duration, err error)
	// logFloor, if set, is told each move of the floor: the keys it
	// passed, and the entries copied forward since the start.
	logFloor func(keys, copied uint64)
	// packs keeps the last pack read (nodelog_pack.go).
	packs packCache
	// checkedBelow: the packed commits whose records lie below it were
	// verified when the log opened (walk), their entries too; 0:
	// none was. Set before the writer starts.
	checkedBelow uint64

	// next is the key of the next commit record; owned by the writer
	// (set before it starts).
	next uint64
	// unsure is set when a commit failed: its transaction may be on disk
	// all the same (an fsync that failed after bbolt wrote its meta page),
	// and a start would find its keys past the next commit's. settle
	// deletes them before the writer's next change. Owned by the writer.
	unsure bool
	// spans, record, recordData, pack, packData and packLogs are
	// append's, reused by the writer.
	spans      []logSpan
	record     raft.Log
	recordData []byte
	encSpans   []commitSpan
	pack       raft.Log
	packData   []byte
	packLogs   []*raft.Log

	// The cleaner's state, owned by the writer (set before it starts).
	tune cleanerTuning
	// floor is the floor record's key (seqBase if none): the oldest
	// commit record a start reads.
	floor uint64
	// swept: the keys [seqBase, swept) are deleted; sweepAll: a start
	// does not know what lies below the floor, and deletes it all at once.
	swept    uint64
	sweepAll bool
	// cleanDue: a removal moved a group's floor or reset; the cleaner
	// looks for a new floor.
	cleanDue bool
	// copyBelow: the cleaner is copying live entries of commits below it
	// forward (0: not copying); copyCheck: the next key at which it looks
	// again whether copying is worth it.
	copyBelow, copyCheck uint64
	// copyGroup is the group the cleaner copied last (nil: none).
	copyGroup *groupLog
	// copySrc is copyStep's runs to copy, reused.
	copySrc []logRun
	// tidyErr stops the cleaner after a failure until the next removal.
	tidyErr error
	// floorMoves and copied count the floor records written and the
	// entries copied forward (tests).
	floorMoves, copied uint64
	// room keeps written blocks ahead of bbolt's pages (nodelog_room.go);
	// owned by the writer.
	room *logRoom

	// mu guards groups and walked. group writes to the store under it, the
	// only write not made by the writer, so the room (which writes the
	// store's file past bbolt's pages) takes it too.
	mu sync.Mutex
	// groups is every group opened in this process: the writer updates
	// their runs live, so a group is opened once.
	groups map[uint32]*groupLog
	// walked is the runs of the commit records a start walked, of the
	// groups not opened since.
	walked map[uint32][]logRun
}

// logSpan is a span of a commit being written.
type logSpan struct {
	g        *groupLog
	first, n uint64
	key      uint64
}

// logReq is an append (logs), a removal of [delFirst, delLast], or a
// request to finish the cleaner's and the room's pending work (tidy:
// tests).
type logReq struct {
	g                 *groupLog
	logs              []*raft.Log
	del, tidy         bool
	delFirst, delLast uint64
	done              chan error
}

// openNodeLog opens (creating) the node log at path.
func openNodeLog(path string) (*nodeLog, error) { return openNodeLogChecked(path, nil) }

// openNodeLogChecked opens (creating) the node log at path; if check is
// set, its start verifies every packed commit's pack and check(index,
// entry) of each entry in it (walk): a node's start, whose groups' entries
// are sealed (checkedLogs).
func openNodeLogChecked(path string, check func(index uint64, l *raft.Log) error) (*nodeLog, error) {
	// NoSync false: an acknowledged entry is on disk on a quorum.
	// NoFreelistSync: a commit does not write bbolt's list of free pages
	// (etcd's setting); opening rebuilds it by scanning the file. The
	// hash-map freelist finds free pages without a sorted array's copies,
	// which matter once raft's compactions have freed many.
	// OpenFile keeps bbolt's file for the room (nodelog_room.go).
	var file *os.File
	openFile := func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag, perm)
		file = f
		return f, err
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: path, NoSync: false,
		BoltOptions: &bbolt.Options{Timeout: 0, NoFreelistSync: true, FreelistType: bbolt.FreelistMapType, OpenFile: openFile}})
	if err != nil {
		return nil, fmt.Errorf("raftnode: open raft log %s: %w", path, err)
	}
	nl, err := loadNodeLog(store, path, check)
	if err != nil {
		store.Close()
		return nil, err
	}
	nl.room = newLogRoom(file)
	go nl.run()
	return nl, nil
}

// loadNodeLog reads the node log's commit records from store, and with
// check (nil: none) verifies its packs (walk); the caller starts its
// writer (run) if it is to change.
func loadNodeLog(store *raftboltdb.BoltStore, path string, check func(index uint64, l *raft.Log) error) (*nodeLog, error) {
	nl := &nodeLog{store: store, path: path, reqs: make(chan *logReq, 64), stop: make(chan struct{}), done: make(chan struct{}),
		groups: make(map[uint32]*groupLog), walked: make(map[uint32][]logRun), tune: nodeLogCleaner}
	if err := nl.walk(check); err != nil {
		if check != nil && errors.Is(err, ErrCorruptLog) {
			return nil, fmt.Errorf("raftnode: the node refuses to start on a damaged log (%s): %w", path, err)
		}
		return nil, fmt.Errorf("raftnode: raft log %s: %w", path, err)
	}
	return nl, nil
}

// walk reads the commit records from the floor to the first key that
// holds nothing, which is next, and keeps their runs per group. With check
// set it also verifies each packed commit's pack and entries (checkPacked),
// each pack read once, and sets checkedBelow.
func (nl *nodeLog) walk(check func(index uint64, l *raft.Log) error) error {
	key := seqBase
	var l raft.Log
	switch err := nl.store.GetLog(floorKey, &l); {
	case errors.Is(err, raft.ErrLogNotFound):
	case err != nil:
		return fmt.Errorf("read the floor: %w", err)
	default:
		if len(l.Data) != 12 || crc32.Checksum(l.Data[:8], castagnoli) != binary.BigEndian.Uint32(l.Data[8:]) {
			return fmt.Errorf("%w: the floor record fails its checksum", ErrCorruptLog)
		}
		key = binary.BigEndian.Uint64(l.Data)
		if key < seqBase || key == math.MaxUint64 {
			return fmt.Errorf("%w: an impossible floor %#x", ErrCorruptLog, key)
		}
	}
	nl.floor = key
	var spans []commitSpan
	var pack raft.Log // checkPacked's
	for {
		err := nl.store.GetLog(key, &l)
		if errors.Is(err, raft.ErrLogNotFound) {
			break
		}
		if err != nil {
			return fmt.Errorf("read the commit record at %#x: %w", key, err)
		}
		spans = spans[:0]
		n, packed, err := decodeCommitRecord(l.Data, func(s commitSpan) { spans = append(spans, s) })
		if err != nil {
			return fmt.Errorf("the commit record at %#x: %w", key, err)
		}
		at := key + 1
		for _, s := range spans {
			nl.walked[s.group] = applySpan(nl.walked[s.group], s.kind, logRun{first: s.first, n: uint64(s.count), key: at, rec: key, packed: packed})
			at += uint64(s.count)
		}
		if packed && check != nil {
			if err := nl.checkPacked(key, n, spans, &pack, check); err != nil {
				return err
			}
		}
		key += 1 + n
	}
	nl.next = key
	if check != nil {
		nl.checkedBelow = key
	}
	nl.swept, nl.sweepAll = seqBase, nl.floor > seqBase
	nl.copyCheck = nl.next
	// Nothing lies past the last record (the floor record lies below the
	// sequence): a record lost in the middle would otherwise hide the
	// commits after it.
	last, err := nl.store.LastIndex()
	if err != nil {
		return err
	}
	if last >= nl.next {
		return fmt.Errorf("%w: key %#x lies past the last commit record's entries (%#x)", ErrCorruptLog, last, nl.next)
	}
	return nil
}

// close stops the writer and closes the store; the groups must be closed.
func (nl *nodeLog) close() error {
	close(nl.stop)
	<-nl.done
	return nl.store.Close()
}

// group returns group id's log, the same for an id within a process: the
// first call reads its bounds record and legacy entries (finishing a
// removal a crash interrupted) and its runs from the walked commit
// records.
func (nl *nodeLog) group(id uint32) (*groupLog, error) {
	if id > maxGroupID {
		return nil, fmt.Errorf("raftnode: group id %d is beyond the node log's largest, %d", id, maxGroupID)
	}
	nl.mu.Lock()
	defer nl.mu.Unlock()
	if g := nl.groups[id]; g != nil {
		return g, nil
	}
	g := &groupLog{nl: nl, id: id, base: uint64(id) << logIndexBits}
	b, current, err := g.readBounds()
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
	b.last, b.delFirst, b.delLast = last, 0, 0
	// A group opened for the first time by this layout gets its bounds
	// record in the longer form before it appends anything: a seatd from
	// before the sequence then refuses the log (the record's length)
	// rather than open it without the entries appended since, which it
	// cannot see.
	if !current {
		if err := nl.store.StoreLogs([]*raft.Log{g.boundsLog(b)}); err != nil {
			return nil, fmt.Errorf("raftnode: write the bounds of group %d: %w", id, err)
		}
	}
	nl.adopt(g, b)
	return g, nil
}

// adopt sets g's bounds record to b and builds its runs: its legacy
// entries, then the walked spans at or past b.reset by the append rule,
// then cut below b.floor and past a gap (dropAfterGap); and keeps g as
// the group's log.
func (nl *nodeLog) adopt(g *groupLog, b logBounds) {
	g.recorded = b
	var runs []logRun
	if b.first > 0 {
		runs = append(runs, logRun{first: b.first, n: b.last - b.first + 1, key: g.key(b.first)})
	}
	for _, r := range nl.walked[g.id] {
		// walked holds every span of the group replayed by the append
		// rule. Spans before reset come before those at or past it, and
		// never change which of the later ones' entries survive, so
		// dropping the earlier ones' runs here is replaying the later ones
		// alone; and the later span with the lowest first index survives,
		// so the legacy entries are cut where that replay would cut them.
		// Copy spans keep this true: a copy replaces its range alone, and
		// copies only live sequence entries, which lie past the group's
		// legacy ones (every append span cut the legacy entries from its
		// first index on).
		if r.rec >= b.reset {
			runs = appendRun(runs, r)
		}
	}
	g.runs = dropAfterGap(cutRuns(runs, b.floor))
	delete(nl.walked, g.id)
	nl.groups[g.id] = g
}

// dropAfterGap drops the runs past the first gap between them. A group's
// log is contiguous (raft sees a monotonic store, checklog.go: after a
// snapshot's install it removes the whole log, and it appends at its last
// index + 1, so it leaves no gap); the replay can leave a gap only past it, among the
// entries of suffix removals that have no record: those in commits that
// the floor passed are gone, those in later commits come back (the
// cleaner's copies break the order of index and commit). Any prefix of a
// removed suffix is a state raft allows, as the whole suffix is (nodeLog's
// comment): what lies past the gap goes, and the log stays contiguous.
func dropAfterGap(runs []logRun) []logRun {
	for k := 1; k < len(runs); k++ {
		if runs[k].first != runs[k-1].end() {
			return runs[:k]
		}
	}
	return runs
}

// findLast returns the group's last legacy index: the end of the run of
// legacy entries that follows the recorded last b.last (appends before the
// sequence extended the log by last+1 without a record). It doubles its
// step past b.last until it finds no entry, then halves back: O(log n)
// reads for n entries appended since the bounds were written. The entries
// at b.first and b.last must exist.
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

// stored reports whether the store holds legacy entry index of the group.
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
// (no replica of it may be open): it records that the group starts afresh
// at the sequence's next key and deletes its legacy entries.
func (nl *nodeLog) wipe(id uint32) error {
	if id > maxGroupID {
		return nil // the node log cannot hold it
	}
	g, err := nl.group(id)
	if err != nil {
		// A damaged bounds record or log is no reason to keep the
		// entries: remove every legacy key the group may have, and void
		// its spans.
		nl.mu.Lock()
		g = nl.groups[id]
		if g == nil {
			g = &groupLog{nl: nl, id: id, base: uint64(id) << logIndexBits}
			nl.adopt(g, logBounds{first: 1, last: logIndexMax})
		}
		nl.mu.Unlock()
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
		if nl.backgroundPending() {
			// The cleaner's and the room's work goes one bounded step at a
			// time, between requests.
			select {
			case next = <-nl.reqs:
			case <-nl.stop:
				return
			default:
				nl.background()
				continue
			}
		} else {
			select {
			case next = <-nl.reqs:
			case <-nl.stop:
				return
			}
		}
		for next != nil {
			if next.tidy {
				nl.room.lookNext() // the room measured from bbolt's pages now
				for nl.backgroundPending() {
					nl.background()
				}
				next.done <- nl.tidyErr
				next = nil
				break
			}
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
					if r.del || r.tidy {
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
			nl.room.committed()
			for _, r := range batch {
				r.done <- err
			}
			clear(logs) // drop the references to raft's entries
		}
		if nl.backgroundPending() {
			nl.background()
		}
	}
}

// backgroundPending reports whether the cleaner or the room has work.
func (nl *nodeLog) backgroundPending() bool { return nl.room.due() || nl.tidyPending() }

// background runs one step of the room's work if it has any, else of the
// cleaner's.
func (nl *nodeLog) background() {
	if !nl.room.due() {
		nl.tidy()
		return
	}
	start := time.Now()
	nl.mu.Lock() // group's bounds record is the only write not the writer's
	err := nl.room.step()
	nl.mu.Unlock()
	if nl.observeClean != nil {
		nl.observeClean(cleanRoom, time.Since(start), err)
	}
}

// A commit of the node log costs the same whether it carries one group's
// append or many, so while the log is busy the writer waits up to
// nodeLogLinger for more appends before committing fewer than
// nodeLogLingerAppends (docs/PERFORMANCE-SHAPE.md, "The node log lingers"). Busy
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
			if r.del || r.tidy {
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

// settle deletes whatever a failed commit may have left at or past next
// (raft was told it failed: none of it was acknowledged).
func (nl *nodeLog) settle() error {
	if !nl.unsure {
		return nil
	}
	nl.packs.put(0, nil, 0)
	if err := nl.store.DeleteRange(nl.next, math.MaxUint64); err != nil {
		return err
	}
	nl.unsure = false
	return nil
}

// append writes the entries of batch in one transaction: the commit
// record at next, then the entries, in span order, packed at the key after
// it; then it adds the runs to the groups.
func (nl *nodeLog) append(batch []*logReq, logs []*raft.Log) ([]*raft.Log, error) {
	if err := nl.settle(); err != nil {
		return logs, err
	}
	rec := nl.next
	key := rec + 1
	spans := nl.spans[:0]
	entries := nl.packLogs[:0]
	for _, r := range batch {
		for _, l := range r.logs {
			// A request splits into spans at any discontinuity.
			if k := len(spans) - 1; k >= 0 && spans[k].g == r.g && spans[k].first+spans[k].n == l.Index && spans[k].n < math.MaxUint32 {
				spans[k].n++
			} else {
				spans = append(spans, logSpan{g: r.g, first: l.Index, n: 1, key: key})
			}
			key++
			entries = append(entries, l)
		}
	}
	nl.spans = spans
	enc := nl.encSpans[:0]
	for _, s := range spans {
		enc = append(enc, commitSpan{kind: spanAppend, group: s.g.id, first: s.first, count: uint32(s.n)})
	}
	nl.encSpans = enc
	logs = nl.packCommit(logs, rec, enc, entries)
	clear(entries) // raft's entries are not ours to keep
	nl.packLogs = entries[:0]
	// An append below a group's recorded floor lowers the floor in the
	// same transaction: a start would cut the span otherwise. Raft makes
	// none (it appends at most at its last index + 1 and never below its
	// first; it starts anew only after a whole-log removal, which clears
	// the floor), so this costs nothing but the check.
	var lowered []logBounds // rare: allocated
	var lowGroups []*groupLog
	for _, s := range spans {
		if b := s.g.recorded; s.first < b.floor {
			i := 0
			for i < len(lowGroups) && lowGroups[i] != s.g {
				i++
			}
			if i == len(lowGroups) {
				lowGroups, lowered = append(lowGroups, s.g), append(lowered, b)
			}
			lowered[i].floor = min(lowered[i].floor, s.first)
		}
	}
	for i, g := range lowGroups {
		logs = append(logs, g.boundsLog(lowered[i]))
	}
	if err := nl.store.StoreLogs(logs); err != nil {
		nl.unsure = true
		return logs, err
	}
	for i, g := range lowGroups {
		g.recorded = lowered[i]
	}
	nl.next = key
	for _, s := range spans {
		s.g.mu.Lock()
		s.g.runs = appendRun(s.g.runs, logRun{first: s.first, n: s.n, key: s.key, rec: rec, packed: true})
		s.g.mu.Unlock()
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
	base uint64 // the group's legacy keys: base | index

	// mu guards runs and appendEnd.
	mu sync.RWMutex
	// runs is the group's entries: sorted, disjoint, none empty.
	runs []logRun
	// appendEnd is closed when the append in progress ends; nil when
	// none is (appending).
	appendEnd chan struct{}

	// recorded is the group's bounds record as the next removal writes it
	// from: its legacy entries as stored (the last as found), its floor
	// and reset. Owned by the writer goroutine (set before it sees the
	// group).
	recorded logBounds

	// req is StoreLogs' request, reused while reqBusy is held: raft
	// appends a group's entries from one goroutine, so another append
	// finds it busy only if that ever changes, and then makes its own.
	req     logReq
	reqBusy atomic.Bool
}

// key is the legacy key of index.
func (g *groupLog) key(index uint64) uint64 { return g.base | index }

func (g *groupLog) bounds() (first, last uint64) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if len(g.runs) == 0 {
		return 0, 0
	}
	return g.runs[0].first, g.runs[len(g.runs)-1].end() - 1
}

// locOf returns where the group's entry index lies.
func (g *groupLog) locOf(index uint64) (logLoc, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	k := searchRuns(g.runs, index)
	if k == len(g.runs) || g.runs[k].first > index {
		return logLoc{}, false
	}
	return g.runs[k].loc(index), true
}

func (g *groupLog) boundsLog(b logBounds) *raft.Log {
	return &raft.Log{Index: g.key(boundsIndex), Type: raft.LogNoop, Data: b.encode()}
}

// readBounds reads g's bounds record (none: all zero), and whether it is
// stored in the form this layout writes (boundsBytes long); false if it
// is older or absent.
func (g *groupLog) readBounds() (b logBounds, current bool, err error) {
	var l raft.Log
	err = g.nl.store.GetLog(g.key(boundsIndex), &l)
	if errors.Is(err, raft.ErrLogNotFound) {
		return logBounds{}, false, nil
	}
	if err != nil {
		return logBounds{}, false, fmt.Errorf("raftnode: read bounds of group %d: %w", g.id, err)
	}
	b, err = decodeBounds(g.id, l.Data)
	return b, err == nil && len(l.Data) == boundsBytes, err
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
	loc, ok := g.locOf(index)
	if !ok {
		return raft.ErrLogNotFound
	}
	if err := g.nl.readEntry(loc, l); err != nil {
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
	if len(logs) > math.MaxUint32 {
		return fmt.Errorf("raftnode: group %d: %d entries in one append", g.id, len(logs))
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

// remove runs on the writer. A removal of a prefix records the group's new
// floor; of the whole log, that the group starts afresh at the sequence's
// next key; either is durable before it returns, and the group's legacy
// entries it covers are deleted after the record names them (a crash in
// between leaves them to the next start). A removal of a suffix or the
// middle changes the runs alone: nodeLog's comment says why a crash may
// lose it.
func (g *groupLog) remove(lo, hi uint64) error {
	hi = min(hi, logIndexMax)
	lo = max(lo, 1)
	if lo > hi {
		return nil
	}
	// A reset names next: nothing of a failed commit may lie there.
	if err := g.nl.settle(); err != nil {
		return err
	}
	first, last := g.bounds()
	b := g.recorded
	b.delFirst, b.delLast = 0, 0
	all := last == 0 || (lo <= first && hi >= last)
	switch {
	case last == 0 && b.first == 0:
		return nil // nothing to remove, in memory or on disk
	case all:
		// The legacy entries as stored go, whatever the runs say (a
		// suffix removal leaves them on disk).
		b.delFirst, b.delLast = b.first, b.last
		b.first, b.last = 0, 0
		b.floor, b.reset = 0, g.nl.next
	case lo <= first:
		if hi < first {
			return nil
		}
		b.floor = hi + 1
		if b.first > 0 && b.first <= hi {
			b.delFirst, b.delLast = b.first, min(hi, b.last)
			if hi >= b.last {
				b.first, b.last = 0, 0
			} else {
				b.first = hi + 1
			}
		}
	default:
		// A suffix (raft's conflict), or the middle (raft removes none):
		// after a crash the entries may come back, wholly or, once the
		// cleaner's floor passed some of their commits, up to a gap
		// (dropAfterGap): of a middle removal, what follows it would go
		// too.
		if lo > last {
			return nil
		}
		g.mu.Lock()
		g.runs = removeRuns(g.runs, lo, hi)
		g.mu.Unlock()
		// The group's oldest live commit may have gone with them: the
		// cleaner looks for the floor again (without it, the floor stayed
		// behind until the next compaction; seen by the model test, one
		// run in tens, under load).
		g.nl.cleanDue = true
		return nil
	}
	if err := g.nl.store.StoreLogs([]*raft.Log{g.boundsLog(b)}); err != nil {
		return err
	}
	g.nl.cleanDue, g.nl.tidyErr = true, nil
	g.recorded = b
	g.recorded.delFirst, g.recorded.delLast = 0, 0
	// Readers stop seeing the entries before any goes.
	g.mu.Lock()
	if all {
		g.runs = nil
	} else {
		g.runs = cutRuns(g.runs, b.floor)
	}
	g.mu.Unlock()
	if b.delLast > 0 {
		return g.nl.store.DeleteRange(g.key(b.delFirst), g.key(b.delLast))
	}
	return nil
}
