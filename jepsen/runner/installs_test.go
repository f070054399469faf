// This file proves the harness counts snapshot installs by the line seatd
// really logs, and counts each one, and when a run expects one.
package runner

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/raftnode"
)

func TestCountInstalls(t *testing.T) {
	if snapshotInstalledMsg != raftnode.SnapshotInstalledMsg {
		t.Fatalf("the harness looks for %q, seatd logs %q", snapshotInstalledMsg, raftnode.SnapshotInstalledMsg)
	}
	if checkpointBehindMsg != raftnode.CheckpointBehindMsg {
		t.Fatalf("the harness looks for %q, seatd logs %q", checkpointBehindMsg, raftnode.CheckpointBehindMsg)
	}
	if floorMovedMsg != raftnode.LogFloorMovedMsg {
		t.Fatalf("the harness looks for %q, seatd logs %q", floorMovedMsg, raftnode.LogFloorMovedMsg)
	}
	if logCleanerEnv != raftnode.LogCleanerEnv {
		t.Fatalf("the harness sets %q, seatd reads %q", logCleanerEnv, raftnode.LogCleanerEnv)
	}
	dir := t.TempDir()
	a, b := filepath.Join(dir, "n1.log"), filepath.Join(dir, "n2.log")
	os.WriteFile(a, []byte("time=1 level=INFO msg=\"installed a snapshot from the leader\" group=1\nother\n"), 0o644)
	os.WriteFile(b, []byte("msg=\"installed a snapshot from the leader\"\nmsg=\"installed a snapshot from the leader\"\n"), 0o644)
	if n := countInstalls([]string{a, b, filepath.Join(dir, "missing.log")}); n != 3 {
		t.Errorf("countInstalls = %d, want 3", n)
	}
}

// TestInstallsExpectedCountsFaultsThatLeaveAReplicaBehind: a run expects a
// snapshot install only from faults it drew that leave one replica behind
// the others, never from kill-all alone, nor from faults after a
// corrupt-log left its node down.
func TestInstallsExpectedCountsFaultsThatLeaveAReplicaBehind(t *testing.T) {
	c := &Config{Duration: time.Minute}
	c.SetDefaults()
	for _, tc := range []struct {
		kinds []string
		want  bool
	}{
		{nil, false},
		{[]string{"heal", "clock-jump"}, false},
		{[]string{NemKillAll, "heal"}, false},
		{[]string{NemKillAll, NemPartitionOne}, true},
		{[]string{NemKillLeader}, true},
		{[]string{NemPauseLeader}, true},
		// A node a corrupt-log left down: only faults before it count.
		{[]string{"corrupt-log-down", NemKillLeader, NemPartitionOne}, false},
		{[]string{NemKillLeader, "corrupt-log-down"}, true},
		{[]string{NemCorruptLog, NemKillLeader}, true}, // skipped, or restarted
	} {
		var faults []history.Fault
		for _, k := range tc.kinds {
			f := history.Fault{Kind: k}
			if k == "corrupt-log-down" {
				f = history.Fault{Kind: NemCorruptLog, Nodes: "n1 group-0 entry 315 bit 136: " + corruptLeftDown}
			}
			faults = append(faults, f)
		}
		if got := c.installsExpected(faults); got != tc.want {
			t.Errorf("installsExpected(%v) = %t, want %t", tc.kinds, got, tc.want)
		}
	}
	short := *c
	short.Duration = installRunMin - time.Second
	if short.installsExpected([]history.Fault{{Kind: NemKillLeader}}) {
		t.Error("a run shorter than installRunMin expects an install")
	}
}
