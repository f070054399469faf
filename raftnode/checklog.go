package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// bbolt checksums its meta pages but not the values it stores, so a flipped
// bit in a raft log entry would be replayed into the state machine as if it
// were true. checkedLogs seals every entry at rest with a CRC-32C over its
// index, term, type and data, verifies it on every read, and verifies the
// whole log when a group opens: a replica with a corrupt log refuses to
// start instead of serving or replicating bad data. The trailer exists only
// on disk; entries on the wire and in raft's memory are unchanged.

// ErrCorruptLog is returned for a log entry whose checksum does not match.
var ErrCorruptLog = errors.New("raftnode: corrupt raft log entry")

// logTrailerMagic marks a sealed entry (and the trailer format, version 1).
const logTrailerMagic = 0x534c4331 // "SLC1"

// logTrailerBytes is the trailer: magic then CRC-32C, big-endian.
const logTrailerBytes = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func logSum(l *raft.Log, data []byte) uint32 {
	// The header goes through the table here, byte by byte: crc32 takes
	// its input through a function value, so a header array handed to it
	// escapes, an allocation for every entry written and read. The sum is
	// crc32's: CRC-32C of the header, then of data (TestLogSum).
	crc := ^uint32(0)
	for _, v := range [...]uint64{l.Index, l.Term} {
		for shift := 56; shift >= 0; shift -= 8 {
			crc = castagnoli[byte(crc)^byte(v>>shift)] ^ crc>>8
		}
	}
	crc = castagnoli[byte(crc)^byte(l.Type)] ^ crc>>8
	return crc32.Update(^crc, castagnoli, data)
}

// checkedLogs wraps the bolt log store.
type checkedLogs struct {
	raft.LogStore
	// scratch, if set, is StoreLogs' buffers, reused (a group's): only
	// over a store that keeps no entry it was handed (the node log, which
	// encodes them into its transaction; raft's in-memory store keeps
	// them).
	scratch *sealScratch
}

// sealScratch is the buffers StoreLogs seals entries into, reused while
// busy is held: raft appends a group's entries from one goroutine, so an
// append finds them busy only if that ever changes, and then makes its
// own.
type sealScratch struct {
	busy   atomic.Bool
	buf    []byte
	sealed []raft.Log
	ptrs   []*raft.Log
}

// sealScratchKeepMax bounds the data buffer kept between appends: a
// catching-up follower's large appends get buffers of their own.
const sealScratchKeepMax = 1 << 20

// seal returns l with its data and trailer in buf, which must have room
// for them, and the rest of buf.
func (c checkedLogs) seal(sealed *raft.Log, l *raft.Log, buf []byte) []byte {
	*sealed = *l
	n := copy(buf, l.Data)
	binary.BigEndian.PutUint32(buf[n:], logTrailerMagic)
	binary.BigEndian.PutUint32(buf[n+4:], logSum(l, l.Data))
	sealed.Data = buf[: n+logTrailerBytes : n+logTrailerBytes]
	return buf[n+logTrailerBytes:]
}

// IsMonotonic tells raft that the log may not have gaps (raft's
// MonotonicLogStore): a follower that installs a snapshot then drops its
// whole old log instead of keeping its last TrailingLogs entries below the
// snapshot, which left a gap up to the entries that follow the snapshot,
// and verifyAll refused to start on it ("log not found"), as a fault run
// with small snapshots found.
func (c checkedLogs) IsMonotonic() bool { return true }

// StoreLog seals and stores one entry.
func (c checkedLogs) StoreLog(l *raft.Log) error { return c.StoreLogs([]*raft.Log{l}) }

// StoreLogs seals and stores entries: the sealed copies, and their data,
// go to the scratch's buffers, or to one allocation each for all of them.
func (c checkedLogs) StoreLogs(logs []*raft.Log) error {
	n := 0
	for _, l := range logs {
		n += len(l.Data) + logTrailerBytes
	}
	sc := c.scratch
	if sc == nil || !sc.busy.CompareAndSwap(false, true) {
		sc = &sealScratch{}
	} else {
		defer sc.busy.Store(false)
	}
	if cap(sc.buf) < n {
		sc.buf = make([]byte, n)
	}
	sc.sealed = slices.Grow(sc.sealed[:0], len(logs))[:len(logs)]
	sc.ptrs = slices.Grow(sc.ptrs[:0], len(logs))[:len(logs)]
	buf := sc.buf[:n]
	for i, l := range logs {
		buf = c.seal(&sc.sealed[i], l, buf)
		sc.ptrs[i] = &sc.sealed[i]
	}
	err := c.LogStore.StoreLogs(sc.ptrs)
	clear(sc.sealed) // raft's extensions are not ours to keep
	if cap(sc.buf) > sealScratchKeepMax {
		sc.buf = nil
	}
	return err
}

// GetLog reads an entry and verifies its seal.
func (c checkedLogs) GetLog(index uint64, l *raft.Log) error {
	if err := c.LogStore.GetLog(index, l); err != nil {
		return err
	}
	return unseal(index, l)
}

func unseal(index uint64, l *raft.Log) error {
	n := len(l.Data) - logTrailerBytes
	if n < 0 || binary.BigEndian.Uint32(l.Data[n:]) != logTrailerMagic {
		return fmt.Errorf("%w: index %d has no checksum trailer (a damaged entry, or a log written by a seatd before checksums: remove the data dir)", ErrCorruptLog, index)
	}
	want := binary.BigEndian.Uint32(l.Data[n+4:])
	l.Data = l.Data[:n]
	if l.Index != index || logSum(l, l.Data) != want {
		return fmt.Errorf("%w: index %d fails its checksum", ErrCorruptLog, index)
	}
	return nil
}

// verifyAll reads and verifies every entry in the log.
func (c checkedLogs) verifyAll() error {
	if g, ok := c.LogStore.(*groupLog); ok {
		// Reads the log's packs once, not once per group.
		return g.verifyAll(unseal)
	}
	first, err := c.FirstIndex()
	if err != nil {
		return err
	}
	last, err := c.LastIndex()
	if err != nil {
		return err
	}
	if last == 0 {
		return nil
	}
	var l raft.Log
	for i := first; i <= last; i++ {
		if err := c.GetLog(i, &l); err != nil {
			return err
		}
	}
	return nil
}
