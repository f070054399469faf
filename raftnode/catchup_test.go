package raftnode

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// A replica hosted afresh under a node id the group knew must not vote
// before it holds what was committed when it joined: an empty replica
// would otherwise grant any candidate its vote (jepsen seed 21 lost
// committed entries that way). Once re-added and caught up, it votes again.
func TestFreshReplicaRefusesVotesUntilCaughtUp(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	for i := 0; i < 20; i++ {
		mustPropose(t, leader, holdCmd("c", "r"+string(rune('a'+i)), 60_000, "B"+string(rune('1'+i%9))))
	}
	fresh := (li + 1) % 3
	freshID := tc.peers[fresh].ID
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.RemoveVoter(ctx, freshID); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[fresh].DropGroup(0, true); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[fresh].HostGroup(0); err != nil {
		t.Fatal(err)
	}
	mark := filepath.Join(tc.nodes[fresh].groupDir(0), catchUpFile)
	if !exists(mark) {
		t.Fatalf("a fresh replica has no %s mark", catchUpFile)
	}
	fg, err := tc.nodes[fresh].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	// The third replica asks for a vote with a log far behind the group's.
	other := (li + 2) % 3
	og, err := tc.nodes[other].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	req := &raft.RequestVoteRequest{RPCHeader: og.rpcHeader(), Term: leader.raft.CurrentTerm() + 5, LastLogIndex: 3, LastLogTerm: 1}
	var resp raft.RequestVoteResponse
	// Addressed to the new replica's own id: one addressed to the node's
	// earlier replica never gets this far (incarnation_test.go).
	if err := og.transport.RequestVote(fg.self, raft.ServerAddress(tc.peers[fresh].RaftAddr), req, &resp); err != nil {
		t.Fatal(err)
	}
	if resp.Granted {
		t.Fatal("the fresh, empty replica granted its vote to a candidate whose log lacks committed entries")
	}

	// Its catch-up target comes only from a leader of the earlier replica's
	// last term or a later one: an older, deposed leader's commit index may
	// miss entries the earlier replica helped commit.
	floor := fg.catchUp.floor
	if floor == 0 || floor > leader.raft.CurrentTerm() {
		t.Fatalf("catch-up floor = %d, want the dropped replica's term (leader at %d)", floor, leader.raft.CurrentTerm())
	}
	if floor > 1 {
		old := &raft.AppendEntriesRequest{Term: floor - 1, LeaderCommitIndex: 3, PrevLogEntry: 3, PrevLogTerm: floor - 1}
		fg.screen(raft.RPC{Command: old})
		if got := fg.catchUp.target.Load(); got != 0 {
			t.Fatalf("an append of term %d (below the floor %d) set the catch-up target to %d", floor-1, floor, got)
		}
	}

	// Added back, it catches up and may vote again.
	if err := leader.AddVoter(ctx, freshID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for fg.catchUp.on.Load() || exists(mark) {
		if time.Now().After(deadline) {
			t.Fatalf("the re-added replica never left catch-up (last index %d, target %d, leader at %d)",
				fg.raft.LastIndex(), fg.catchUp.target.Load(), leader.raft.LastIndex())
		}
		mustPropose(t, leader, holdCmd("c2", "x"+time.Now().Format("150405.000000"), 60_000, "C1"))
		time.Sleep(20 * time.Millisecond)
	}
}
