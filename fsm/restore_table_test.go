// This file proves that Restore leaves no table behind in its scratch
// directory, whether it ingested the table or refused the stream, and
// that UseScratchDir removes what an interrupted restore left there.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

func TestRestoreScratchDir(t *testing.T) {
	src := newTestMachine(t, newTestDB(t), 3)
	feed(t, newGen(randChooser{rand.New(rand.NewPCG(9, 9))}), 30, src)
	good := snapshotBytes(t, src)

	dir := t.TempDir()
	left := filepath.Join(dir, "restore-123.sst")
	if err := os.WriteFile(left, []byte("half a table"), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := newTestMachine(t, newTestDB(t), 3)
	if err := dst.UseScratchDir(dir); err != nil {
		t.Fatalf("UseScratchDir: %v", err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("UseScratchDir left %s (stat: %v)", left, err)
	}
	if err := dst.Restore(bytes.NewReader(good[:len(good)-1])); err == nil {
		t.Fatalf("Restore(truncated) = nil, want an error")
	}
	if err := dst.Restore(bytes.NewReader(good)); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := mustDigest(t, dst), mustDigest(t, src); got != want {
		t.Errorf("restored digest %v, want %v", got, want)
	}
	if files, _ := os.ReadDir(dir); len(files) != 0 {
		t.Errorf("scratch dir holds %d files after two restores, want none", len(files))
	}
}
