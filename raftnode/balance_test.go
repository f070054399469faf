// This file proves leadership balancing: with every one of six groups led by
// one node, balance rounds hand leaderships away until each of the three
// nodes leads two, and once balanced more rounds move nothing. Its table
// proves one round's choice when every node hosts every group (counts are
// exact: a node that came back is handed a leadership even within the
// share), when nodes host only some groups (the fair share counts the
// cluster's groups, so a node at its share keeps it), when nodes
// drain (a draining node hands everything away and is never handed
// anything), and that a follower whose heartbeats fail is skipped.
package raftnode

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestBalanceSpreadsLeaders(t *testing.T) {
	const groups = 6
	tc := startTestCluster(t, func(c *Config) {
		c.Groups = map[uint32][]string{}
		for g := uint32(0); g < groups; g++ {
			c.Groups[g] = []string{"n1", "n2", "n3"}
		}
		c.BalanceInterval = -1 // rounds run by hand below
	})
	n1 := tc.nodes[0]
	leaders := func() map[string]int {
		out := map[string]int{}
		for _, g := range n1.Groups() {
			out[g.Leader()]++
		}
		return out
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: leaders %v", what, leaders())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Every group elects, then hands leadership to n1.
	waitFor("every group has a leader", func() bool { return leaders()[""] == 0 })
	for g := uint32(0); g < groups; g++ {
		for _, n := range tc.nodes {
			if grp, _ := n.Group(g); grp.IsLeader() && n != n1 {
				grp.raft.LeadershipTransferToServer(raft.ServerID("n1"), raft.ServerAddress(tc.peers[0].RaftAddr))
			}
		}
	}
	waitFor("n1 leads every group", func() bool { return leaders()["n1"] == groups })

	// Every node runs rounds, as each node's balancer does: under load an
	// election may hand a group to another node meanwhile, and that node
	// must then give its excess away too.
	// Each runs them at its balancer's pace: soon while it moves
	// leaderships that take, every interval once it has nothing to move.
	paces := make([]balancePace, len(tc.nodes))
	for i := range paces {
		paces[i].interval = time.Hour
	}
	n1Soon := 0
	waitFor("each node leads two groups", func() bool {
		for i, n := range tc.nodes {
			wait, want := paces[i].next(n.balanceRound), time.Hour
			if paces[i].moved != nil {
				want = balanceSoon
				if n == n1 {
					n1Soon++
				}
			}
			if wait != want {
				t.Fatalf("%s waits %v after a round that moved %v, want %v", n.cfg.NodeID, wait, paces[i].moved != nil, want)
			}
		}
		time.Sleep(100 * time.Millisecond) // let the transfers take
		l := leaders()
		return l["n1"] == 2 && l["n2"] == 2 && l["n3"] == 2
	})
	if n1Soon < groups-2 {
		t.Fatalf("n1 handed away %d leaderships at the soon pace, want at least %d", n1Soon, groups-2)
	}
	// Balanced: more rounds move nothing.
	for range 5 {
		for _, n := range tc.nodes {
			n.balanceRound()
		}
	}
	time.Sleep(300 * time.Millisecond)
	if l := leaders(); l["n1"] != 2 || l["n2"] != 2 || l["n3"] != 2 {
		t.Fatalf("after balancing, more rounds changed the leaders: %v", l)
	}

	// A move that did not take (the group still leads here a round later)
	// runs no round and returns to the steady pace.
	for _, g := range n1.Groups() {
		if !g.IsLeader() {
			continue
		}
		p, ran := balancePace{interval: time.Hour, moved: g}, false
		if wait := p.next(func() *Group { ran = true; return nil }); wait != time.Hour || ran || p.moved != nil {
			t.Fatalf("after a move that did not take: wait %v, ran a round %v, moved %v; want 1h, false, nil", wait, ran, p.moved)
		}
		break
	}
}

func TestBalancePick(t *testing.T) {
	// g makes a hosted group: id, leader, replicas.
	g := func(id uint32, leader string, reps ...string) groupLead {
		return groupLead{id: id, leader: leader, replicas: reps, down: func(string) bool { return false }}
	}
	none := func(string) bool { return false }
	for _, tc := range []struct {
		name     string
		self     string
		total    int
		groups   []groupLead
		draining []string
		down     string // a follower of every group whose heartbeats fail
		want     string // "group->node" or "-"
	}{
		{name: "full replication, over the share", self: "n1", total: 3,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n2", "n3"), g(2, "n2", "n1", "n2", "n3")},
			want:   "0->n3"},
		{name: "full replication, at the share", self: "n1", total: 3,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n2", "n1", "n2", "n3"), g(2, "n3", "n1", "n2", "n3")},
			want:   "-"},
		// 4 groups over 3 nodes: 2,2,0 is within the share of 2, but a node
		// that came back should lead one: counts are exact, so even out.
		{name: "full replication, a node came back", self: "n1", total: 4,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n2", "n3"), g(2, "n2", "n1", "n2", "n3"), g(3, "n2", "n1", "n2", "n3")},
			want:   "0->n3"},
		{name: "full replication, 2,1,1 is even", self: "n1", total: 4,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n2", "n3"), g(2, "n2", "n1", "n2", "n3"), g(3, "n3", "n1", "n2", "n3")},
			want:   "-"},
		// 8 groups of 3 replicas over 5 nodes: n1 hosts five and leads two,
		// its share of 8/5. Counting only hosted groups (5/5 = 1) would hand
		// one away, and the receiver would hand one back: churn.
		{name: "partial replication, at the cluster's share", self: "n1", total: 8,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n4", "n5"), g(2, "n2", "n1", "n2", "n4"),
				g(3, "n3", "n1", "n3", "n5"), g(4, "n5", "n1", "n2", "n5")},
			want: "-"},
		// Seen counts are lower bounds there: n4 may lead others. No
		// evening out below the share.
		{name: "partial replication, a node leading none of these", self: "n1", total: 8,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n4"), g(1, "n1", "n1", "n4", "n5"), g(2, "n2", "n1", "n2", "n4")},
			want:   "-"},
		{name: "partial replication, over the share", self: "n1", total: 8,
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n4", "n5"), g(2, "n1", "n1", "n2", "n4"),
				g(3, "n3", "n1", "n3", "n5"), g(4, "n5", "n1", "n2", "n5")},
			want: "0->n2"},
		{name: "draining node hands away even to a node at its share", self: "n1", total: 3, draining: []string{"n1"},
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n2", "n1", "n2", "n3"), g(2, "n3", "n1", "n2", "n3")},
			want:   "0->n2"},
		{name: "draining node is never handed a leadership", self: "n1", total: 3, draining: []string{"n2"},
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n2", "n3"), g(2, "n1", "n1", "n2", "n3")},
			want:   "0->n3"},
		{name: "a follower whose heartbeats fail is skipped", self: "n1", total: 3, down: "n2",
			groups: []groupLead{g(0, "n1", "n1", "n2", "n3"), g(1, "n1", "n1", "n2", "n3"), g(2, "n1", "n1", "n2", "n3")},
			want:   "0->n3"},
		{name: "a joined node without replicas changes nothing", self: "n1", total: 2,
			groups: []groupLead{g(0, "n1", "n1", "n2"), g(1, "n2", "n1", "n2")},
			want:   "-"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := balanceView{self: tc.self, total: tc.total, groups: tc.groups, draining: none}
			if tc.draining != nil {
				v.draining = func(id string) bool { return slices.Contains(tc.draining, id) }
			}
			if tc.down != "" {
				for i := range v.groups {
					v.groups[i].down = func(id string) bool { return id == tc.down }
				}
			}
			got := "-"
			if group, to, ok := v.pick(); ok {
				got = fmt.Sprintf("%d->%s", group, to)
			}
			if got != tc.want {
				t.Errorf("pick() = %s, want %s", got, tc.want)
			}
		})
	}
}
