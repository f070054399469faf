// This file proves Router.ProposeAll: at the node that leads the groups,
// the commands of each group share one raft entry and each gets its own
// result, in order; at a node that leads none, every command is forwarded
// and answered as Propose answers it.
package shard

import (
	"context"
	"testing"

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
