// This file proves that a raft log entry damaged at rest is detected: every
// flipped bit of a sealed entry's data (payload or trailer) fails GetLog with
// ErrCorruptLog, so a group refuses to open on it, while intact entries read
// back exactly as written.
package raftnode

import (
	"errors"
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
	c := checkedLogs{store}
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
