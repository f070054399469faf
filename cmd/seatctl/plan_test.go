// This file proves the replica plans of group rebalance and node remove
// --drain: growing 3 nodes to 4 and 5 spreads the replicas until loads
// differ by at most one, never puts two replicas of a group on one node,
// keeps every group's replica count, and a balanced cluster plans nothing
// (so re-running is safe); a group left with an extra replica by an
// interrupted move loses it, one left short gains one; a drain moves every
// replica of the node to the least loaded nodes the groups lack, and
// refuses up front when a group has no node left to move to.
package main

import (
	"fmt"
	"slices"
	"testing"
)

// full is groups 0..g-1 each on every one of nodes.
func full(g int, nodes ...string) placement {
	p := placement{}
	for i := range g {
		p[uint32(i)] = slices.Clone(nodes)
	}
	return p
}

// apply executes a plan on a placement, failing on an impossible move.
func apply(t *testing.T, p placement, plan []move) placement {
	t.Helper()
	p = clonePlacement(p)
	for _, m := range plan {
		reps := p[m.Group]
		if m.To != "" {
			if slices.Contains(reps, m.To) {
				t.Fatalf("%v: %s has a replica of group %d already (%v)", m, m.To, m.Group, reps)
			}
			reps = append(reps, m.To)
		}
		if m.From != "" {
			if !slices.Contains(reps, m.From) {
				t.Fatalf("%v: %s has no replica of group %d (%v)", m, m.From, m.Group, reps)
			}
			reps = slices.DeleteFunc(reps, func(r string) bool { return r == m.From })
		}
		p[m.Group] = reps
	}
	return p
}

// spread checks replica counts and that loads differ by at most one.
func spread(t *testing.T, p placement, nodes []string, replicas int) {
	t.Helper()
	for g, reps := range p {
		if len(reps) != replicas {
			t.Errorf("group %d has %d replicas %v, want %d", g, len(reps), reps, replicas)
		}
	}
	load := p.loads(nodes)
	lo, hi := 1<<30, 0
	for _, n := range nodes {
		lo, hi = min(lo, load[n]), max(hi, load[n])
	}
	if hi-lo > 1 {
		t.Errorf("loads %v differ by %d, want at most 1", load, hi-lo)
	}
}

func TestPlanRebalanceGrowAndShrink(t *testing.T) {
	p := full(4, "n1", "n2", "n3")
	four := []string{"n1", "n2", "n3", "n4"}
	plan := planRebalance(p, four, 3)
	if len(plan) != 3 {
		t.Fatalf("grow to 4: plan %v, want 3 moves (one replica of each of three groups onto n4)", plan)
	}
	p = apply(t, p, plan)
	spread(t, p, four, 3)
	if again := planRebalance(p, four, 3); len(again) != 0 {
		t.Fatalf("re-planning a balanced cluster: %v, want nothing", again)
	}
	five := append(four, "n5")
	plan = planRebalance(p, five, 3)
	p = apply(t, p, plan)
	spread(t, p, five, 3)
	if load := p.loads(five); load["n5"] != 2 || len(plan) != 2 {
		t.Fatalf("grow to 5: plan %v, loads %v; want two replicas moved onto n5", plan, load)
	}
	// Deterministic: the same cluster plans the same moves.
	if a, b := fmt.Sprint(planRebalance(full(8, "n1", "n2", "n3"), five, 3)), fmt.Sprint(planRebalance(full(8, "n1", "n2", "n3"), five, 3)); a != b {
		t.Fatalf("two plans of one cluster differ:\n%s\n%s", a, b)
	}
}

func TestPlanRebalanceRepairsReplicaCounts(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4"}
	// An interrupted move left group 0 with four replicas, group 1 with two.
	p := placement{0: {"n1", "n2", "n3", "n4"}, 1: {"n1", "n2"}, 2: {"n2", "n3", "n4"}, 3: {"n1", "n3", "n4"}}
	plan := planRebalance(p, nodes, 3)
	if len(plan) < 2 || plan[0].To != "" || plan[0].Group != 0 || plan[1].From != "" || plan[1].Group != 1 {
		t.Fatalf("plan %v, want group 0 to lose a replica, then group 1 to gain one", plan)
	}
	spread(t, apply(t, p, plan), nodes, 3)
	if got := p.commonReplicas(); got != 3 {
		t.Errorf("commonReplicas = %d, want 3", got)
	}
}

func TestPlanDrain(t *testing.T) {
	five := []string{"n1", "n2", "n3", "n4", "n5"}
	p := apply(t, full(4, "n1", "n2", "n3"), planRebalance(full(4, "n1", "n2", "n3"), five, 3))
	plan, err := planDrain(p, "n1", []string{"n2", "n3", "n4", "n5"})
	if err != nil {
		t.Fatal(err)
	}
	p = apply(t, p, plan)
	if load := p.loads(five); load["n1"] != 0 {
		t.Fatalf("after the drain n1 carries %d replicas (plan %v)", load["n1"], plan)
	}
	spread(t, p, []string{"n2", "n3", "n4", "n5"}, 3)
	plan, err = planDrain(p, "n2", []string{"n3", "n4", "n5"})
	if err != nil {
		t.Fatal(err)
	}
	p = apply(t, p, plan)
	spread(t, p, []string{"n3", "n4", "n5"}, 3)
	// Three nodes, three replicas: nowhere to drain to.
	if plan, err := planDrain(p, "n3", []string{"n4", "n5"}); err == nil {
		t.Fatalf("draining n3 with every group on n3, n4, n5 planned %v, want a refusal", plan)
	}
}
