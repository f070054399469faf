package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// A run measures a settled cluster: before the measured phase starts, a
// local cluster's group leaderships are spread as its balancer leaves them
// (raftnode/balance.go). Elections hand a cluster that just started most
// groups on one node, and the balancer moves them one at a time; a run that
// started at once measured that skew and the moves themselves (a move
// landed in half the stampedes with watchers, whose setup takes about as
// long as the first moves).

// settleMax bounds the wait for balanced leaderships; a run that reaches
// it is measured as it is, and says so.
const settleMax = 20 * time.Second

// settleLeaders waits until every group of the local cluster has a leader
// and the leaderships are balanced (leadersBalanced), at most settleMax,
// has the Go clients route by the settled leaders, and records the spread
// it starts from (leaders_at_start).
func (e *env) settleLeaders(ctx context.Context) {
	start := time.Now()
	deadline := start.Add(settleMax)
	var leads map[string]int
	for {
		var ok bool
		leads, ok = e.leaderSpread(ctx)
		if ok || time.Now().After(deadline) || ctx.Err() != nil {
			if !ok {
				fmt.Fprintf(os.Stderr, "seatbench: leaderships not balanced after %v (%s); measuring anyway\n", settleMax, spreadString(leads))
			}
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := e.goClients.refresh(ctx); err != nil {
		fmt.Fprintf(os.Stderr, "seatbench: the Go clients' routing refresh after settling: %v\n", err)
	}
	e.extra["leaders_at_start"] = spreadString(leads)
	e.extra["leaders_settled_s"] = fmt.Sprintf("%.1f", time.Since(start).Seconds())
}

// leaderSpread reads every local node's groups and returns how many each
// node leads ("": groups without a leader), and whether that is balanced.
func (e *env) leaderSpread(ctx context.Context) (map[string]int, bool) {
	leads := map[string]int{}
	hosts := map[uint32]int{} // group: nodes that host it
	for _, n := range e.cluster.Nodes() {
		leads[n.ID] += 0
		groups, err := e.healthGroups(ctx, n)
		if err != nil {
			return leads, false
		}
		for _, g := range groups {
			hosts[g.ID]++
			if n == e.cluster.Nodes()[0] {
				leads[g.Leader]++
			}
		}
	}
	full := true
	for _, h := range hosts {
		full = full && h == len(e.cluster.Nodes())
	}
	return leads, leadersBalanced(leads, len(hosts), full)
}

// leadersBalanced reports whether leads (by node; "" counts groups without
// a leader) is what the balancer settles on for groups groups: every group
// led, no node over its fair share, and, when every node hosts every group,
// no two nodes more than one apart. Node 1's view counts every group only
// when it hosts every group; with fewer replicas than nodes it sees its own
// groups alone, and then their leaders are all that is asked.
func leadersBalanced(leads map[string]int, groups int, full bool) bool {
	if leads[""] > 0 || groups == 0 {
		return false
	}
	nodes := len(leads) // no "" is left
	if !full {
		return true
	}
	fair := (groups + nodes - 1) / nodes
	lo, hi := groups, 0
	for _, n := range leads {
		lo, hi = min(lo, n), max(hi, n)
	}
	return hi <= fair && hi-lo <= 1
}

// spreadString is leads as "n1 3, n2 3, n3 2" (and "none N").
func spreadString(leads map[string]int) string {
	var parts []string
	for _, id := range slices.Sorted(maps.Keys(leads)) {
		if id != "" {
			parts = append(parts, fmt.Sprintf("%s %d", id, leads[id]))
		}
	}
	if leads[""] > 0 {
		parts = append(parts, fmt.Sprintf("none %d", leads[""]))
	}
	return strings.Join(parts, ", ")
}
