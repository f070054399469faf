// This file is the tripwire of the seams into hashicorp/raft (issue 17,
// item 7): raftnode leans on behaviours of raft v1.7.3 that its API does
// not promise, and the tests named below pin each. An upgrade of raft
// fails here first, loudly, so that whoever upgrades re-checks them.
package raftnode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// raftVersionPinned is the hashicorp/raft whose behaviours the seams were
// checked against.
const raftVersionPinned = "v1.7.3"

// raftSeams are the behaviours the seams rely on, each with the tests that
// pin it.
var raftSeams = []string{
	"heartbeats have the shape isHeartbeat recognises (beats_transport.go): TestFollowerLearnsCommitsFromHeartbeatFrames counts the frames they travel in",
	"a follower applies up to the LeaderCommitIndex of an AppendEntries handed to its RPC channel (learnCommit): TestFollowerLearnsCommitsFromHeartbeatFrames, TestFreshViewWaitsForTheStateMachine",
	"a MonotonicLogStore drops its old log when a snapshot is installed (checkedLogs.IsMonotonic): TestFollowerCatchesUpFromSnapshot restarts the follower after an install",
	"NetworkTransport runs over any net.Conn stream the mux hands it, one group per connection (mux.go): the mux tests",
	"AddNonvoter then AddVoter promotes a caught-up learner (AddVoter): TestAddVoterWaitsForTheLearner",
}

func TestRaftIsTheVersionTheSeamsWereCheckedAgainst(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mod)) {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "github.com/hashicorp/raft" {
			continue
		}
		if f[1] != raftVersionPinned {
			t.Fatalf("go.mod requires hashicorp/raft %s, the seams were checked against %s. Re-check each behaviour and its tests, then update raftVersionPinned:\n- %s",
				f[1], raftVersionPinned, strings.Join(raftSeams, "\n- "))
		}
		return
	}
	t.Fatal("go.mod does not require github.com/hashicorp/raft")
}
