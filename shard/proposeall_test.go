// This file proves Router.ProposeAll: at the node that leads the groups,
// the commands of each group share one raft entry and each gets its own
// result, in order; at a node that leads none, every command is forwarded
// and answered as Propose answers it. And Peer.ProposeBatch: the commands
// of one group it is sent share one entry too.
package shard

import (
	"context"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestProposeAllSharesEntriesPerGroup(t *testing.T) {
	c := startFwdCluster(t)
	shows := c.shows("all")
	for _, tt := range []struct {
		name   string
		r      *Router
		holds  []fwdHold
		shared bool // one entry per group
	}{
		{"at the leader", c.lead, fwdHolds(shows, 12), true},
		{"forwarded", c.via, fwdHolds(shows, 30)[12:], false},
	} {
		ids, cmds := make([]string, len(tt.holds)), make([]*ledgerpb.Command, len(tt.holds))
		for i, h := range tt.holds {
			ids[i], cmds[i] = h.show, h.cmd
		}
		ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
		results, errs := tt.r.ProposeAll(ctx, ids, cmds)
		cancel()
		for i, h := range tt.holds {
			seat := h.cmd.GetHold().SeatIds[0]
			if errs[i] != nil || results[i].GetCode() != ledgerpb.Code_CODE_OK || results[i].SeatIds[0] != seat {
				t.Errorf("%s: ProposeAll [%d] = %v, %v; want OK holding %s", tt.name, i, results[i], errs[i], seat)
			}
		}
		if got := entriesOf(t, results); tt.shared && got != fwdGroups {
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
	var first []*ledgerpb.Result // of shows[0]'s group
	for i, r := range resp.Responses {
		if c.lead.smap.GroupFor(holds[i].show) == c.lead.smap.GroupFor(shows[0]) {
			first = append(first, r.Result)
		}
	}
	if got := entriesOf(t, first); got != 1 {
		t.Errorf("%d commands of one group in a ProposeBatch took %d entries, want 1", len(first), got)
	}
}

// entriesOf counts the raft entries that made the holds of results: a
// hold's id names its group and entry (h<group>-<index>-<position>).
// Counting entries by the applied index instead would count those others
// proposed meanwhile (a node's registration, say).
func entriesOf(t *testing.T, results []*ledgerpb.Result) int {
	t.Helper()
	entries := map[string]bool{}
	for _, r := range results {
		i := strings.LastIndexByte(r.GetHoldId(), '-')
		if i < 0 {
			t.Fatalf("hold id %q names no entry", r.GetHoldId())
		}
		entries[r.GetHoldId()[:i]] = true
	}
	return len(entries)
}

// TestByGroup checks byGroup against its definition: each group once, in
// order of its first show, with its shows' positions in order.
func TestByGroup(t *testing.T) {
	smap := Map{Groups: 8}
	for _, n := range []int{0, 1, 2, 7, 23, 256} {
		shows := make([]string, n)
		for i := range shows {
			shows[i] = "show-" + strings.Repeat("x", i%5) + string(rune('a'+i%11))
		}
		var want []groupCommands
		for i, s := range shows {
			g := smap.GroupFor(s)
			k := 0
			for k < len(want) && want[k].group != g {
				k++
			}
			if k == len(want) {
				want = append(want, groupCommands{group: g})
			}
			want[k].idx = append(want[k].idx, i)
		}
		got := byGroup(smap, shows)
		if len(got) != len(want) {
			t.Fatalf("%d shows: %d groups, want %d", n, len(got), len(want))
		}
		for k := range want {
			if got[k].group != want[k].group || !slices.Equal(got[k].idx, want[k].idx) {
				t.Fatalf("%d shows: group %d is %v, want %v", n, k, got[k], want[k])
			}
		}
	}
}
