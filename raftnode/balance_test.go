// This file proves leadership balancing: with every one of six groups led by
// one node, balance rounds hand leaderships away until each of the three
// nodes leads two, and once balanced more rounds move nothing.
package raftnode

import (
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
	waitFor("each node leads two groups", func() bool {
		for _, n := range tc.nodes {
			n.balanceRound()
		}
		l := leaders()
		return l["n1"] == 2 && l["n2"] == 2 && l["n3"] == 2
	})
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
}
