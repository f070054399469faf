// This file proves Router.ProposeAll: at the node that leads the groups,
// the commands of each group share one raft entry and each gets its own
// result, in order; at a node that leads none, every command is forwarded
// and answered as Propose answers it. And Peer.ProposeBatch: the commands
// of one group it is sent share one entry too.
package shard

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestProposeAllSharesEntriesPerGroup(t *testing.T) {
	c := startFwdCluster(t)
	shows := c.shows("all")
	applied := func() (sum uint64) {
		for g := range uint32(fwdGroups) {
			grp, err := c.lead.node.Group(g)
			if err != nil {
				t.Fatal(err)
			}
			sum += grp.Machine().Applied()
		}
		return sum
	}
	for _, tt := range []struct {
		name    string
		r       *Router
		holds   []fwdHold
		entries uint64 // at most, at the leader
	}{
		{"at the leader", c.lead, fwdHolds(shows, 12), fwdGroups},
		{"forwarded", c.via, fwdHolds(shows, 30)[12:], 0},
	} {
		ids, cmds := make([]string, len(tt.holds)), make([]*ledgerpb.Command, len(tt.holds))
		for i, h := range tt.holds {
			ids[i], cmds[i] = h.show, h.cmd
		}
		before := applied()
		ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
		results, errs := tt.r.ProposeAll(ctx, ids, cmds)
		cancel()
		for i, h := range tt.holds {
			seat := h.cmd.GetHold().SeatIds[0]
			if errs[i] != nil || results[i].GetCode() != ledgerpb.Code_CODE_OK || results[i].SeatIds[0] != seat {
				t.Errorf("%s: ProposeAll [%d] = %v, %v; want OK holding %s", tt.name, i, results[i], errs[i], seat)
			}
		}
		if got := applied() - before; tt.entries > 0 && got != tt.entries {
			t.Errorf("%s: %d commands over %d groups took %d entries, want one per group", tt.name, len(cmds), fwdGroups, got)
		}
	}
}

func TestProposeBatchSharesEntriesPerGroup(t *testing.T) {
	c := startFwdCluster(t)
	shows := c.shows("peer")
	conn, err := grpc.NewClient(c.leadAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	holds := fwdHolds(shows, 20)
	req := &ledgerpb.ProposeBatchRequest{}
	for _, h := range holds {
		req.Requests = append(req.Requests, &ledgerpb.ProposeRequest{GroupId: c.lead.smap.GroupFor(h.show), Command: h.cmd, Hops: 1})
	}
	g, err := c.lead.node.Group(c.lead.smap.GroupFor(shows[0]))
	if err != nil {
		t.Fatal(err)
	}
	before := g.Machine().Applied()
	ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
	defer cancel()
	resp, err := ledgerpb.NewPeerClient(conn).ProposeBatch(ctx, req)
	if err != nil || len(resp.Responses) != len(holds) {
		t.Fatalf("ProposeBatch = %v, %v", resp, err)
	}
	for i, r := range resp.Responses {
		if r.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK || r.Result.GetCode() != ledgerpb.Code_CODE_OK ||
			r.Result.SeatIds[0] != holds[i].cmd.GetHold().SeatIds[0] {
			t.Errorf("ProposeBatch [%d] = %v, want OK holding %v", i, r, holds[i].cmd.GetHold().SeatIds)
		}
	}
	if got := g.Machine().Applied() - before; got != 1 {
		t.Errorf("10 commands of one group in a ProposeBatch took %d entries, want 1", got)
	}
}
