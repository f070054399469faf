// This file proves replica incarnations (incarnation.go): a replica that
// HostGroup starts is a new raft server, and RPCs a sender addressed to an
// earlier replica of the node (a vote, an append) are refused by the new
// one, so no old configuration can count the empty replica as its old
// voter; the incarnation survives a restart,
// a second re-host draws another, and bootstrapped replicas (as in data
// dirs written before incarnations) keep their plain ids; and AddVoter does
// not add a node whose earlier replica the group still names.
package raftnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestServerIDsAndAddresses(t *testing.T) {
	for _, tt := range []struct {
		node string
		inc  uint64
		id   raft.ServerID
	}{
		{"n1", 0, "n1"},
		{"n1", 3, "n1#0000000000000003"},
		{"node-7", 0x9f86d081884c7d65, "node-7#9f86d081884c7d65"},
	} {
		id := replicaID(tt.node, tt.inc)
		if id != tt.id {
			t.Errorf("replicaID(%s, %x) = %s, want %s", tt.node, tt.inc, id, tt.id)
		}
		if got := nodeOf(id); got != tt.node {
			t.Errorf("nodeOf(%s) = %s, want %s", id, got, tt.node)
		}
		if got := incarnationOf(string(id)); got != tt.inc {
			t.Errorf("incarnationOf(%s) = %x, want %x", id, got, tt.inc)
		}
		addr := withIncarnation("10.0.0.1:7000", tt.inc)
		if got := incarnationOf(addr); got != tt.inc || dialAddr(addr) != "10.0.0.1:7000" {
			t.Errorf("address %s: incarnation %x, dial %s; want %x, 10.0.0.1:7000", addr, got, dialAddr(addr), tt.inc)
		}
	}
}

// rpcHeader is the header g's raft puts on its RPCs, for RPCs a test
// sends in g's name.
func (g *Group) rpcHeader() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(g.self), Addr: []byte(withIncarnation(g.node.raftAddr(g.node.cfg.NodeID), g.incarnation))}
}

// rehost removes node i's replica of group 0 from the group, drops it and
// hosts it afresh, returning the new replica.
func rehost(t *testing.T, tc *testCluster, leader *Group, i int) *Group {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.RemoveVoter(ctx, tc.peers[i].ID); err != nil {
		t.Fatalf("RemoveVoter(%s) = %v", tc.peers[i].ID, err)
	}
	if err := tc.nodes[i].DropGroup(context.Background(), 0, true); err != nil {
		t.Fatalf("DropGroup on %s = %v", tc.peers[i].ID, err)
	}
	if err := leader.AddVoter(ctx, tc.peers[i].ID); !errors.Is(err, ErrNotHosted) {
		t.Fatalf("AddVoter(%s) before HostGroup = %v, want ErrNotHosted", tc.peers[i].ID, err)
	}
	if err := tc.nodes[i].HostGroup(0); err != nil {
		t.Fatalf("HostGroup on %s = %v", tc.peers[i].ID, err)
	}
	g, err := tc.nodes[i].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// addBack adds node i's replica to the group and waits until it holds the
// leader's log.
func addBack(t *testing.T, tc *testCluster, leader *Group, i int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.AddVoter(ctx, tc.peers[i].ID); err != nil {
		t.Fatalf("AddVoter(%s) = %v", tc.peers[i].ID, err)
	}
	g, _ := tc.nodes[i].Group(0)
	if id := leader.serverID(tc.peers[i].ID); id != g.self {
		t.Fatalf("the configuration names %s as %s, want its replica %s", tc.peers[i].ID, id, g.self)
	}
	mustPropose(t, leader, holdCmd("c", "after-"+string(g.self), 60_000, "C2"))
	deadline := time.Now().Add(10 * time.Second)
	for g.raft.LastIndex() < leader.raft.LastIndex() {
		if time.Now().After(deadline) {
			t.Fatalf("%s never caught up (last index %d, leader's %d)", g.self, g.raft.LastIndex(), leader.raft.LastIndex())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRehostedReplicaRefusesRPCsForItsEarlierIncarnation(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	for i := 0; i < 10; i++ {
		mustPropose(t, leader, holdCmd("c", "r"+string(rune('a'+i)), 60_000, "B"+string(rune('1'+i))))
	}
	fresh, other := (li+1)%3, (li+2)%3
	freshNode := tc.peers[fresh].ID
	fg := rehost(t, tc, leader, fresh)
	if fg.incarnation == 0 || fg.self == raft.ServerID(freshNode) {
		t.Fatalf("a re-hosted replica runs as %s, want an id with a new incarnation", fg.self)
	}

	// The third replica, with a configuration that names the earlier
	// replica, asks it for a vote with a log far behind the group's, and
	// sends it an append: both addressed to the plain id.
	og, err := tc.nodes[other].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	addr := raft.ServerAddress(tc.peers[fresh].RaftAddr)
	vote := &raft.RequestVoteRequest{RPCHeader: og.rpcHeader(), Term: leader.raft.CurrentTerm() + 5, LastLogIndex: 3, LastLogTerm: 1}
	var vresp raft.RequestVoteResponse
	err = og.transport.RequestVote(raft.ServerID(freshNode), addr, vote, &vresp)
	if err == nil && vresp.Granted {
		t.Fatalf("%s granted a vote addressed to its earlier incarnation %s", fg.self, freshNode)
	}
	if err == nil {
		t.Fatalf("RequestVote(%s) reached %s, want the connection refused", freshNode, fg.self)
	}
	app := &raft.AppendEntriesRequest{RPCHeader: og.rpcHeader(), Term: leader.raft.CurrentTerm() + 5, LeaderCommitIndex: 3}
	var aresp raft.AppendEntriesResponse
	if err := og.transport.AppendEntries(raft.ServerID(freshNode), addr, app, &aresp); err == nil {
		t.Fatalf("AppendEntries(%s) reached %s, want the connection refused", freshNode, fg.self)
	}
	var presp raft.RequestPreVoteResponse
	pre := &raft.RequestPreVoteRequest{RPCHeader: og.rpcHeader(), Term: vote.Term, LastLogIndex: 3, LastLogTerm: 1}
	if err := og.transport.RequestPreVote(raft.ServerID(freshNode), addr, pre, &presp); err == nil {
		t.Fatalf("RequestPreVote(%s) reached %s, want the connection refused", freshNode, fg.self)
	}
	var tresp raft.TimeoutNowResponse
	if err := og.transport.TimeoutNow(raft.ServerID(freshNode), addr, &raft.TimeoutNowRequest{RPCHeader: og.rpcHeader()}, &tresp); err == nil {
		t.Fatalf("TimeoutNow(%s) reached %s, want the connection refused", freshNode, fg.self)
	}
	var sresp raft.InstallSnapshotResponse
	snap := &raft.InstallSnapshotRequest{RPCHeader: og.rpcHeader(), SnapshotVersion: raft.SnapshotVersionMax, Term: vote.Term, LastLogIndex: 3, LastLogTerm: 1, Size: 1}
	if err := og.transport.InstallSnapshot(raft.ServerID(freshNode), addr, snap, &sresp, strings.NewReader("x")); err == nil {
		t.Fatalf("InstallSnapshot(%s) reached %s, want the connection refused", freshNode, fg.self)
	}
	if got := fg.raft.CurrentTerm(); got > leader.raft.CurrentTerm() {
		t.Fatalf("%s took term %d from RPCs addressed to %s", fg.self, got, freshNode)
	}
	// Addressed to the new id, a vote reaches raft (of the leader's term,
	// so that the replica does not unseat the leader once added back).
	now := &raft.RequestVoteRequest{RPCHeader: og.rpcHeader(), Term: leader.raft.CurrentTerm(), LastLogIndex: 3, LastLogTerm: 1}
	if err := og.transport.RequestVote(fg.self, addr, now, &vresp); err != nil {
		t.Fatalf("RequestVote(%s) = %v, want it delivered", fg.self, err)
	}

	addBack(t, tc, leader, fresh)
	reps, err := leader.Replicas()
	if err != nil || len(reps) != 3 || reps[fresh] != freshNode {
		t.Fatalf("Replicas() = %v, %v; want the three node ids", reps, err)
	}

	// A second re-host draws yet another incarnation; the first one's
	// traffic is refused as the plain id's is.
	first := fg.self
	fg2 := rehost(t, tc, leader, fresh)
	if fg2.self == first || fg2.incarnation == 0 {
		t.Fatalf("second re-host runs as %s, want an incarnation other than %s's", fg2.self, first)
	}
	if err := og.transport.RequestVote(first, addr, vote, &vresp); err == nil {
		t.Fatalf("RequestVote(%s) reached %s, want the connection refused", first, fg2.self)
	}
	addBack(t, tc, leader, fresh)
}

func TestIncarnationSurvivesRestart(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	fresh := (li + 1) % 3
	// A bootstrapped replica keeps its plain id, as in data dirs written
	// before incarnations: no incarnation file, and it restarts as before.
	other := (li + 2) % 3
	if exists(filepath.Join(tc.nodes[other].groupDir(0), incarnationFile)) {
		t.Fatal("a bootstrapped replica has an incarnation file")
	}
	tc.nodes[other].Close()
	n, err := Start(tc.cfg(other))
	if err != nil {
		t.Fatalf("restart %s: %v", tc.peers[other].ID, err)
	}
	tc.nodes[other] = n
	if og, _ := n.Group(0); og.self != raft.ServerID(tc.peers[other].ID) {
		t.Fatalf("a restarted bootstrapped replica runs as %s, want %s", og.self, tc.peers[other].ID)
	}
	mustPropose(t, leader, holdCmd("c", "r1", 60_000, "A1"))

	fg := rehost(t, tc, leader, fresh)
	addBack(t, tc, leader, fresh)
	before := fg.self
	tc.nodes[fresh].Close()
	n, err = Start(tc.cfg(fresh))
	if err != nil {
		t.Fatalf("restart %s: %v", tc.peers[fresh].ID, err)
	}
	tc.nodes[fresh] = n
	fg, _ = n.Group(0)
	if fg.self != before {
		t.Fatalf("after a restart the replica runs as %s, want %s", fg.self, before)
	}
	leader, _ = tc.leader()
	mustPropose(t, leader, holdCmd("c", "r2", 60_000, "A2"))
	deadline := time.Now().Add(10 * time.Second)
	for fg.raft.LastIndex() < leader.raft.LastIndex() {
		if time.Now().After(deadline) {
			t.Fatalf("restarted %s never caught up", fg.self)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// HostGroup leaves a tombstone until the incarnation is on disk, and a
// directory with an incarnation but no raft state yet (a HostGroup cut
// short) is hosted at start under that incarnation, never bootstrapped.
func TestHostGroupCutShortRestartsAsTheSameReplica(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	fresh := (li + 1) % 3
	fg := rehost(t, tc, leader, fresh)
	if exists(filepath.Join(fg.node.groupDir(0), tombstoneFile)) {
		t.Fatal("a hosted replica still has a tombstone")
	}
	inc := fg.incarnation
	tc.nodes[fresh].Close()
	dir := groupDirOf(tc.cfg(fresh).DataDir, 0)
	if err := os.Remove(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	n, err := Start(tc.cfg(fresh))
	if err != nil {
		t.Fatalf("restart %s: %v", tc.peers[fresh].ID, err)
	}
	tc.nodes[fresh] = n
	g, err := n.Group(0)
	if err != nil {
		t.Fatalf("the replica is not hosted after the restart: %v", err)
	}
	if g.incarnation != inc {
		t.Fatalf("restarted as incarnation %x, want %x", g.incarnation, inc)
	}
	if f := g.raft.GetConfiguration(); f.Error() != nil || len(f.Configuration().Servers) != 0 {
		t.Fatalf("the restarted replica has configuration %v, want none (it waits for its leader)", f.Configuration())
	}
}

// A configuration that still names a node's earlier replica (dropped with
// force before its removal) is not silently joined by the node's new one:
// AddVoter refuses until RemoveVoter has taken the earlier one out.
func TestAddVoterRefusesWhileAnEarlierIncarnationIsMember(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	fresh := (li + 1) % 3
	node := tc.peers[fresh].ID
	if err := tc.nodes[fresh].DropGroup(context.Background(), 0, true); err != nil {
		t.Fatal(err)
	}
	if err := tc.nodes[fresh].HostGroup(0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.AddVoter(ctx, node); !errors.Is(err, ErrOtherIncarnation) {
		t.Fatalf("AddVoter(%s) with %s still a member = %v, want ErrOtherIncarnation", node, node, err)
	}
	if err := leader.RemoveVoter(ctx, node); err != nil {
		t.Fatal(err)
	}
	addBack(t, tc, leader, fresh)
}

// A replica joins as a non-voter and is made a voter only once its log
// holds what was committed when it joined (as CockroachDB adds learners):
// when AddVoter returns, it has caught up.
func TestAddVoterWaitsForTheLearner(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	for i := 0; i < 200; i++ {
		mustPropose(t, leader, holdCmd(fmt.Sprintf("c%d", i), "r", 0, fmt.Sprintf("%c%d", 'A'+i/50, i%50+1)))
	}
	fresh := (li + 1) % 3
	g := rehost(t, tc, leader, fresh)
	committed := leader.Raft().CommitIndex()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := leader.AddVoter(ctx, tc.peers[fresh].ID); err != nil {
		t.Fatalf("AddVoter = %v", err)
	}
	if last := g.Raft().LastIndex(); last < committed {
		t.Errorf("the new replica holds index %d when it became a voter, the group had committed %d", last, committed)
	}
	if !leader.isVoter(g.self) {
		t.Errorf("%s is not a voter after AddVoter", g.self)
	}
}
