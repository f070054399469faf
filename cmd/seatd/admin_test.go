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
