package shard

import (
	"context"
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// ProposeAll applies each of cmds to the group of shows[i] and answers each
// in order with what Propose would. The commands of a group this node leads
// are queued together (raftnode.Group.Queue), so that they share one raft
// entry instead of racing the group's proposer one by one; every such
// group's are queued before any is waited for, on the calling goroutine. A
// command whose attempt there failed in a way Propose retries goes on as
// Propose would. Commands of other groups go through Propose, concurrently
// (the forwarder batches those bound for one node).
func (r *Router) ProposeAll(ctx context.Context, shows []string, cmds []*ledgerpb.Command) ([]*ledgerpb.Result, []error) {
	results, errs := make([]*ledgerpb.Result, len(cmds)), make([]error, len(cmds))
	var wg sync.WaitGroup
	var local []localGroup
	for _, gc := range byGroup(r.smap, shows) {
		g, err := r.node.Group(gc.group)
		if err != nil || !g.IsLeader() || r.checkLeader(gc.group) != nil {
			for _, i := range gc.idx {
				wg.Go(func() { results[i], errs[i] = r.Propose(ctx, shows[i], cmds[i]) })
			}
			continue
		}
		some := make([]*ledgerpb.Command, len(gc.idx))
		for k, i := range gc.idx {
			some[k] = cmds[i]
		}
		local = append(local, localGroup{gc, g.Queue(ctx, some)})
	}
	for _, lg := range local {
		res, es := lg.queued.Wait(ctx)
		for k, i := range lg.idx {
			if es[k] == nil || !retryable(es[k]) {
				results[i], errs[i] = res[k], es[k]
				continue
			}
			first, group := es[k], lg.group
			wg.Go(func() { results[i], errs[i] = r.proposeFrom(ctx, group, cmds[i], first) })
		}
	}
	wg.Wait()
	return results, errs
}

// groupCommands are the positions of a group's commands in ProposeAll's.
type groupCommands struct {
	group uint32
	idx   []int
}

// localGroup is a group's commands queued at its leader, this node.
type localGroup struct {
	groupCommands
	queued *raftnode.Queued
}

// byGroup returns the positions of shows by group, in order of each
// group's first show. A batch spans a few of the groups, so a scan per
// group costs less than a map. The groups' positions share one array: two
// allocations besides the result, however many groups.
func byGroup(smap Map, shows []string) []groupCommands {
	n := len(shows)
	at := make([]int, 2*n) // each show's group in out, then the positions
	var out []groupCommands
	for i, show := range shows {
		g := smap.GroupFor(show)
		k := 0
		for k < len(out) && out[k].group != g {
			k++
		}
		if k == len(out) {
			out = append(out, groupCommands{group: g})
		}
		at[i] = k
		at[n+k]++ // group k's count, until the positions take its place
	}
	start := n
	for k := range out {
		c := at[n+k]
		out[k].idx = at[start : start : start+c]
		start += c
	}
	for i := range n {
		gc := &out[at[i]]
		gc.idx = append(gc.idx, i)
	}
	return out
}
