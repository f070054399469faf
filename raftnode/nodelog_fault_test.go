//go:build faults

package raftnode

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

func mkdirGroup(dataDir string, id uint32) error {
	return os.MkdirAll(groupDirOf(dataDir, id), 0o755)
}

// The fault harness's corruption reaches an entry, and the group then
// refuses it: one picked at random, and the last, which lies past the
// group's bounds record (it is found as a start finds it).
func TestCorruptLogEntryIsDetected(t *testing.T) {
	last := func(n int) int { return n - 1 }
	for _, tc := range []struct {
		name string
		pick func(n int) int
		want string // a prefix of what CorruptLogEntry says it changed
	}{
		{"random", rand.New(rand.NewPCG(9, 9)).IntN, "group-1 entry "},
		{"last", last, "group-1 entry 20 "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, id := range []uint32{0, 1} {
				if err := mkdirGroup(dir, id); err != nil {
					t.Fatal(err)
				}
			}
			nl := openTestLog(t, nodeLogPath(dir))
			g := openTestGroup(t, nl, 1)
			// Two appends: two commits, two runs.
			for _, r := range [][2]uint64{{1, 5}, {6, 20}} {
				if err := (checkedLogs{LogStore: g}).StoreLogs(entries(1, r[0], r[1])); err != nil {
					t.Fatal(err)
				}
			}
			nl.close()
			what, err := CorruptLogEntry(dir, tc.pick)
			if err != nil || !strings.HasPrefix(what, tc.want) {
				t.Fatalf("CorruptLogEntry = %q, %v, want %q...", what, err, tc.want)
			}
			nl = openTestLog(t, nodeLogPath(dir))
			defer nl.close()
			g = openTestGroup(t, nl, 1)
			if err := (checkedLogs{LogStore: g}).verifyAll(); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("after %s: verifyAll = %v, want ErrCorruptLog", what, err)
			}
		})
	}
}
