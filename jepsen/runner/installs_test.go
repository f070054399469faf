// This file proves the harness counts snapshot installs by the line seatd
// really logs, and counts each one.
package runner

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/seatledger/seatledger/raftnode"
)

func TestCountInstalls(t *testing.T) {
	if snapshotInstalledMsg != raftnode.SnapshotInstalledMsg {
		t.Fatalf("the harness looks for %q, seatd logs %q", snapshotInstalledMsg, raftnode.SnapshotInstalledMsg)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "n1.log"), filepath.Join(dir, "n2.log")
	os.WriteFile(a, []byte("time=1 level=INFO msg=\"installed a snapshot from the leader\" group=1\nother\n"), 0o644)
	os.WriteFile(b, []byte("msg=\"installed a snapshot from the leader\"\nmsg=\"installed a snapshot from the leader\"\n"), 0o644)
	if n := countInstalls([]string{a, b, filepath.Join(dir, "missing.log")}); n != 3 {
		t.Errorf("countInstalls = %d, want 3", n)
	}
}
