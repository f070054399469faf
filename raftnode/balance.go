package raftnode

import (
	"time"

	"github.com/hashicorp/raft"
)

// Leadership balance: elections pick leaders at random, so one node may end
// up leading most groups (after a restart, every group another node led
// while it was down). A leader does all of a group's fsyncs first and serves
// its reads, so each node hands away, one group per round, the leadership it
// holds beyond its fair share to the least loaded up replica. It judges by
// what its own replicas know, which with full replication is the whole
// cluster.

// balanceRound moves at most one leadership off this node.
func (n *Node) balanceRound() {
	groups := n.Groups()
	leads := map[string]int{}
	var mine []*Group
	nodes := map[string]bool{}
	for _, g := range groups {
		if l := g.Leader(); l != "" {
			leads[l]++
		}
		if g.IsLeader() {
			mine = append(mine, g)
		}
		reps, err := g.Replicas()
		if err != nil {
			return
		}
		for _, r := range reps {
			nodes[r] = true
		}
	}
	if len(nodes) == 0 {
		return
	}
	fair := (len(groups) + len(nodes) - 1) / len(nodes)
	if len(mine) <= fair {
		return
	}
	for _, g := range mine {
		to := leastLoaded(g, leads, fair, n.cfg.NodeID)
		if to == "" {
			continue
		}
		n.cfg.Logger.Info("moving leadership to balance", "group", g.id, "term", g.raft.CurrentTerm(), "to", to, "leads_here", len(mine), "fair", fair)
		g.raft.LeadershipTransferToServer(raft.ServerID(to), raft.ServerAddress(peerAddr(n.cfg.Peers, to)))
		return
	}
}

// leastLoaded picks g's replica leading the fewest groups, if it leads
// fewer than fair and the leader's heartbeats to it are not failing (a
// transfer to a dead node would stall the group's writes until it times out).
func leastLoaded(g *Group, leads map[string]int, fair int, self string) string {
	reps, err := g.Replicas()
	if err != nil {
		return ""
	}
	best := ""
	for _, r := range reps {
		if r == self || g.followerDown(r) || leads[r] >= fair {
			continue
		}
		if best == "" || leads[r] < leads[best] || (leads[r] == leads[best] && r < best) {
			best = r
		}
	}
	return best
}

// watchHeartbeats tracks, while this replica leads, which followers its
// heartbeats fail to reach (raft's observations).
func (g *Group) watchHeartbeats(obs <-chan raft.Observation) {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case o := <-obs:
			g.hb.Lock()
			switch d := o.Data.(type) {
			case raft.FailedHeartbeatObservation:
				g.hb.down[string(d.PeerID)] = true
			case raft.ResumedHeartbeatObservation:
				delete(g.hb.down, string(d.PeerID))
			case raft.LeaderObservation:
				clear(g.hb.down) // a new term: the new leader observes afresh
				if d.LeaderID != "" {
					g.metrics.leaderChanges.Inc()
				}
			}
			g.hb.Unlock()
		}
	}
}

func (g *Group) followerDown(id string) bool {
	g.hb.Lock()
	defer g.hb.Unlock()
	return g.hb.down[id]
}

// runBalancer runs balance rounds until the node closes.
func (n *Node) runBalancer() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.BalanceInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
			n.balanceRound()
		}
	}
}
