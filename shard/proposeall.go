package shard

import (
	"context"
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// ProposeAll applies each of cmds to the group of shows[i] and answers each
// in order with what Propose would. The commands of a group this node leads
// are queued together (raftnode.Group.ProposeAll), so that they share one
// raft entry instead of racing the group's proposer one by one; a command
// whose attempt there failed in a way Propose retries goes on as Propose
// would. Commands of other groups go through Propose, concurrently (the
// forwarder batches those bound for one node).
func (r *Router) ProposeAll(ctx context.Context, shows []string, cmds []*ledgerpb.Command) ([]*ledgerpb.Result, []error) {
	results, errs := make([]*ledgerpb.Result, len(cmds)), make([]error, len(cmds))
	byGroup := map[uint32][]int{}
	for i, show := range shows {
		group := r.smap.GroupFor(show)
		byGroup[group] = append(byGroup[group], i)
	}
	var wg sync.WaitGroup
	for group, idx := range byGroup {
		g, err := r.node.Group(group)
		if err != nil || len(idx) == 1 || !g.IsLeader() || r.checkLeader(group) != nil {
			for _, i := range idx {
				wg.Go(func() { results[i], errs[i] = r.Propose(ctx, shows[i], cmds[i]) })
			}
			continue
		}
		wg.Go(func() {
			some := make([]*ledgerpb.Command, len(idx))
			for k, i := range idx {
				some[k] = cmds[i]
			}
			res, es := g.ProposeAll(ctx, some)
			var retries sync.WaitGroup
			for k, i := range idx {
				if es[k] == nil || !retryable(es[k]) {
					results[i], errs[i] = res[k], es[k]
					continue
				}
				first := es[k]
				retries.Go(func() { results[i], errs[i] = r.proposeFrom(ctx, group, cmds[i], first) })
			}
			retries.Wait()
		})
	}
	wg.Wait()
	return results, errs
}
