package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Replica moves follow raftnode/membership.go: host the new replica, add it
// on the leader, remove the old one on the leader, drop the old one. Each
// step is idempotent, so each is retried (re-finding the leader) while the
// group elects, and re-running a whole command after a failure is safe.

func newGroupCmd(a *app) *cobra.Command {
	add := &cobra.Command{
		Use:     "add-replica GROUP NODE",
		Short:   "Host a replica of GROUP on NODE and add it to the group (HostGroup, then AddVoter)",
		Example: "  seatctl group add-replica 3 n4",
		Args:    exactArgs(2, "GROUP NODE"),
		RunE: func(c *cobra.Command, args []string) error {
			group, err := parseGroup(args[0])
			if err != nil {
				return err
			}
			return a.changeMembership(c.Context(), group, args[1], "", false)
		},
	}
	var removeForce, moveForce bool
	remove := &cobra.Command{
		Use:     "remove-replica GROUP NODE",
		Short:   "Remove NODE from GROUP and delete its replica (RemoveVoter, then DropGroup)",
		Long:    removeLong,
		Example: "  seatctl group remove-replica 3 n1\n  seatctl group remove-replica 3 n1 --force-drop   # n1 cannot reach any leader of group 3",
		Args:    exactArgs(2, "GROUP NODE"),
		RunE: func(c *cobra.Command, args []string) error {
			group, err := parseGroup(args[0])
			if err != nil {
				return err
			}
			return a.changeMembership(c.Context(), group, "", args[1], removeForce)
		},
	}
	remove.Flags().BoolVar(&removeForce, "force-drop", false, forceDropUsage)
	move := &cobra.Command{
		Use:   "move-replica GROUP FROM TO",
		Short: "Move GROUP's replica from node FROM to node TO, online (add TO first, then remove FROM)",
		Long: `move-replica adds the new replica before it removes the old one, so the group
never has fewer replicas than it started with: HostGroup on TO, AddVoter(TO) on the
leader, RemoveVoter(FROM) on the leader, DropGroup on FROM.

` + removeLong,
		Example: "  seatctl group move-replica 3 n1 n4",
		Args:    exactArgs(3, "GROUP FROM TO"),
		RunE: func(c *cobra.Command, args []string) error {
			group, err := parseGroup(args[0])
			if err != nil {
				return err
			}
			if args[1] == args[2] {
				return usagef("FROM and TO are the same node %q", args[1])
			}
			return a.changeMembership(c.Context(), group, args[2], args[1], moveForce)
		},
	}
	move.Flags().BoolVar(&moveForce, "force-drop", false, forceDropUsage)
	return parentCmd("group", "Change a raft group's replicas, one at a time", add, remove, move, newRebalanceCmd(a))
}

// removeLong says when the drop needs --force-drop.
const removeLong = `The drop deletes the old replica's data only once the group's leader confirms,
from the old node, that its committed configuration omits the replica: the
removed replica itself may never hear of its removal. While no leader answers
so (an election, a partition between the old node and the leader) the step
retries, then fails naming what each node answered; re-run the command.
--force-drop skips the leader's confirmation, for an old node that cannot reach
any leader of the group for good: seatctl forces only a drop whose RemoveVoter
it has just seen the leader acknowledge in the same run.`

// forceDropUsage is --force-drop's help.
const forceDropUsage = "drop the old replica without the leader's confirmation (only if the old node cannot reach the group's leader; see above)"

// step is one membership step: it returns what it did.
type step struct {
	name string
	run  func(ctx context.Context) (string, error)
	// hint tells the operator where the group stands if the step fails.
	hint string
}

// changeMembership adds node add to the group and/or removes node remove
// from it (either may be ""), adding first; forceDrop forces the drop of
// the removed replica. It checks both against the cluster before the first
// step, so a move that could not finish does not start.
func (a *app) changeMembership(ctx context.Context, group uint32, add, remove string, forceDrop bool) error {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return err
	}
	g := v.group(group)
	if g == nil {
		return fmt.Errorf("no node that answered hosts group %d", group)
	}
	for _, id := range []string{add, remove} {
		if id != "" && v.node(id) == nil {
			return fmt.Errorf("no node %q in the cluster (nodes %s)", id, strings.Join(v.nodeIDs(), ","))
		}
	}
	after := g.Replicas
	if add != "" {
		if !v.up(add) {
			return fmt.Errorf("node %s does not answer: it cannot host a replica of group %d", add, group)
		}
		after = appendMissing(after, add)
	}
	if remove != "" {
		if err := checkRemoval(group, after, remove, v.up); err != nil {
			return err
		}
	}
	var steps []step
	if add != "" {
		steps = append(steps, a.hostStep(group, add), a.addVoterStep(group, add))
	}
	if remove != "" {
		steps = append(steps, a.removeVoterStep(group, remove))
		if v.up(remove) {
			steps = append(steps, a.dropStep(group, remove, forceDrop))
		}
	}
	if err := a.runSteps(ctx, steps); err != nil {
		return err
	}
	if remove != "" && !v.up(remove) {
		fmt.Fprintf(a.out, "%s is down: its copy of group %d stays on its disk until it answers (then re-run remove-replica %d %s to drop it)\n", remove, group, group, remove)
	}
	return nil
}

// runSteps runs the steps in order, each retried for the retry window,
// printing each as it completes.
func (a *app) runSteps(ctx context.Context, steps []step) error {
	for i, s := range steps {
		var msg string
		err := a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
			var err error
			msg, err = s.run(ctx)
			return err
		})
		if err != nil {
			err = fmt.Errorf("step %d/%d (%s) failed: %s", i+1, len(steps), s.name, describe(err))
			if s.hint != "" {
				err = fmt.Errorf("%w; %s", err, s.hint)
			}
			return err
		}
		fmt.Fprintf(a.out, "step %d/%d %s: %s\n", i+1, len(steps), s.name, msg)
	}
	return nil
}

// hostStep starts an empty replica of the group on node.
func (a *app) hostStep(group uint32, node string) step {
	return step{name: "host", run: func(ctx context.Context) (string, error) {
		_, err := a.onNode(ctx, node, func(ctx context.Context, c ledgerpb.AdminClient) (*ledgerpb.MembershipResponse, error) {
			return c.HostGroup(ctx, &ledgerpb.GroupRequest{Group: group})
		})
		if reasonOf(err) == "FAILED_PRECONDITION" {
			return fmt.Sprintf("%s hosts group %d already", node, group), nil
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s hosts an empty replica of group %d", node, group), nil
	}}
}

// addVoterStep adds node to the group on its leader.
func (a *app) addVoterStep(group uint32, node string) step {
	return step{name: "add-voter", run: func(ctx context.Context) (string, error) {
		return a.onLeader(ctx, group, "added "+node, func(ctx context.Context, c ledgerpb.AdminClient) (*ledgerpb.MembershipResponse, error) {
			return c.AddVoter(ctx, &ledgerpb.VoterRequest{Group: group, Node: node})
		})
	}}
}

// removeVoterStep removes node from the group on its leader. If node leads
// the group it first hands leadership to another replica: a leader that
// removes itself steps down only once the change commits, and the group
// then waits an election timeout for a new leader, its writes stalled.
func (a *app) removeVoterStep(group uint32, node string) step {
	return step{name: "remove-voter", run: func(ctx context.Context) (string, error) {
		handed := ""
		if _, g, err := a.groupView(ctx, group); err == nil && g.Leader == node && len(g.Replicas) > 1 {
			res, err := a.transferLeader(ctx, group, "")
			if err != nil {
				return "", err
			}
			handed = fmt.Sprintf("%s handed group %d to %s; ", node, group, res.To)
		}
		msg, err := a.onLeader(ctx, group, "removed "+node, func(ctx context.Context, c ledgerpb.AdminClient) (*ledgerpb.MembershipResponse, error) {
			return c.RemoveVoter(ctx, &ledgerpb.VoterRequest{Group: group, Node: node})
		})
		return handed + msg, err
	}}
}

// dropStep deletes node's replica of the group. Without force the node
// asks the group's leader whether its committed configuration omits the
// replica (the removed replica may never hear of its removal itself) and
// refuses, FAILED_PRECONDITION, until it does; the step retries that as it
// retries a missing leader, since an election or a short partition ends.
// force skips the leader's confirmation: only after this run saw the
// leader acknowledge RemoveVoter (--force-drop).
func (a *app) dropStep(group uint32, node string, force bool) step {
	hint := fmt.Sprintf("%s is out of group %d but still holds the replica's data: re-run remove-replica when it answers", node, group)
	if !force {
		hint = fmt.Sprintf("%s still holds the replica's data: re-run remove-replica %d %s once it can reach the group's leader, or with --force-drop if it cannot and the remove-voter step succeeded", node, group, node)
	}
	return step{name: "drop", hint: hint, run: func(ctx context.Context) (string, error) {
		_, err := a.onNode(ctx, node, func(ctx context.Context, c ledgerpb.AdminClient) (*ledgerpb.MembershipResponse, error) {
			return c.DropGroup(ctx, &ledgerpb.GroupRequest{Group: group, Force: force})
		})
		switch reasonOf(err) {
		case "NOT_FOUND":
			return fmt.Sprintf("%s does not host group %d (dropped already)", node, group), nil
		case "FAILED_PRECONDITION":
			return "", fmt.Errorf("%w: %s", errRemovalUnconfirmed, describe(err))
		}
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s dropped its replica of group %d", node, group), nil
	}}
}

// errRemovalUnconfirmed is a drop the node refused because no leader of
// the group confirmed the removal yet; it is retried.
var errRemovalUnconfirmed = errors.New("no leader confirmed the removal yet")

// adminCall is one Admin membership call.
type adminCall func(ctx context.Context, c ledgerpb.AdminClient) (*ledgerpb.MembershipResponse, error)

// onNode makes call on node id within --timeout.
func (a *app) onNode(ctx context.Context, id string, call adminCall) (*ledgerpb.MembershipResponse, error) {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return nil, err
	}
	n := v.node(id)
	if n == nil {
		return nil, fmt.Errorf("no node %q in the cluster", id)
	}
	c, err := a.admin(n.GRPCAddr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return call(ctx, c)
}

// onLeader makes call on the group's current leader and says what it did.
func (a *app) onLeader(ctx context.Context, group uint32, did string, call adminCall) (string, error) {
	v, g, err := a.groupView(ctx, group)
	if err != nil {
		return "", err
	}
	c, err := a.admin(v.node(g.Leader).GRPCAddr)
	if err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	resp, err := call(cctx, c)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("leader %s %s: group %d replicas %s", g.Leader, did, group, strings.Join(resp.Replicas, ",")), nil
}

// checkRemoval refuses to remove node from a group whose configuration
// (after any addition) is replicas, when what is left could not commit: no
// replica left, or fewer live replicas than a quorum of the rest.
func checkRemoval(group uint32, replicas []string, node string, up func(string) bool) error {
	if !slices.Contains(replicas, node) {
		return nil // not a member: the steps only make sure it is dropped
	}
	var rest []string
	live := 0
	for _, r := range replicas {
		if r == node {
			continue
		}
		rest = append(rest, r)
		if up(r) {
			live++
		}
	}
	if len(rest) == 0 {
		return fmt.Errorf("refusing to remove %s: it is group %d's only replica", node, group)
	}
	if quorum := len(rest)/2 + 1; live < quorum {
		return fmt.Errorf("refusing to remove %s: group %d would keep %d live of %d replicas (%s), below its quorum of %d; bring replicas up first",
			node, group, live, len(rest), strings.Join(rest, ","), quorum)
	}
	return nil
}

// appendMissing adds id to a sorted copy of ids if it is not there.
func appendMissing(ids []string, id string) []string {
	out := slices.Clone(ids)
	if !slices.Contains(out, id) {
		out = append(out, id)
		slices.Sort(out)
	}
	return out
}
