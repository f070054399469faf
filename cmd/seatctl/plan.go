package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Replica plans: which replicas to move so that every node carries an even
// share (group rebalance), or so that a node carries none (node remove
// --drain). Plans are pure and deterministic (ties go to the smaller group
// and node id), computed from the cluster as Status shows it; executing a
// plan runs the move-replica steps one move at a time, and re-running the
// command plans again from where the cluster stands, so it is safe to
// repeat after a failure.

// move is one replica move of a plan: add To, then remove From. Either may
// be empty: a group with too few replicas only gains one, a group with too
// many only loses one.
type move struct {
	Group uint32 `json:"group"`
	From  string `json:"from,omitempty"`
	To    string `json:"to,omitempty"`
}

func (m move) String() string {
	switch {
	case m.From == "":
		return fmt.Sprintf("group %d: add a replica on %s", m.Group, m.To)
	case m.To == "":
		return fmt.Sprintf("group %d: remove the replica on %s", m.Group, m.From)
	}
	return fmt.Sprintf("group %d: move the replica on %s to %s", m.Group, m.From, m.To)
}

// placement is the groups' replicas: group -> replica node ids.
type placement map[uint32][]string

// placementOf takes the replicas of each group from a cluster view.
func placementOf(v clusterView) placement {
	p := placement{}
	for _, g := range v.Groups {
		p[g.Group] = slices.Clone(g.Replicas)
	}
	return p
}

func (p placement) groups() []uint32 {
	out := make([]uint32, 0, len(p))
	for g := range p {
		out = append(out, g)
	}
	slices.Sort(out)
	return out
}

// loads counts the replicas each of nodes carries.
func (p placement) loads(nodes []string) map[string]int {
	load := make(map[string]int, len(nodes))
	for _, n := range nodes {
		load[n] = 0
	}
	for _, reps := range p {
		for _, r := range reps {
			if _, ok := load[r]; ok {
				load[r]++
			}
		}
	}
	return load
}

// commonReplicas is the replica count most groups have (the larger on a
// tie): the cluster's replication factor unless told otherwise.
func (p placement) commonReplicas() int {
	count := map[int]int{}
	best := 0
	for _, reps := range p {
		n := len(reps)
		count[n]++
		if count[n] > count[best] || (count[n] == count[best] && n > best) {
			best = n
		}
	}
	return best
}

// planRebalance plans moves among nodes (the up, ACTIVE nodes: the only
// ones replicas move onto or off) so that every group has replicas replicas
// and the nodes' loads differ by at most one where the groups allow it.
// First groups with too many replicas lose one on their most loaded node,
// then groups with too few gain one on the least loaded node, then one
// replica at a time moves from the most loaded node to the least loaded
// one that lacks it. Every spreading move lowers the sum of squared loads,
// so the plan ends.
func planRebalance(p placement, nodes []string, replicas int) []move {
	p = clonePlacement(p)
	nodes = slices.Sorted(slices.Values(nodes))
	load := p.loads(nodes)
	var plan []move
	for _, g := range p.groups() {
		for len(p[g]) > replicas {
			from := pickNode(p[g], load, true, nil)
			if from == "" {
				break
			}
			plan = append(plan, move{Group: g, From: from})
			p[g] = slices.DeleteFunc(p[g], func(r string) bool { return r == from })
			load[from]--
		}
		for len(p[g]) < replicas {
			to := pickNode(nodes, load, false, p[g])
			if to == "" {
				break
			}
			plan = append(plan, move{Group: g, To: to})
			p[g] = append(p[g], to)
			load[to]++
		}
	}
	for {
		m, ok := spreadMove(p, nodes, load)
		if !ok {
			return plan
		}
		plan = append(plan, m)
		p[m.Group] = append(slices.DeleteFunc(p[m.Group], func(r string) bool { return r == m.From }), m.To)
		load[m.From]--
		load[m.To]++
	}
}

// spreadMove finds one move from a node carrying at least two more
// replicas than another, of the smallest group the first has and the
// second lacks.
func spreadMove(p placement, nodes []string, load map[string]int) (move, bool) {
	byLoad := func(desc bool) []string {
		out := slices.Clone(nodes)
		slices.SortStableFunc(out, func(a, b string) int {
			if desc {
				return cmp.Compare(load[b], load[a])
			}
			return cmp.Compare(load[a], load[b])
		})
		return out
	}
	unders := byLoad(false)
	for _, from := range byLoad(true) {
		for _, to := range unders {
			if load[from]-load[to] < 2 {
				break
			}
			for _, g := range p.groups() {
				if slices.Contains(p[g], from) && !slices.Contains(p[g], to) {
					return move{Group: g, From: from, To: to}, true
				}
			}
		}
	}
	return move{}, false
}

// planDrain plans moving every replica on node onto targets (up, ACTIVE,
// other nodes), each to the least loaded target the group lacks. It fails,
// before anything moves, if some group has a replica on every target.
func planDrain(p placement, node string, targets []string) ([]move, error) {
	p = clonePlacement(p)
	targets = slices.Sorted(slices.Values(targets))
	load := p.loads(targets)
	var plan []move
	for _, g := range p.groups() {
		if !slices.Contains(p[g], node) {
			continue
		}
		to := pickNode(targets, load, false, p[g])
		if to == "" {
			return nil, fmt.Errorf("group %d has replicas on every node that could take %s's (%s): add a node first",
				g, node, strings.Join(p[g], ","))
		}
		plan = append(plan, move{Group: g, From: node, To: to})
		p[g] = append(p[g], to)
		load[to]++
	}
	return plan, nil
}

// pickNode picks among candidates the node with the most (most) or fewest
// replicas, skipping those in exclude and those load does not count
// (nodes replicas may not move to or from); ties go to the smaller id.
func pickNode(candidates []string, load map[string]int, most bool, exclude []string) string {
	best := ""
	for _, c := range slices.Sorted(slices.Values(candidates)) {
		l, ok := load[c]
		if !ok || slices.Contains(exclude, c) {
			continue
		}
		if best == "" || (most && l > load[best]) || (!most && l < load[best]) {
			best = c
		}
	}
	return best
}

func clonePlacement(p placement) placement {
	out := make(placement, len(p))
	for g, reps := range p {
		out[g] = slices.Clone(reps)
	}
	return out
}
