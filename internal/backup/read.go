package backup

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/seatledger/seatledger/fsm"
)

// File is an open backup file.
type File struct {
	f      *os.File
	size   int64
	Header Header
	// offsets[i] is where group i's stream starts.
	offsets []int64
}

// Open opens a backup and reads its header; the sizes it names must add up
// to the file's size. Call Verify before trusting any stream.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("backup: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("backup: %w", err)
	}
	b := &File{f: f, size: st.Size()}
	if err := b.readHeader(); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrBadBackup, path, err)
	}
	return b, nil
}

// Close closes the file.
func (b *File) Close() error { return b.f.Close() }

func (b *File) readHeader() error {
	fixed := make([]byte, headerFixedBytes)
	if _, err := b.f.ReadAt(fixed, 0); err != nil {
		return fmt.Errorf("header: %v", err)
	}
	if string(fixed[:len(magic)]) != magic {
		return fmt.Errorf("not a seatledger backup (magic %q)", fixed[:len(magic)])
	}
	p := fixed[len(magic):]
	h := Header{Version: binary.BigEndian.Uint32(p), Created: time.UnixMilli(int64(binary.BigEndian.Uint64(p[4:])))}
	if h.Version != version {
		return fmt.Errorf("format version %d, this build reads %d", h.Version, version)
	}
	n := binary.BigEndian.Uint32(p[12:])
	if n < 1 || n > GroupsMax || headerBytes(int(n))+sumBytes > b.size {
		return fmt.Errorf("header names %d groups in a file of %d bytes", n, b.size)
	}
	entries := make([]byte, int(n)*groupEntryBytes)
	if _, err := b.f.ReadAt(entries, int64(headerFixedBytes)); err != nil {
		return fmt.Errorf("header: %v", err)
	}
	off := headerBytes(int(n))
	for i := range int(n) {
		e := entries[i*groupEntryBytes:]
		g := Group{ID: binary.BigEndian.Uint32(e), Applied: binary.BigEndian.Uint64(e[4:]), Clock: int64(binary.BigEndian.Uint64(e[12:])),
			Length: binary.BigEndian.Uint64(e[52:])}
		copy(g.Digest[:], e[20:52])
		if g.ID != uint32(i) {
			return fmt.Errorf("header entry %d is group %d, want groups in order from 0", i, g.ID)
		}
		if g.Length > uint64(b.size) {
			return fmt.Errorf("group %d: %d bytes in a file of %d", g.ID, g.Length, b.size)
		}
		h.Groups = append(h.Groups, g)
		b.offsets = append(b.offsets, off)
		off += int64(g.Length)
	}
	if off+sumBytes != b.size {
		return fmt.Errorf("header accounts for %d bytes, file has %d (truncated or extended)", off+sumBytes, b.size)
	}
	b.Header = h
	return nil
}

// Verify checks the whole file: the checksum over every byte, then each
// group's stream as a restore would read it (fsm.VerifySnapshot), and that
// each stream's group, applied index, clock and digest are the header's.
// It writes nothing.
func (b *File) Verify() error {
	h := sha256.New()
	if _, err := io.Copy(h, bufio.NewReaderSize(io.NewSectionReader(b.f, 0, b.size-sumBytes), 1<<20)); err != nil {
		return fmt.Errorf("%w: read: %v", ErrBadBackup, err)
	}
	sum := make([]byte, sumBytes)
	if _, err := b.f.ReadAt(sum, b.size-sumBytes); err != nil {
		return fmt.Errorf("%w: read checksum: %v", ErrBadBackup, err)
	}
	if !bytes.Equal(sum, h.Sum(nil)) {
		return fmt.Errorf("%w: checksum mismatch: the file is damaged", ErrBadBackup)
	}
	for _, g := range b.Header.Groups {
		d, err := fsm.VerifySnapshot(b.Stream(g.ID))
		if err != nil {
			return fmt.Errorf("%w: group %d: %v", ErrBadBackup, g.ID, err)
		}
		if d.Group != g.ID || d.Applied != g.Applied || d.Clock != g.Clock || d.Sum != g.Digest {
			return fmt.Errorf("%w: group %d: stream is %v, header says applied %d clock %d digest %x", ErrBadBackup, g.ID, d, g.Applied, g.Clock, g.Digest[:8])
		}
	}
	return nil
}

// Stream returns a fresh reader of a group's snapshot stream.
func (b *File) Stream(group uint32) io.Reader {
	if int(group) >= len(b.offsets) {
		return bytes.NewReader(nil)
	}
	return io.NewSectionReader(b.f, b.offsets[group], int64(b.Header.Groups[group].Length))
}
