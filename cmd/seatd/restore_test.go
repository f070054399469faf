// This file proves seatd restore's refusals and its happy path without
// processes: a backup whose group count differs from --groups is refused
// before the data directory is created; a data directory that holds
// anything is refused and left as it was; a good backup seeds an empty
// directory with Pebble state and each hosted group's raft files.
package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/internal/backup"
	"github.com/seatledger/seatledger/raftnode"
)

// writeEmptyBackup writes a backup of groups empty groups.
func writeEmptyBackup(t *testing.T, path string, groups int) {
	t.Helper()
	db, err := fsm.OpenDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	w, err := backup.Create(path, time.Now(), groups)
	if err != nil {
		t.Fatal(err)
	}
	for g := range uint32(groups) {
		m, err := fsm.NewMachine(db, g)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.AddGroup(func(out io.Writer) (backup.Group, error) {
			s, err := m.Snapshot()
			if err != nil {
				return backup.Group{}, err
			}
			defer s.Close()
			d, err := s.Digest()
			if err != nil {
				return backup.Group{}, err
			}
			_, err = s.WriteTo(out)
			return backup.Group{ID: g, Applied: d.Applied, Clock: d.Clock, Digest: d.Sum}, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefusals(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "two.backup")
	writeEmptyBackup(t, file, 2)
	peers := "n1=127.0.0.1:7001/127.0.0.1:9001"
	args := func(dataDir, groups string) []string {
		return []string{"--from", file, "--id", "n1", "--data-dir", dataDir, "--peers", peers, "--groups", groups, "--replicas", "1"}
	}
	var out bytes.Buffer

	fresh := filepath.Join(dir, "fresh")
	if err := restore(args(fresh, "3"), &out); err == nil || !strings.Contains(err.Error(), "the backup has 2 groups, --groups is 3") {
		t.Fatalf("restore --groups 3 of a 2-group backup = %v, want refused naming both counts", err)
	}
	if _, err := os.Stat(fresh); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("refused restore created %s", fresh)
	}

	used := filepath.Join(dir, "used")
	if err := os.MkdirAll(used, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(used, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := restore(args(used, "2"), &out); !errors.Is(err, raftnode.ErrDataDirNotEmpty) {
		t.Fatalf("restore into a used data dir = %v, want ErrDataDirNotEmpty", err)
	}
	if entries, _ := os.ReadDir(used); len(entries) != 1 {
		t.Fatalf("refused restore changed %s: %d entries", used, len(entries))
	}

	if err := restore(args(fresh, "2"), &out); err != nil {
		t.Fatalf("restore of a good backup = %v", err)
	}
	for _, p := range []string{"state", "raft/group-0/raft.db", "raft/group-1/raft.db", "raft/group-1/snapshots"} {
		if _, err := os.Stat(filepath.Join(fresh, p)); err != nil {
			t.Errorf("after restore: %v", err)
		}
	}
	if !strings.Contains(out.String(), "seeded "+fresh+" for node n1 (2 groups)") {
		t.Errorf("restore printed %q, want what it seeded", out.String())
	}
}
