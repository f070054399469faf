// This file proves the Admin API on a real 3-node cluster: Status reports
// every group each node hosts with one agreed leader and equal digests at
// equal applied indexes, and TransferLeader moves a group's leadership (and
// is refused, naming the leader, on a node that does not lead).
package main

import (
	"context"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestAdminStatusAndTransfer(t *testing.T) {
	c := startCluster(t, false)
	c.createShow(0, "admin-show")
	c.mustHold(1, "admin-show", "cl", "r1", 60, "A1")
	c.converge()

	admins := make([]ledgerpb.AdminClient, len(c.conns))
	for i, conn := range c.conns {
		admins[i] = ledgerpb.NewAdminClient(conn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	byGroup := map[uint32][]*ledgerpb.GroupStatus{}
	for i, a := range admins {
		st, err := a.Status(ctx, &ledgerpb.StatusRequest{Digests: true})
		if err != nil {
			t.Fatalf("%s: Status: %v", c.peers[i].ID, err)
		}
		if st.NodeId != c.peers[i].ID || len(st.Nodes) != len(c.peers) {
			t.Fatalf("%s: Status = node %q with %d peers, want itself with %d", c.peers[i].ID, st.NodeId, len(st.Nodes), len(c.peers))
		}
		for _, g := range st.Groups {
			byGroup[g.Group] = append(byGroup[g.Group], g)
		}
	}
	if len(byGroup) != clusterGroups {
		t.Fatalf("Status covers %d groups, want %d", len(byGroup), clusterGroups)
	}
	for id, gs := range byGroup {
		leaders := 0
		for _, g := range gs {
			if g.State == "Leader" {
				leaders++
			}
			if g.LeaderId != gs[0].LeaderId || g.Digest == "" {
				t.Errorf("group %d: replicas disagree on the leader or lack a digest: %v", id, gs)
			}
			if g.DigestIndex == gs[0].DigestIndex && g.Digest != gs[0].Digest {
				t.Errorf("group %d at index %d: digests differ: %s vs %s (S6)", id, g.DigestIndex, g.Digest, gs[0].Digest)
			}
		}
		if leaders != 1 {
			t.Errorf("group %d has %d leaders in Status, want 1", id, leaders)
		}
	}

	// Move group 0's leadership and check the refusal on a follower.
	leader := c.waitLeader(0)
	follower := (leader + 1) % len(c.peers)
	_, err := admins[follower].TransferLeader(ctx, &ledgerpb.TransferLeaderRequest{Group: 0})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("TransferLeader on follower %s = %v, want Unavailable (NOT_LEADER)", c.peers[follower].ID, err)
	}
	to := c.peers[follower].ID
	if _, err := admins[leader].TransferLeader(ctx, &ledgerpb.TransferLeaderRequest{Group: 0, ToNode: to}); err != nil {
		t.Fatalf("TransferLeader(group 0 -> %s): %v", to, err)
	}
	if got := c.waitLeader(0); got != follower {
		t.Fatalf("after TransferLeader the leader of group 0 is %s, want %s", c.peers[got].ID, to)
	}
}

// TestAdminReplaceReplica removes a follower's replica of a group while
// holds go on, drops its state, hosts it afresh and adds it back: no
// acknowledged hold is lost, the dropped node refuses to drop a group it is
// still a member of and drops it without force once removed (whether or not
// it heard of its removal), a restart does not bring a dropped replica back,
// and all replicas end with equal digests.
func TestAdminReplaceReplica(t *testing.T) {
	c := startCluster(t, false)
	show := "move-show"
	c.createShow(0, show)
	group := c.smap.GroupFor(show)
	leader := c.waitLeader(group)
	f := (leader + 1) % len(c.peers)
	fid := c.peers[f].ID
	adm := func(i int) ledgerpb.AdminClient { return ledgerpb.NewAdminClient(c.conns[i]) }
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	h1 := c.mustHold(0, show, "cl", "r1", 600, "A1")
	if _, err := adm(f).DropGroup(ctx, &ledgerpb.GroupRequest{Group: group}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("DropGroup on a member = %v, want FailedPrecondition", err)
	}
	if _, err := adm(leader).RemoveVoter(ctx, &ledgerpb.VoterRequest{Group: group, Node: fid}); err != nil {
		t.Fatalf("RemoveVoter(%s): %v", fid, err)
	}
	// The removed replica may never learn of its removal (the leader stops
	// replicating to it once it appends the change), so DropGroup asks the
	// leader, whose committed configuration omits it. The loop rides out a
	// leader election between the two calls.
	deadline := time.Now().Add(clusterWaitMax)
	for {
		_, err := adm(f).DropGroup(ctx, &ledgerpb.GroupRequest{Group: group})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DropGroup after RemoveVoter: %v", err)
		}
		time.Sleep(pollInterval)
	}
	h2 := c.mustHold(f, show, "cl", "r2", 600, "A2") // forwarded by a node without the group
	c.kill(f)
	c.restart(f)
	if _, err := c.nodes[f].raft.Group(group); err == nil {
		t.Fatalf("%s hosts group %d again after a restart, want the tombstone to keep it away", fid, group)
	}
	if _, err := adm(f).HostGroup(ctx, &ledgerpb.GroupRequest{Group: group}); err != nil {
		t.Fatalf("HostGroup: %v", err)
	}
	leader = c.waitLeaderAmong(group, f)
	if _, err := adm(leader).AddVoter(ctx, &ledgerpb.VoterRequest{Group: group, Node: fid}); err != nil {
		t.Fatalf("AddVoter(%s): %v", fid, err)
	}
	c.mustHold(1, show, "cl", "r3", 600, "A3")
	c.converge()
	for _, h := range []*ledgerpb.HoldResponse{h1, h2} {
		got, err := c.clients[f].GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: show, HoldId: h.HoldId, Consistency: ledgerpb.Consistency_STALE})
		if err != nil || got.State != ledgerpb.HoldState_HOLD_STATE_HELD {
			t.Fatalf("stale GetHold(%s) on the re-added %s = %v, %v; want HELD", h.HoldId, fid, got, err)
		}
	}
}

// waitLeaderAmong waits for a leader of group among the nodes other than
// skip (which does not host it yet).
func (c *testCluster) waitLeaderAmong(group uint32, skip int) int {
	c.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		for _, i := range c.live() {
			if i != skip && c.group(i, group).IsLeader() {
				return i
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("group %d has no leader", group)
		}
		time.Sleep(pollInterval)
	}
}
