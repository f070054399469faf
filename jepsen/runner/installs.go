package runner

import (
	"bufio"
	"os"
	"strings"
)

// snapshotInstalledMsg is the line a seatd replica logs when it installed
// a snapshot from its leader (raftnode.SnapshotInstalledMsg; a test keeps
// the two equal, the harness itself speaks to seatd only from outside).
const snapshotInstalledMsg = "installed a snapshot from the leader"

// checkpointBehindMsg is the line a seatd replica logs when it wrote its
// state machine to Pebble behind apply (raftnode.CheckpointBehindMsg).
const checkpointBehindMsg = "checkpointed the state machine behind apply"

// floorMovedMsg is the line a seatd node logs when its raft log's cleaner
// moved the log's floor (raftnode.LogFloorMovedMsg).
const floorMovedMsg = "moved the raft log's floor"

// logCleanerEnv is raftnode.LogCleanerEnv, which a faults build of seatd
// reads.
const logCleanerEnv = "SEATD_FAULTS_LOG_CLEANER"

// logCleanerTuning shrinks the nodes' raft log cleaners
// (raftnode.LogCleanerEnv: minStep, deleteChunk, copyAfter, copyChunk), so
// that a short run moves the floor, sweeps and copies under its faults:
// by default each takes 2^14 keys or more, more than a run writes.
const logCleanerTuning = "256,64,1024,16"

// logPaths are the nodes' log files (each kept across restarts).
func (tc *testCluster) logPaths() []string {
	var out []string
	for _, n := range tc.procs.Nodes() {
		out = append(out, n.LogPath)
	}
	return out
}

// countInstalls counts the snapshot installs the logs record; a log that
// cannot be read counts none.
func countInstalls(paths []string) int { return countLines(paths, snapshotInstalledMsg) }

// countLines counts the lines of the logs that hold msg.
func countLines(paths []string, msg string) int {
	n := 0
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if strings.Contains(sc.Text(), msg) {
				n++
			}
		}
		f.Close()
	}
	return n
}
