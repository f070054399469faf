package fsm

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Snapshot stream format (version 1), all integers big-endian:
//
//	header:  magic "SLSNAP01" | version u32 | group u32 | applied u64 | clock i64
//	records: uvarint(len key) key | uvarint(len value) value   (key without group prefix)
//	end:     uvarint(0)
//	trailer: count u64 | sha256 of everything before the trailer's sum (32 bytes)
const (
	snapMagic       = "SLSNAP01"
	snapVersion     = 1
	snapKeyLenMax   = 4 << 10
	snapValueLenMax = 16 << 20
)

// Snapshot is a point-in-time copy of a group's range, made on the apply
// goroutine and written out on another.
type Snapshot struct {
	m    *Machine
	view *View
}

// Snapshot checkpoints the group (checkpoint.go) and pins a Pebble
// snapshot. Raft may forget the entries below a snapshot's index once it
// is persisted, so that index must be durable in Pebble first: the
// checkpoint makes it so before the snapshot is even written out.
func (m *Machine) Snapshot() (*Snapshot, error) {
	if err := m.Checkpoint(); err != nil {
		return nil, fmt.Errorf("fsm: checkpoint before snapshot: %w", err)
	}
	v, err := m.View()
	if err != nil {
		return nil, err
	}
	return &Snapshot{m: m, view: v}, nil
}

// CurrentSnapshot pins a point-in-time view of the group's state as
// applied now, without a checkpoint: its state need not be durable here,
// so it is for sending, never for letting raft drop its log (raftnode's
// snapshot store streams it to a follower that installs it). Safe beside
// apply, on any goroutine.
func (m *Machine) CurrentSnapshot() (*Snapshot, error) {
	v, err := m.View()
	if err != nil {
		return nil, err
	}
	return &Snapshot{m: m, view: v}, nil
}

// Applied is the index the snapshot reflects.
func (s *Snapshot) Applied() uint64 { return s.view.applied }

// Close releases the snapshot.
func (s *Snapshot) Close() error { return s.view.Close() }

// Digest is the state digest of the snapshot's point in time, the one
// Machine.Digest reports on a replica at the same applied index.
func (s *Snapshot) Digest() (Digest, error) { return s.view.Digest() }

// WriteTo streams the snapshot. The state Snapshot streams is already
// durable in this node's Pebble, so a caller that records the snapshot
// afterwards (raft's sink) never names an index that a crash could take
// from the store; CurrentSnapshot's need not be.
func (s *Snapshot) WriteTo(w io.Writer) (int64, error) {
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(w, h)}
	bw := bufio.NewWriterSize(cw, 64<<10)
	hdr := make([]byte, 0, 32)
	hdr = append(hdr, snapMagic...)
	hdr = binary.BigEndian.AppendUint32(hdr, snapVersion)
	hdr = binary.BigEndian.AppendUint32(hdr, s.m.group)
	hdr = binary.BigEndian.AppendUint64(hdr, s.view.applied)
	hdr = binary.BigEndian.AppendUint64(hdr, uint64(s.view.clock))
	bw.Write(hdr)
	var count uint64
	err := s.view.each(func(k, v []byte) error {
		var buf [binary.MaxVarintLen64]byte
		bw.Write(buf[:binary.PutUvarint(buf[:], uint64(len(k)))])
		bw.Write(k)
		bw.Write(buf[:binary.PutUvarint(buf[:], uint64(len(v)))])
		_, err := bw.Write(v)
		count++
		return err
	})
	if err != nil {
		return cw.n, err
	}
	bw.WriteByte(0)
	bw.Write(binary.BigEndian.AppendUint64(nil, count))
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	n, err := w.Write(h.Sum(nil))
	return cw.n + int64(n), err
}

// each calls fn with every key (without group prefix) and value of the
// group's range except the meta record, in key order.
func (v *View) each(fn func(k, val []byte) error) error {
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.key(kindMeta + 1), UpperBound: groupEnd(v.m.group)})
	if err != nil {
		return err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		if err := fn(it.Key()[groupPrefixLen:], it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// Restore replaces the group's range with a snapshot stream. The stream is
// written to a Pebble table on disk as it is read, never held whole in
// memory, and verified (sizes, key order, record count, checksum) before
// anything is replaced. The table carries a deletion of the group's whole
// range and the new records, and Pebble ingests it atomically: a bad
// stream or a crash leaves the state as it was.
func (m *Machine) Restore(r io.Reader) error {
	// Not beside a checkpoint: its table would be stale.
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	br := &hashReader{br: bufio.NewReaderSize(r, 64<<10), h: sha256.New()}
	applied, clock, err := m.readSnapHeader(br)
	if err != nil {
		return err
	}
	path, err := m.writeRestoreTable(br, applied, clock)
	if path != "" {
		defer os.Remove(path) // Pebble links or copies what it ingests
	}
	if err != nil {
		return err
	}
	// Readers of the ledger wait while it is replaced with the store.
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits.Add(1)
	defer m.commits.Add(1)
	if err := m.db.Ingest(context.Background(), []string{path}); err != nil {
		return fmt.Errorf("fsm: ingest restore: %w", err)
	}
	// A table that overlaps the memtables is ingested as one of them, and
	// without a WAL (OpenDB) it is durable only once flushed; raft drops
	// the log behind the snapshot when Restore returns.
	if err := m.db.Flush(); err != nil {
		return fmt.Errorf("fsm: flush restore: %w", err)
	}
	// The restored state replaces what the overlay held.
	m.replaceOverlay()
	// Before the index moves: a watcher that sees the new index must not
	// trust what the index of changes knew of the old state.
	m.changes.reset(applied)
	// The store holds the snapshot, checked; a ledger that cannot be read
	// from it means this replica cannot go on (reload panics).
	m.reload()
	m.published.Store(&appliedPoint{index: applied, clock: clock, next: m.led.nextExpiry(), live: m.led.live})
	return nil
}

// writeRestoreTable writes the rest of a snapshot stream, checked, to a
// Pebble table in the scratch directory: the deletion of the group's
// range, the meta record (the group's first key), then the records in the
// stream's order, which must be the keys' order. It returns the table's
// path once the file exists, even with an error.
func (m *Machine) writeRestoreTable(br *hashReader, applied uint64, clock int64) (string, error) {
	t, err := m.newScratchTable(restoreTablePattern)
	if err != nil {
		return t.path, fmt.Errorf("fsm: restore: %w", err)
	}
	path, w := t.path, t.w
	fail := func(err error) (string, error) {
		t.abandon()
		return path, err
	}
	if err := w.DeleteRange(m.prefix, groupEnd(m.group)); err != nil {
		return fail(fmt.Errorf("fsm: restore: %w", err))
	}
	if err := w.Set(m.metaKey(), encodeMeta(applied, clock)); err != nil {
		return fail(fmt.Errorf("fsm: restore: %w", err))
	}
	count, err := readSnapRecordsTo(br, m.prefix, func(k, v []byte) error {
		if err := w.Set(k, v); err != nil {
			return fmt.Errorf("%w: record %x: %v", errBadSnapshot, k, err)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	if err := checkSnapTrailer(br, count); err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return path, fmt.Errorf("fsm: restore: write table: %w", err)
	}
	return path, nil
}

// scratchTable is a table Restore or a checkpoint writes in the scratch
// directory for Pebble to ingest.
type scratchTable struct {
	path string // set once the file exists, even with an error
	f    vfs.File
	w    *sstable.Writer
}

// tableBytesPerSync is how much of a scratch table is written before the
// kernel is asked to write it back (Pebble's default for its own tables).
const tableBytesPerSync = 512 << 10

// newScratchTable creates a table named by pattern (os.CreateTemp's) in
// the scratch directory.
func (m *Machine) newScratchTable(pattern string) (scratchTable, error) {
	tmp, err := os.CreateTemp(m.scratchDir, pattern)
	if err != nil {
		return scratchTable{}, err
	}
	t := scratchTable{path: tmp.Name()}
	tmp.Close()
	if t.f, err = vfs.Default.Create(t.path, vfs.WriteCategoryUnspecified); err != nil {
		return t, err
	}
	// Written back as it goes, as Pebble writes its own tables: a
	// checkpoint's 16 MiB (a restore's whole group) never waits in the
	// page cache to land on the disk at once, where the raft log's
	// fsyncs would queue behind it.
	t.f = vfs.NewSyncingFile(t.f, vfs.SyncingFileOptions{BytesPerSync: tableBytesPerSync})
	t.w = sstable.NewWriter(objstorageprovider.NewFileWritable(t.f), m.tableOptions())
	return t, nil
}

// abandon gives up a table that is to be removed. The file closes first,
// so that the writer's Close (which stops its goroutine) fails at once
// instead of finishing and syncing the table.
func (t scratchTable) abandon() {
	t.f.Close()
	t.w.Close()
}

// UseScratchDir sets where Restore and checkpoints write the tables they
// ingest (the system's temporary directory by default), and removes the
// tables a restore or checkpoint interrupted by a crash left there. A directory on the data disk
// lets Pebble link the table instead of copying it. Call it before the
// first Restore.
func (m *Machine) UseScratchDir(dir string) error {
	left, err := filepath.Glob(filepath.Join(dir, restoreTablePattern))
	if err != nil {
		return fmt.Errorf("fsm: scratch dir: %w", err)
	}
	checkpoints, err := filepath.Glob(filepath.Join(dir, checkpointTablePattern))
	if err != nil {
		return fmt.Errorf("fsm: scratch dir: %w", err)
	}
	left = append(left, checkpoints...)
	for _, p := range left {
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("fsm: scratch dir: %w", err)
		}
	}
	m.scratchDir = dir
	return nil
}

// restoreTablePattern names Restore's tables (os.CreateTemp's pattern).
const restoreTablePattern = "restore-*.sst"

var errBadSnapshot = errors.New("fsm: bad snapshot")

func (m *Machine) readSnapHeader(br *hashReader) (uint64, int64, error) {
	h, err := parseSnapHeader(br)
	if err != nil {
		return 0, 0, err
	}
	if h.Group != m.group {
		return 0, 0, fmt.Errorf("%w: snapshot of group %d, restoring group %d", errBadSnapshot, h.Group, m.group)
	}
	return h.Applied, h.Clock, nil
}

// snapHeader is what a snapshot stream says of itself.
type snapHeader struct {
	Group   uint32
	Applied uint64
	Clock   int64
}

func parseSnapHeader(br *hashReader) (snapHeader, error) {
	hdr := make([]byte, len(snapMagic)+4+4+8+8)
	if _, err := io.ReadFull(br, hdr); err != nil {
		return snapHeader{}, fmt.Errorf("%w: header: %v", errBadSnapshot, err)
	}
	if string(hdr[:len(snapMagic)]) != snapMagic {
		return snapHeader{}, fmt.Errorf("%w: wrong magic", errBadSnapshot)
	}
	p := hdr[len(snapMagic):]
	if v := binary.BigEndian.Uint32(p); v != snapVersion {
		return snapHeader{}, fmt.Errorf("%w: version %d, want %d", errBadSnapshot, v, snapVersion)
	}
	return snapHeader{Group: binary.BigEndian.Uint32(p[4:]), Applied: binary.BigEndian.Uint64(p[8:]),
		Clock: int64(binary.BigEndian.Uint64(p[16:]))}, nil
}

// VerifySnapshot reads a whole snapshot stream and checks it as Restore
// does (magic, version, sizes, key kinds, record count, checksum) without
// writing anything: a backup is checked before a restore touches a disk.
// It returns the digest the state would have once restored, computed from
// the stream (records come in key order, as View.Digest reads them).
func VerifySnapshot(r io.Reader) (Digest, error) {
	br := &hashReader{br: bufio.NewReaderSize(r, 64<<10), h: sha256.New()}
	h, err := parseSnapHeader(br)
	if err != nil {
		return Digest{}, err
	}
	dh := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	count, err := readSnapRecordsTo(br, groupPrefix(h.Group), func(k, v []byte) error {
		k = k[groupPrefixLen:]
		dh.Write(buf[:binary.PutUvarint(buf[:], uint64(len(k)))])
		dh.Write(k)
		dh.Write(buf[:binary.PutUvarint(buf[:], uint64(len(v)))])
		dh.Write(v)
		return nil
	})
	if err != nil {
		return Digest{}, err
	}
	if err := checkSnapTrailer(br, count); err != nil {
		return Digest{}, err
	}
	dh.Write(encodeMeta(h.Applied, h.Clock))
	d := Digest{Group: h.Group, Applied: h.Applied, Clock: h.Clock}
	copy(d.Sum[:], dh.Sum(nil))
	return d, nil
}

// readSnapRecordsTo reads records up to the end mark and passes each key,
// with prefix prepended, and value to set.
func readSnapRecordsTo(br *hashReader, prefix []byte, set func(k, v []byte) error) (uint64, error) {
	var count uint64
	for {
		kl, err := binary.ReadUvarint(br)
		if err != nil {
			return 0, fmt.Errorf("%w: record %d: %v", errBadSnapshot, count, err)
		}
		if kl == 0 {
			return count, nil
		}
		if kl > snapKeyLenMax {
			return 0, fmt.Errorf("%w: key of %d bytes", errBadSnapshot, kl)
		}
		k := make([]byte, groupPrefixLen+int(kl))
		copy(k, prefix)
		if _, err := io.ReadFull(br, k[groupPrefixLen:]); err != nil {
			return 0, fmt.Errorf("%w: key: %v", errBadSnapshot, err)
		}
		if k[groupPrefixLen] <= kindMeta || k[groupPrefixLen] >= kindEnd {
			return 0, fmt.Errorf("%w: key of unknown kind %#x", errBadSnapshot, k[groupPrefixLen])
		}
		vl, err := binary.ReadUvarint(br)
		if err != nil || vl > snapValueLenMax {
			return 0, fmt.Errorf("%w: value length", errBadSnapshot)
		}
		v := make([]byte, vl)
		if _, err := io.ReadFull(br, v); err != nil {
			return 0, fmt.Errorf("%w: value: %v", errBadSnapshot, err)
		}
		if err := set(k, v); err != nil {
			return 0, err
		}
		count++
	}
}

// checkSnapTrailer reads the record count and checks the checksum, which
// covers every byte before the sum itself.
func checkSnapTrailer(br *hashReader, count uint64) error {
	var cnt [8]byte
	if _, err := io.ReadFull(br, cnt[:]); err != nil {
		return fmt.Errorf("%w: trailer: %v", errBadSnapshot, err)
	}
	if got := binary.BigEndian.Uint64(cnt[:]); got != count {
		return fmt.Errorf("%w: %d records, trailer says %d", errBadSnapshot, count, got)
	}
	want := br.h.Sum(nil)
	sum := make([]byte, len(want))
	if _, err := io.ReadFull(br.br, sum); err != nil {
		return fmt.Errorf("%w: checksum: %v", errBadSnapshot, err)
	}
	if string(sum) != string(want) {
		return fmt.Errorf("%w: checksum mismatch", errBadSnapshot)
	}
	if _, err := br.br.ReadByte(); err != io.EOF {
		return fmt.Errorf("%w: bytes after the checksum", errBadSnapshot)
	}
	return nil
}

// hashReader hashes exactly the bytes consumed through it.
type hashReader struct {
	br *bufio.Reader
	h  hash.Hash
}

func (r *hashReader) Read(p []byte) (int, error) {
	n, err := r.br.Read(p)
	r.h.Write(p[:n])
	return n, err
}

func (r *hashReader) ReadByte() (byte, error) {
	c, err := r.br.ReadByte()
	if err == nil {
		r.h.Write([]byte{c})
	}
	return c, err
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
