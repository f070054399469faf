// This file proves that a raft log entry damaged at rest is detected: every
// flipped bit of a sealed entry's data (payload or trailer) fails GetLog with
// ErrCorruptLog, so a group refuses to open on it, while intact entries read
// back exactly as written.
package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

func TestCheckedLogsDetectCorruption(t *testing.T) {
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(t.TempDir(), "raft.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	c := checkedLogs{LogStore: store}
	want := []*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: []byte("config")},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("hold A1 A2")},
		{Index: 3, Term: 2, Type: raft.LogNoop},
	}
	if err := c.StoreLogs(want); err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		var got raft.Log
		if err := c.GetLog(w.Index, &got); err != nil || string(got.Data) != string(w.Data) || got.Term != w.Term {
			t.Fatalf("GetLog(%d) = %+v, %v; want %+v", w.Index, got, err, w)
		}
	}
	if err := c.verifyAll(); err != nil {
		t.Fatalf("verifyAll on an intact log: %v", err)
	}

	// Flip each bit of entry 2's sealed data in turn, underneath the seal.
	var raw raft.Log
	if err := store.GetLog(2, &raw); err != nil {
		t.Fatal(err)
	}
	for i := range len(raw.Data) * 8 {
		bad := raw
		bad.Data = append([]byte(nil), raw.Data...)
		bad.Data[i/8] ^= 1 << (i % 8)
		if err := store.StoreLog(&bad); err != nil {
			t.Fatal(err)
		}
		var got raft.Log
		if err := c.GetLog(2, &got); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("bit %d flipped: GetLog = %q, %v; want ErrCorruptLog", i, got.Data, err)
		}
		if err := c.verifyAll(); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("bit %d flipped: verifyAll = %v, want ErrCorruptLog", i, err)
		}
	}
	// An entry written without a seal (an older seatd) is refused too.
	if err := store.StoreLog(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	var got raft.Log
	if err := c.GetLog(2, &got); !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("unsealed entry: GetLog = %v, want ErrCorruptLog", err)
	}
}

// TestLogSum checks logSum against crc32's CRC-32C of the header (index,
// term, type, big-endian) followed by the data.
func TestLogSum(t *testing.T) {
	for i, l := range []raft.Log{
		{},
		{Index: 1, Term: 1, Type: raft.LogCommand, Data: []byte("hold")},
		{Index: 1<<48 - 2, Term: 1<<63 + 5, Type: raft.LogConfiguration, Data: bytes.Repeat([]byte{0xa5}, 1000)},
	} {
		var hdr [17]byte
		binary.BigEndian.PutUint64(hdr[0:], l.Index)
		binary.BigEndian.PutUint64(hdr[8:], l.Term)
		hdr[16] = byte(l.Type)
		want := crc32.Checksum(append(hdr[:], l.Data...), crc32.MakeTable(crc32.Castagnoli))
		if got := logSum(&l, l.Data); got != want {
			t.Errorf("log %d: logSum = %#x, want %#x", i, got, want)
		}
	}
	l := &raft.Log{Index: 3, Term: 2, Data: []byte("x")}
	if n := testing.AllocsPerRun(100, func() { logSum(l, l.Data) }); n != 0 {
		t.Errorf("logSum allocates %.0f times", n)
	}
}
