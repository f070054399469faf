package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

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
	var hdr [17]byte
	binary.BigEndian.PutUint64(hdr[0:], l.Index)
	binary.BigEndian.PutUint64(hdr[8:], l.Term)
	hdr[16] = byte(l.Type)
	return crc32.Update(crc32.Checksum(hdr[:], castagnoli), castagnoli, data)
}

// checkedLogs wraps the bolt log store.
type checkedLogs struct {
	raft.LogStore
}

func (c checkedLogs) seal(l *raft.Log) *raft.Log {
	sealed := *l
	sealed.Data = make([]byte, len(l.Data)+logTrailerBytes)
	n := copy(sealed.Data, l.Data)
	binary.BigEndian.PutUint32(sealed.Data[n:], logTrailerMagic)
	binary.BigEndian.PutUint32(sealed.Data[n+4:], logSum(l, l.Data))
	return &sealed
}

// IsMonotonic tells raft that the log may not have gaps (raft's
// MonotonicLogStore): a follower that installs a snapshot then drops its
// whole old log instead of keeping its last TrailingLogs entries below the
// snapshot, which left a gap up to the entries that follow the snapshot,
// and verifyAll refused to start on it ("log not found"), as a fault run
// with small snapshots found.
func (c checkedLogs) IsMonotonic() bool { return true }

// StoreLog seals and stores one entry.
func (c checkedLogs) StoreLog(l *raft.Log) error { return c.LogStore.StoreLog(c.seal(l)) }

// StoreLogs seals and stores entries.
func (c checkedLogs) StoreLogs(logs []*raft.Log) error {
	sealed := make([]*raft.Log, len(logs))
	for i, l := range logs {
		sealed[i] = c.seal(l)
	}
	return c.LogStore.StoreLogs(sealed)
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
