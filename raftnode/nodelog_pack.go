package raftnode

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// A commit's entries packed in one value (commit records of version
// commitPacked): the commit record stays at its key rec, and the entries
// that took keys rec+1..rec+n take the one value at rec+1, the pack. So a
// commit costs raft-boltdb two encodings and two Puts, not one for the
// record and one per entry: raft-boltdb encodes each value with a new
// msgpack encoder and buffer, which was a tenth of the node's allocations
// (docs/PERFORMANCE-JOURNAL.md, "A commit's entries in one value"). A
// start still reads the records alone: the pack is a key of its own.
//
// Layout, big-endian: a version byte (packVersion), the entry count
// (uint32), the entries, and a CRC-32C of all before it. An entry: its
// term (uint64), its type (a byte), when it was appended (Unix
// nanoseconds, int64; packNoTime for none), the lengths of its data and
// its extensions (uint32 each), then the data and the extensions. An
// entry's index is its key, as with entries stored one to a key; the
// group's runs map it to the raft index.
const (
	packVersion   = 1
	packHeadBytes = 1 + 4
	packEntryHead = 8 + 1 + 8 + 4 + 4
	// packNoTime is an entry's AppendedAt when it has none.
	packNoTime = math.MinInt64
)

// appendPack appends the pack of logs to buf.
func appendPack(buf []byte, logs []*raft.Log) []byte {
	start := len(buf)
	buf = append(buf, packVersion)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(logs)))
	for _, l := range logs {
		at := int64(packNoTime)
		if !l.AppendedAt.IsZero() {
			at = l.AppendedAt.UnixNano()
		}
		buf = binary.BigEndian.AppendUint64(buf, l.Term)
		buf = append(buf, byte(l.Type))
		buf = binary.BigEndian.AppendUint64(buf, uint64(at))
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(l.Data)))
		buf = binary.BigEndian.AppendUint32(buf, uint32(len(l.Extensions)))
		buf = append(buf, l.Data...)
		buf = append(buf, l.Extensions...)
	}
	return binary.BigEndian.AppendUint32(buf, crc32.Checksum(buf[start:], castagnoli))
}

// packCommit appends to logs the values of a packed commit at rec, whose
// spans name entries: its record, then its pack. Both are the writer's
// buffers, good until its next commit.
func (nl *nodeLog) packCommit(logs []*raft.Log, rec uint64, spans []commitSpan, entries []*raft.Log) []*raft.Log {
	nl.recordData = appendCommitRecord(nl.recordData[:0], spans)
	nl.record = raft.Log{Index: rec, Type: raft.LogNoop, Data: nl.recordData}
	if cap(nl.packData) > packKeepMax {
		nl.packData = nil // a catching-up follower's large append
	}
	nl.packData = appendPack(nl.packData[:0], entries)
	nl.pack = raft.Log{Index: rec + 1, Type: raft.LogNoop, Data: nl.packData}
	return append(logs, &nl.record, &nl.pack)
}

// packKeepMax bounds the pack buffer the writer keeps from one commit to
// the next.
const packKeepMax = 4 << 20

// checkPack verifies a pack's checksum and layout, and returns how many
// entries it holds; the entries of a checked pack can be read without
// further checks (packEntry).
func checkPack(p []byte) (uint64, error) {
	if len(p) < packHeadBytes+4 {
		return 0, fmt.Errorf("%w: a pack of %d bytes", ErrCorruptLog, len(p))
	}
	end := len(p) - 4
	if crc32.Checksum(p[:end], castagnoli) != binary.BigEndian.Uint32(p[end:]) {
		return 0, fmt.Errorf("%w: a pack fails its checksum", ErrCorruptLog)
	}
	if p[0] != packVersion {
		return 0, fmt.Errorf("%w: a pack of version %d", ErrCorruptLog, p[0])
	}
	n := uint64(binary.BigEndian.Uint32(p[1:]))
	at := packHeadBytes
	for range n {
		if end-at < packEntryHead {
			return 0, fmt.Errorf("%w: a pack ends inside an entry", ErrCorruptLog)
		}
		size := uint64(binary.BigEndian.Uint32(p[at+17:])) + uint64(binary.BigEndian.Uint32(p[at+21:]))
		if uint64(end-at-packEntryHead) < size {
			return 0, fmt.Errorf("%w: a pack ends inside an entry", ErrCorruptLog)
		}
		at += packEntryHead + int(size)
	}
	if at != end {
		return 0, fmt.Errorf("%w: a pack has %d bytes past its entries", ErrCorruptLog, end-at)
	}
	return n, nil
}

// packEntry reads entry i of a checked pack into l (all but its Index).
// Its data and extensions are p's bytes, capped: p is never changed.
func packEntry(p []byte, i uint64, l *raft.Log) {
	at := packHeadBytes
	for ; ; i-- {
		size := int(binary.BigEndian.Uint32(p[at+17:])) + int(binary.BigEndian.Uint32(p[at+21:]))
		if i == 0 {
			break
		}
		at += packEntryHead + size
	}
	l.Term = binary.BigEndian.Uint64(p[at:])
	l.Type = raft.LogType(p[at+8])
	l.AppendedAt = time.Time{}
	if ns := int64(binary.BigEndian.Uint64(p[at+9:])); ns != packNoTime {
		l.AppendedAt = time.Unix(0, ns)
	}
	d := at + packEntryHead
	e := d + int(binary.BigEndian.Uint32(p[at+17:]))
	x := e + int(binary.BigEndian.Uint32(p[at+21:]))
	l.Data, l.Extensions = p[d:e:e], nil
	if x > e {
		l.Extensions = p[e:x:x]
	}
}

// packCache keeps the last pack read: raft reads a follower's missing
// entries one index at a time, and the cleaner copies a commit's entries
// one at a time, each of which would otherwise decode the whole pack.
// A pack's key is never written again with other contents while a run
// names it; settle, which deletes what a failed commit may have left,
// empties the cache anyway.
type packCache struct {
	mu   sync.Mutex
	rec  uint64 // the commit whose pack data is (0: none)
	data []byte
	n    uint64 // its entries
}

func (c *packCache) get(rec uint64) ([]byte, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != rec {
		return nil, 0
	}
	return c.data, c.n
}

func (c *packCache) put(rec uint64, data []byte, n uint64) {
	c.mu.Lock()
	c.rec, c.data, c.n = rec, data, n
	c.mu.Unlock()
}

// logLoc is where an entry lies: its key, and the commit record's key
// and kind (rec 0: a legacy key).
type logLoc struct {
	key, rec uint64
	packed   bool
}

// readEntry reads the entry at loc into l; l.Index is its key.
func (nl *nodeLog) readEntry(loc logLoc, l *raft.Log) error {
	if !loc.packed {
		return nl.store.GetLog(loc.key, l)
	}
	p, n := nl.packs.get(loc.rec)
	if p == nil {
		var pl raft.Log
		if err := nl.store.GetLog(loc.rec+1, &pl); err != nil {
			return fmt.Errorf("the pack of the commit at %#x: %w", loc.rec, err)
		}
		var err error
		if n, err = checkPack(pl.Data); err != nil {
			return fmt.Errorf("the pack of the commit at %#x: %w", loc.rec, err)
		}
		p = pl.Data
		nl.packs.put(loc.rec, p, n)
	}
	if i := loc.key - loc.rec - 1; i >= n {
		return fmt.Errorf("%w: the commit at %#x packs %d entries, not entry %d", ErrCorruptLog, loc.rec, n, i)
	}
	packEntry(p, loc.key-loc.rec-1, l)
	l.Index = loc.key
	return nil
}

// checkPacked verifies the pack of the commit at rec, of n entries named
// by spans, and check(index, entry) of each entry, under the raft index its
// span gives it: dead entries too, which a corruption may hit as well as
// live ones. A start runs it for each packed commit as it walks them
// (walk), so each pack is read once; a group then verifies only its
// entries elsewhere (groupLog.verifyAll): read group by group, a pack was
// decoded once for each entry, as a group's entries lie in most commits
// (docs/PERFORMANCE-JOURNAL.md, "A commit's entries in one value").
// pack is the caller's, reused: the decoder reads into its buffer.
func (nl *nodeLog) checkPacked(rec, n uint64, spans []commitSpan, pack *raft.Log, check func(index uint64, l *raft.Log) error) error {
	var e raft.Log
	if err := nl.store.GetLog(rec+1, pack); err != nil {
		return fmt.Errorf("the pack of the commit at %#x: %w", rec, err)
	}
	count, err := checkPack(pack.Data)
	if err == nil && count != n {
		err = fmt.Errorf("%w: a pack of %d entries where its record names %d", ErrCorruptLog, count, n)
	}
	if err != nil {
		return fmt.Errorf("the pack of the commit at %#x: %w", rec, err)
	}
	j := uint64(0)
	for _, s := range spans {
		for i := range uint64(s.count) {
			packEntry(pack.Data, j, &e)
			e.Index = s.first + i
			if err := check(e.Index, &e); err != nil {
				return fmt.Errorf("entry %d of group %d in the commit at %#x: %w", e.Index, s.group, rec, err)
			}
			j++
		}
	}
	return nil
}

// verifyAll reads every entry of the group and verifies it with check,
// but for those of packed commits that the log verified when it opened
// (walk).
func (g *groupLog) verifyAll(check func(index uint64, l *raft.Log) error) error {
	g.mu.RLock()
	runs := slices.Clone(g.runs)
	g.mu.RUnlock()
	var l raft.Log
	for _, r := range runs {
		if r.packed && r.rec < g.nl.checkedBelow {
			continue
		}
		for i := r.first; i < r.end(); i++ {
			if err := g.nl.readEntry(r.loc(i), &l); err != nil {
				return err
			}
			l.Index = i
			if err := check(i, &l); err != nil {
				return err
			}
		}
	}
	return nil
}
