package raftnode

import (
	"math"
	"time"

	"github.com/hashicorp/raft"
)

// Leadership balance: elections pick leaders at random, so one node may end
// up leading most groups (after a restart, every group another node led
// while it was down). A leader does all of a group's fsyncs first and serves
// its reads, so each node hands away, one group per round, the leadership it
// holds beyond its fair share to the least loaded up replica.
//
// The fair share is the cluster's groups over the nodes that can lead: the
// nodes named by the configurations of the groups this node hosts, less
// those the registry marks DRAINING (peers.go). With every node hosting
// every group that is exact. With fewer replicas than nodes a node sees
// only its own groups' leaders, so it knows its own count exactly and
// others' from below: it never gives away a share it is owed (no churn once
// every node is at or under its share), and a leadership it gives to a node
// that had its share already comes back out at that node's next round. A
// node that hosts every group knows every count, so it also evens out
// counts within the share (2,2,0 becomes 2,1,1 when a node comes back). A
// DRAINING node's share is zero: it hands every leadership away.

// groupLead is what a balance round knows of one hosted group.
type groupLead struct {
	id       uint32
	leader   string
	replicas []string
	// down: followers the leader's heartbeats fail to reach (only known
	// where this node leads).
	down func(id string) bool
}

// balanceView is the input of one balance round.
type balanceView struct {
	self     string
	total    int // groups in the cluster
	groups   []groupLead
	draining func(id string) bool
}

// pick chooses at most one leadership to hand away: the group and the
// replica to hand it to, or ok false.
func (v balanceView) pick() (group uint32, to string, ok bool) {
	leads := map[string]int{}
	nodes := map[string]bool{}
	var mine []groupLead
	for _, g := range v.groups {
		if g.leader != "" {
			leads[g.leader]++
		}
		if g.leader == v.self {
			mine = append(mine, g)
		}
		for _, r := range g.replicas {
			if !v.draining(r) {
				nodes[r] = true
			}
		}
	}
	if len(nodes) == 0 || len(mine) == 0 {
		return 0, "", false
	}
	fair := (max(v.total, len(v.groups)) + len(nodes) - 1) / len(nodes)
	limit := fair // a target must lead fewer than this
	if v.draining(v.self) {
		fair, limit = 0, math.MaxInt
	}
	if len(mine) <= fair {
		if len(v.groups) < v.total || len(mine) < 2 {
			return 0, "", false
		}
		// This node hosts every group, so its counts are exact: at its
		// share it still hands one to a node leading two fewer (a node
		// that came back leads none, and 2,2,0 is within a share of 2).
		// Each such move lowers the sum of squared counts: no churn.
		limit = len(mine) - 1
	}
	for _, g := range mine {
		if to := v.leastLoaded(g, leads, limit); to != "" {
			return g.id, to, true
		}
	}
	return 0, "", false
}

// leastLoaded picks g's replica leading the fewest groups, if it leads
// fewer than limit, is not draining, and the leader's heartbeats to it are
// not failing (a transfer to a dead node would stall the group's writes
// until it times out).
func (v balanceView) leastLoaded(g groupLead, leads map[string]int, limit int) string {
	best := ""
	for _, r := range g.replicas {
		if r == v.self || v.draining(r) || g.down(r) || leads[r] >= limit {
			continue
		}
		if best == "" || leads[r] < leads[best] || (leads[r] == leads[best] && r < best) {
			best = r
		}
	}
	return best
}

// balanceRound moves at most one leadership off this node, and returns the
// group whose leadership it asked raft to hand away (nil: none).
func (n *Node) balanceRound() *Group {
	v := balanceView{self: n.cfg.NodeID, total: len(n.cfg.Groups),
		draining: func(id string) bool { p, _ := n.Peer(id); return p.Draining }}
	byID := map[uint32]*Group{}
	for _, g := range n.Groups() {
		reps, err := g.Replicas()
		if err != nil {
			return nil
		}
		v.groups = append(v.groups, groupLead{id: g.id, leader: g.Leader(), replicas: reps, down: g.followerDown})
		byID[g.id] = g
	}
	id, to, ok := v.pick()
	if !ok {
		return nil
	}
	g := byID[id]
	if !g.IsLeader() {
		return nil // lost it meanwhile
	}
	n.cfg.Logger.Info("moving leadership to balance", "group", g.id, "term", g.raft.CurrentTerm(), "to", to)
	g.raft.LeadershipTransferToServer(g.serverID(to), raft.ServerAddress(g.serverAddr(to)))
	return g
}

// serverAddr is a replica's address: the peer table's, else the one in the
// group's configuration.
func (g *Group) serverAddr(node string) string {
	if a := g.node.raftAddr(node); a != "" {
		return a
	}
	if f := g.raft.GetConfiguration(); f.Error() == nil {
		for _, s := range f.Configuration().Servers {
			if nodeOf(s.ID) == node {
				return string(s.Address)
			}
		}
	}
	return ""
}

// watchHeartbeats tracks, while this replica leads, which followers its
// heartbeats fail to reach, and when it last knew a leader (raft's
// observations).
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
				g.hb.down[nodeOf(d.PeerID)] = true
			case raft.ResumedHeartbeatObservation:
				delete(g.hb.down, nodeOf(d.PeerID))
			case raft.LeaderObservation:
				clear(g.hb.down) // a new term: the new leader observes afresh
				g.leaderless.observe(d.LeaderID != "")
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

// balanceSoon is the pace of balance rounds while a node is handing
// leaderships away: its first round after it starts, and the round after a
// move whose transfer took. A node moves one leadership a round, so at
// BalanceInterval alone a cluster just started (elections gave one node
// five of eight groups) or a node back from a restart took 10-15 s to
// balance, under load the while: seatbench's runs, which start with the
// cluster, measured that time's skew, and a leadership move landed in half
// of its stampedes with watchers (whose setup outlasts the first interval).
// A transfer that did not take (the group still leads here a round later)
// returns the node to BalanceInterval, so a follower that cannot take over
// is not asked again every second (a transfer holds the group's writes for
// up to an election timeout).
const balanceSoon = time.Second

// runBalancer runs balance rounds until the node closes: soon after the
// start and after each move that took, every BalanceInterval otherwise.
func (n *Node) runBalancer() {
	defer n.wg.Done()
	b := balancePace{interval: n.cfg.BalanceInterval}
	t := time.NewTimer(min(b.interval, balanceSoon))
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		t.Reset(b.next(n.balanceRound))
	}
}

// balancePace paces a node's balance rounds (balanceSoon).
type balancePace struct {
	interval time.Duration // BalanceInterval
	moved    *Group        // the last round's move; nil: none
}

// next runs a round, unless the last round's move did not take, and
// returns the wait before the next.
func (b *balancePace) next(round func() *Group) time.Duration {
	if b.moved != nil && b.moved.IsLeader() {
		b.moved = nil // it did not take: back to the steady pace
		return b.interval
	}
	if b.moved = round(); b.moved != nil {
		return min(b.interval, balanceSoon)
	}
	return b.interval
}
