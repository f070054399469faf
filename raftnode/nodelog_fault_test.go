//go:build faults

package raftnode

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"
)

func mkdirGroup(dataDir string, id uint32) error {
	return os.MkdirAll(groupDirOf(dataDir, id), 0o755)
}

// The fault harness's corruption reaches an entry, and the group then
// refuses it.
func TestCorruptLogEntryIsDetected(t *testing.T) {
	dir := t.TempDir()
	for _, id := range []uint32{0, 1} {
		if err := mkdirGroup(dir, id); err != nil {
			t.Fatal(err)
		}
	}
	nl := openTestLog(t, nodeLogPath(dir))
	g := openTestGroup(t, nl, 1)
	if err := (checkedLogs{g}).StoreLogs(entries(1, 1, 20)); err != nil {
		t.Fatal(err)
	}
	nl.close()
	rng := rand.New(rand.NewPCG(9, 9))
	what, err := CorruptLogEntry(dir, rng.IntN)
	if err != nil {
		t.Fatal(err)
	}
	nl = openTestLog(t, nodeLogPath(dir))
	defer nl.close()
	g = openTestGroup(t, nl, 1)
	if err := (checkedLogs{g}).verifyAll(); !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("after %s: verifyAll = %v, want ErrCorruptLog", what, err)
	}
}
