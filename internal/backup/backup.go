// Package backup is the file `seatctl snapshot save` writes and `seatd
// restore` reads: one fsm snapshot stream per raft group of a cluster,
// behind a small header and under one checksum.
//
// File format (version 1), integers big-endian:
//
//	header:  magic "SLBACKUP" | version u32 | created unix ms i64 | groups u32
//	         per group: group u32 | applied u64 | clock i64 | digest [32] | length u64
//	streams: each group's fsm snapshot stream (fsm/snapshot.go), length bytes,
//	         in header order, which is group id order 0..groups-1
//	trailer: sha256 of every byte before it (32 bytes)
//
// Consistency: groups are independent raft groups, each saved from its
// leader after a barrier, one after another. The backup is consistent per
// group (each group at one applied index, holding every write acknowledged
// before its save began), not one cross-group point in time; that would
// need writes stopped. A hold or booking never spans groups (a show lives
// in one group), so every booking is whole in the backup.
package backup

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"
)

const (
	magic   = "SLBACKUP"
	version = 1
	// headerFixedBytes is the header before the per-group entries.
	headerFixedBytes = len(magic) + 4 + 8 + 4
	// groupEntryBytes is one group's header entry.
	groupEntryBytes = 4 + 8 + 8 + 32 + 8
	sumBytes        = sha256.Size
	// GroupsMax bounds the groups of a backup (shard.GroupsMax).
	GroupsMax = 1024
)

// ErrBadBackup: the file is not an intact backup; nothing may be restored
// from it.
var ErrBadBackup = errors.New("backup: bad backup file")

// Group is one group's entry in the header.
type Group struct {
	ID      uint32 `json:"group"`
	Applied uint64 `json:"applied_index"`
	Clock   int64  `json:"clock_ms"`
	Digest  [32]byte
	Length  uint64 `json:"bytes"`
}

// DigestHex is the digest as Status reports it.
func (g Group) DigestHex() string { return hex.EncodeToString(g.Digest[:]) }

// Header is what a backup says of itself.
type Header struct {
	Version uint32
	Created time.Time
	Groups  []Group
}

func headerBytes(groups int) int64 { return int64(headerFixedBytes + groups*groupEntryBytes) }

func (h Header) encode() []byte {
	b := make([]byte, 0, headerBytes(len(h.Groups)))
	b = append(b, magic...)
	b = binary.BigEndian.AppendUint32(b, h.Version)
	b = binary.BigEndian.AppendUint64(b, uint64(h.Created.UnixMilli()))
	b = binary.BigEndian.AppendUint32(b, uint32(len(h.Groups)))
	for _, g := range h.Groups {
		b = binary.BigEndian.AppendUint32(b, g.ID)
		b = binary.BigEndian.AppendUint64(b, g.Applied)
		b = binary.BigEndian.AppendUint64(b, uint64(g.Clock))
		b = append(b, g.Digest[:]...)
		b = binary.BigEndian.AppendUint64(b, g.Length)
	}
	return b
}

// Writer writes a backup file: a placeholder header, then each group's
// stream, then the real header and the checksum. It writes PATH.partial and
// renames it to PATH only when complete, so PATH is never a torn backup.
type Writer struct {
	path, tmp string
	f         *os.File
	hdr       Header
	groups    int
	off       int64 // where the next group's stream starts
}

// Create starts a backup of a cluster of groups groups.
func Create(path string, created time.Time, groups int) (*Writer, error) {
	if groups < 1 || groups > GroupsMax {
		return nil, fmt.Errorf("backup: %d groups, want 1..%d", groups, GroupsMax)
	}
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	w := &Writer{path: path, tmp: tmp, f: f, groups: groups, hdr: Header{Version: version, Created: created}, off: headerBytes(groups)}
	if _, err := f.Write(make([]byte, w.off)); err != nil {
		w.Abort()
		return nil, fmt.Errorf("backup: %w", err)
	}
	return w, nil
}

// AddGroup appends the next group's stream: fn writes it and returns the
// group's entry (its Length is counted here). Groups come in id order. If
// fn fails, what it wrote is cut off and AddGroup may be called again.
func (w *Writer) AddGroup(fn func(io.Writer) (Group, error)) (Group, error) {
	want := uint32(len(w.hdr.Groups))
	if int(want) >= w.groups {
		return Group{}, fmt.Errorf("backup: all %d groups added", w.groups)
	}
	cw := &countWriter{w: w.f}
	g, err := fn(cw)
	if err == nil && g.ID != want {
		err = fmt.Errorf("backup: got group %d, want group %d next", g.ID, want)
	}
	if err != nil {
		if terr := w.rewind(); terr != nil {
			return Group{}, errors.Join(err, terr)
		}
		return Group{}, err
	}
	g.Length = uint64(cw.n)
	w.off += cw.n
	w.hdr.Groups = append(w.hdr.Groups, g)
	return g, nil
}

// rewind cuts the file back to the end of the last complete group.
func (w *Writer) rewind() error {
	if err := w.f.Truncate(w.off); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	_, err := w.f.Seek(w.off, io.SeekStart)
	return err
}

// Commit writes the header and the checksum, syncs, and renames the file
// into place. It returns the header written.
func (w *Writer) Commit() (Header, error) {
	if len(w.hdr.Groups) != w.groups {
		w.Abort()
		return Header{}, fmt.Errorf("backup: %d of %d groups added", len(w.hdr.Groups), w.groups)
	}
	err := w.finish()
	if err != nil {
		w.Abort()
		return Header{}, err
	}
	return w.hdr, nil
}

func (w *Writer) finish() error {
	if _, err := w.f.WriteAt(w.hdr.encode(), 0); err != nil {
		return fmt.Errorf("backup: write header: %w", err)
	}
	// The sum covers the header, so it is computed after the header is in
	// place: one more read of the file.
	if _, err := w.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(w.f, 1<<20)); err != nil {
		return fmt.Errorf("backup: checksum: %w", err)
	}
	if _, err := w.f.Write(h.Sum(nil)); err != nil {
		return fmt.Errorf("backup: write checksum: %w", err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("backup: sync: %w", err)
	}
	if err := w.f.Close(); err != nil {
		return fmt.Errorf("backup: close: %w", err)
	}
	w.f = nil
	if err := os.Rename(w.tmp, w.path); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	// Make the rename durable too.
	if d, err := os.Open(filepath.Dir(w.path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// Abort removes the partial file.
func (w *Writer) Abort() {
	if w.f != nil {
		w.f.Close()
		w.f = nil
	}
	os.Remove(w.tmp)
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
