package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Nodes join and leave the cluster through the node registry (Admin
// ListNodes, AddNode, DrainNode, RemoveNode): node add registers a node,
// which then starts with seatd serve --join and hosts nothing until group
// rebalance moves replicas onto it; node remove --drain marks a node
// DRAINING, moves its leaderships and replicas to other nodes with the
// move-replica steps, and marks it REMOVED once it hosts nothing.

// joinWait bounds how long node add waits for every node to know a new one.
const joinWait = 10 * time.Second

func newNodeCmd(a *app) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "The node registry: every node, its addresses and state (active, draining, removed)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			l, err := a.registry(c.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return writeProto(a.out, l)
			}
			writeNodes(a.out, l)
			return nil
		},
	}
	var raftAddr, grpcAddr string
	add := &cobra.Command{
		Use:   "add ID --raft HOST:PORT --grpc HOST:PORT",
		Short: "Register a node (it hosts nothing until replicas move onto it), and print how to start it",
		Long: `add registers a node in the node registry, so that every node can reach it; on a
registered node it updates the addresses (the node moved) or ends a drain. Then start
the node with the seatd serve --join command printed, and move replicas onto it with
seatctl group rebalance. A removed node's id is retired: register the machine under a
new id.`,
		Example: "  seatctl node add n4 --raft 127.0.0.1:7004 --grpc 127.0.0.1:9004",
		Args:    exactArgs(1, "ID"),
		RunE: func(c *cobra.Command, args []string) error {
			if raftAddr == "" || grpcAddr == "" {
				return usagef("node add needs --raft and --grpc (see seatctl node add --help)")
			}
			return a.addNode(c.Context(), args[0], raftAddr, grpcAddr)
		},
	}
	add.Flags().StringVar(&raftAddr, "raft", "", "the node's raft address, as its seatd serve --raft")
	add.Flags().StringVar(&grpcAddr, "grpc", "", "the node's gRPC address, as its seatd serve --grpc")
	var drain bool
	remove := &cobra.Command{
		Use:   "remove ID [--drain]",
		Short: "Remove a node from the cluster; --drain first moves its leaderships and replicas to the least loaded nodes",
		Long: `remove refuses while the node hosts replicas, unless --drain: then it marks the node
DRAINING (no replica or leadership is moved onto it), hands its leaderships away,
plans where each of its replicas goes (the least loaded up, active node the group
lacks; refused up front if some group has none), prints the plan and runs each move
(host, add-voter, remove-voter, drop), refusing any move that would leave a group
without a live quorum. Once the node hosts nothing it is marked REMOVED: stop its
seatd; its id is retired, and a restart with it refuses to serve. Safe to re-run.`,
		Example: "  seatctl node remove n1 --drain",
		Args:    exactArgs(1, "ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.removeNode(c.Context(), args[0], drain)
		},
	}
	remove.Flags().BoolVar(&drain, "drain", false, "move the node's replicas and leaderships to other nodes first")
	return parentCmd("node", "The cluster's nodes: list, add and remove them", list, add, remove)
}

func newRebalanceCmd(a *app) *cobra.Command {
	var replicas int
	var dryRun bool
	c := &cobra.Command{
		Use:   "rebalance [--replicas N] [--dry-run]",
		Short: "Move replicas so that every up, active node carries an even share (after node add)",
		Long: `rebalance plans, from the cluster as Status shows it, replica moves among the up,
ACTIVE nodes: groups with more than --replicas replicas lose one on the most loaded
node, groups with fewer gain one on the least loaded, then one replica at a time
moves from the most loaded node to the least loaded one that lacks it, until loads
differ by at most one. It prints the plan, then runs each move with the move-replica
steps. Deterministic, and safe to re-run: a balanced cluster plans nothing.`,
		Example: "  seatctl group rebalance\n  seatctl group rebalance --dry-run",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.rebalance(c.Context(), replicas, dryRun)
		},
	}
	c.Flags().IntVar(&replicas, "replicas", 0, "replicas per group (default: the count most groups have)")
	c.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan only")
	return c
}

// registry reads the node registry through the first endpoint that answers.
func (a *app) registry(ctx context.Context) (*ledgerpb.NodeList, error) {
	var l *ledgerpb.NodeList
	err := a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		var errs []string
		for _, ep := range a.endpoints {
			var err error
			if l, err = a.listNodes(ctx, ep); err == nil {
				return nil
			} else if !retryable(err) {
				return err
			}
			errs = append(errs, ep+": "+describe(err))
		}
		return fmt.Errorf("%w: no endpoint served the node registry: %s", errNoLeader, strings.Join(errs, "; "))
	})
	if err != nil {
		return nil, fmt.Errorf("read the node registry: %s", describe(err))
	}
	return l, nil
}

// onAnyNode makes an Admin call on the first endpoint that answers,
// retrying while the catalog group elects.
func (a *app) onAnyNode(ctx context.Context, call func(ctx context.Context, c ledgerpb.AdminClient) error) error {
	return a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		var last error
		for _, ep := range a.endpoints {
			c, err := a.admin(ep)
			if err != nil {
				return err
			}
			cctx, cancel := context.WithTimeout(ctx, a.timeout)
			err = call(cctx, c)
			cancel()
			if err == nil || !retryable(err) {
				return err
			}
			last = err
		}
		return last
	})
}

// addNode registers a node, waits until every up node's peer table has it,
// and prints how to start it.
func (a *app) addNode(ctx context.Context, id, raftAddr, grpcAddr string) error {
	var resp *ledgerpb.NodeResponse
	err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		var err error
		resp, err = c.AddNode(ctx, &ledgerpb.AddNodeRequest{NodeId: id, RaftAddr: raftAddr, GrpcAddr: grpcAddr})
		return err
	})
	if err != nil {
		return fmt.Errorf("register %s: %s", id, describe(err))
	}
	v, err := a.waitKnown(ctx, id)
	if err != nil {
		return err
	}
	if a.json() {
		return writeProto(a.out, resp)
	}
	fmt.Fprintf(a.out, "registered %s (raft %s, grpc %s) at revision %d; every node knows it\n", id, raftAddr, grpcAddr, resp.Revision)
	var join []string
	for _, n := range v.Nodes {
		if n.ID != id && n.Up {
			join = append(join, n.GRPCAddr)
		}
	}
	fmt.Fprintf(a.out, "start it (the cluster's admin token and ticket key, as on the other nodes):\n")
	fmt.Fprintf(a.out, "  seatd serve --id %s --raft %s --grpc %s --data-dir DATA_DIR --groups %d --join %s --admin-token-file admin.token --ticket-key ticket.key\n",
		id, raftAddr, grpcAddr, len(v.Groups), strings.Join(join, ","))
	fmt.Fprintf(a.out, "then move replicas onto it: seatctl group rebalance\n")
	return nil
}

// waitKnown waits until every up node's Status lists node id, so that the
// membership steps that follow find its address on whichever node leads.
func (a *app) waitKnown(ctx context.Context, id string) (clusterView, error) {
	deadline := time.Now().Add(joinWait)
	for {
		answers, err := a.poll(ctx, false)
		if err != nil {
			return clusterView{}, err
		}
		missing := ""
		for _, ans := range answers {
			if ans.resp != nil && ans.info.Id != id && !slices.ContainsFunc(ans.resp.Nodes, func(n *ledgerpb.NodeInfo) bool { return n.Id == id }) {
				missing = ans.info.Id
			}
		}
		if missing == "" {
			return buildView(answers), nil
		}
		if time.Now().After(deadline) {
			return clusterView{}, fmt.Errorf("%s is registered, but %s has not learned it within %v", id, missing, joinWait)
		}
		if err := sleepCtx(ctx, retryPause); err != nil {
			return clusterView{}, err
		}
	}
}

// rebalance plans and runs replica moves that spread replicas evenly.
func (a *app) rebalance(ctx context.Context, replicas int, dryRun bool) error {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return err
	}
	p := placementOf(v)
	if replicas == 0 {
		replicas = p.commonReplicas()
	}
	if replicas < 1 {
		return usagef("--replicas must be at least 1")
	}
	var nodes, skipped []string
	for _, n := range v.Nodes {
		if n.Up && n.State != stateName(ledgerpb.NodeState_NODE_STATE_DRAINING) {
			nodes = append(nodes, n.ID)
		} else {
			skipped = append(skipped, n.ID)
		}
	}
	if len(skipped) > 0 {
		fmt.Fprintf(a.out, "not moving replicas onto or off %s (down or draining)\n", strings.Join(skipped, ","))
	}
	plan := planRebalance(p, nodes, replicas)
	return a.runPlan(ctx, "rebalance", plan, dryRun, "balanced already: nothing to move")
}

// runPlan prints a plan, then runs each move with the membership steps.
func (a *app) runPlan(ctx context.Context, what string, plan []move, dryRun bool, nothing string) error {
	if len(plan) == 0 {
		fmt.Fprintln(a.out, nothing)
		return nil
	}
	fmt.Fprintf(a.out, "%s plan (%d moves):\n", what, len(plan))
	for i, m := range plan {
		fmt.Fprintf(a.out, "  %d. %s\n", i+1, m)
	}
	if dryRun {
		return nil
	}
	for i, m := range plan {
		fmt.Fprintf(a.out, "move %d/%d: %s\n", i+1, len(plan), m)
		if err := a.changeMembership(ctx, m.Group, m.To, m.From, false); err != nil {
			return fmt.Errorf("move %d/%d (%s): %w; re-run to continue from where the cluster stands", i+1, len(plan), m, err)
		}
	}
	return nil
}

// removeNode removes a node from the cluster, draining it first if asked.
func (a *app) removeNode(ctx context.Context, id string, drain bool) error {
	reg, err := a.registry(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(reg.Nodes, func(n *ledgerpb.NodeRecord) bool { return n.NodeId == id })
	switch {
	case i < 0:
		return fmt.Errorf("no node %q in the registry", id)
	case reg.Nodes[i].State == ledgerpb.NodeState_NODE_STATE_REMOVED:
		fmt.Fprintf(a.out, "%s was removed already (revision %d)\n", id, reg.Nodes[i].Revision)
		return nil
	}
	v, err := a.pollView(ctx, false)
	if err != nil {
		return err
	}
	if hosted := hostedBy(v, id); len(hosted) > 0 {
		if !drain {
			return fmt.Errorf("refusing to remove %s: it hosts replicas of groups %s; move them first or pass --drain", id, groupList(hosted))
		}
		if err := a.drainNode(ctx, id, v); err != nil {
			return err
		}
	}
	if err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		_, err := c.RemoveNode(ctx, &ledgerpb.NodeRequest{NodeId: id})
		return err
	}); err != nil {
		return fmt.Errorf("mark %s removed: %s", id, describe(err))
	}
	fmt.Fprintf(a.out, "removed %s from the cluster: stop its seatd now (its id is retired; a restart with it refuses to serve)\n", id)
	return nil
}

// drainNode marks the node DRAINING, hands its leaderships away, moves its
// replicas off by plan, and checks that it hosts nothing after.
func (a *app) drainNode(ctx context.Context, id string, v clusterView) error {
	var targets []string
	for _, n := range v.Nodes {
		if n.ID != id && n.Up && n.State != stateName(ledgerpb.NodeState_NODE_STATE_DRAINING) {
			targets = append(targets, n.ID)
		}
	}
	plan, err := planDrain(placementOf(v), id, targets)
	if err != nil {
		return fmt.Errorf("refusing to drain %s: %w", id, err)
	}
	if err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		_, err := c.DrainNode(ctx, &ledgerpb.NodeRequest{NodeId: id})
		return err
	}); err != nil {
		return fmt.Errorf("mark %s draining: %s", id, describe(err))
	}
	fmt.Fprintf(a.out, "%s is draining: no replica or leadership moves onto it\n", id)
	for _, g := range v.Groups {
		if g.Leader != id || len(g.Replicas) < 2 {
			continue
		}
		res, err := a.transferLeader(ctx, g.Group, "")
		if err != nil {
			return err
		}
		fmt.Fprintf(a.out, "group %d: leader %s -> %s\n", g.Group, res.From, res.To)
	}
	if err := a.runPlan(ctx, "drain", plan, false, id+" hosts no replica in any configuration"); err != nil {
		return err
	}
	return a.dropLeftovers(ctx, id)
}

// dropLeftovers drops the replicas a node still hosts outside every
// configuration (an interrupted removal), then checks that it hosts
// nothing.
func (a *app) dropLeftovers(ctx context.Context, id string) error {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return err
	}
	for _, g := range hostedBy(v, id) {
		if gv := v.group(g); gv != nil && !slices.Contains(gv.Replicas, id) && v.up(id) {
			if err := a.runSteps(ctx, []step{a.dropStep(g, id, false)}); err != nil {
				return err
			}
		}
	}
	if v, err = a.pollView(ctx, false); err != nil {
		return err
	}
	if left := hostedBy(v, id); len(left) > 0 {
		return fmt.Errorf("%s still hosts groups %s after the drain; re-run to continue", id, groupList(left))
	}
	return nil
}

// hostedBy lists the groups whose configuration names node, or whose
// replica the node reports hosting.
func hostedBy(v clusterView, node string) []uint32 {
	var out []uint32
	for _, g := range v.Groups {
		if slices.Contains(g.Replicas, node) || slices.ContainsFunc(g.Reports, func(r replicaView) bool { return r.Node == node && r.Reported }) {
			out = append(out, g.Group)
		}
	}
	return out
}

func groupList(gs []uint32) string {
	s := make([]string, len(gs))
	for i, g := range gs {
		s[i] = fmt.Sprint(g)
	}
	return strings.Join(s, ",")
}

// writeNodes prints the registry.
func writeNodes(w io.Writer, l *ledgerpb.NodeList) {
	t := newTable(w)
	t.row("NODE", "RAFT ADDR", "GRPC ADDR", "STATE", "REVISION", "CHANGED")
	for _, n := range l.Nodes {
		t.row(n.NodeId, n.RaftAddr, n.GrpcAddr, stateName(n.State), fmt.Sprint(n.Revision),
			time.UnixMilli(n.ChangedAtMs).UTC().Format(time.RFC3339))
	}
	t.flush()
	fmt.Fprintf(w, "registry at revision %d of the catalog group, served by %s\n", l.Revision, dash(l.ServedBy))
}
