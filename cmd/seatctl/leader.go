package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func newLeaderCmd(a *app) *cobra.Command {
	var to string
	transfer := &cobra.Command{
		Use:                   "transfer GROUP [--to NODE]",
		DisableFlagsInUseLine: true,
		Short:                 "Hand a group's leadership to another replica (NODE, or any up-to-date one)",
		Long: `transfer finds the group's leader with Status, asks it to hand leadership over
(to --to, or to any up-to-date replica), retrying while the group elects, and
prints the leader after the transfer.`,
		Example: "  seatctl leader transfer 3\n  seatctl leader transfer 3 --to n2",
		Args:    exactArgs(1, "GROUP"),
		RunE: func(c *cobra.Command, args []string) error {
			group, err := parseGroup(args[0])
			if err != nil {
				return err
			}
			res, err := a.transferLeader(c.Context(), group, to)
			if err != nil {
				return err
			}
			if a.json() {
				return writeJSON(a.out, res)
			}
			if res.From == res.To {
				fmt.Fprintf(a.out, "group %d: %s leads already (term %d)\n", res.Group, res.To, res.Term)
				return nil
			}
			fmt.Fprintf(a.out, "group %d: leader %s -> %s (term %d)\n", res.Group, res.From, res.To, res.Term)
			return nil
		},
	}
	transfer.Flags().StringVar(&to, "to", "", "node to hand leadership to (default: any up-to-date replica)")
	return parentCmd("leader", "Move raft leadership", transfer)
}

// transferResult is what leader transfer did.
type transferResult struct {
	Group uint32 `json:"group"`
	From  string `json:"from"`
	To    string `json:"to"`
	Term  uint64 `json:"term"`
}

// transferLeader calls TransferLeader on the group's leader, retrying while
// the group has no leader, then waits until Status shows the new one.
func (a *app) transferLeader(ctx context.Context, group uint32, to string) (transferResult, error) {
	res := transferResult{Group: group}
	err := a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		v, g, err := a.groupView(ctx, group)
		if err != nil {
			return err
		}
		if to != "" && !slices.Contains(g.Replicas, to) {
			return fmt.Errorf("node %q is not a replica of group %d (replicas %s)", to, group, strings.Join(g.Replicas, ","))
		}
		if to != "" && !v.up(to) {
			return fmt.Errorf("node %s does not answer: it cannot take over group %d", to, group)
		}
		if res.From == "" {
			res.From = g.Leader
		}
		if g.Leader != res.From || g.Leader == to {
			return nil // moved already: an earlier attempt went through, or nothing to do
		}
		c, err := a.admin(v.node(g.Leader).GRPCAddr)
		if err != nil {
			return err
		}
		cctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		_, err = c.TransferLeader(cctx, &ledgerpb.TransferLeaderRequest{Group: group, ToNode: to})
		return err
	})
	if err != nil {
		return res, fmt.Errorf("transfer leadership of group %d: %s", group, describe(err))
	}
	// The old leader answers once it has stepped down; wait until the
	// replicas agree on the new one.
	err = a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		_, g, err := a.groupView(ctx, group)
		if err != nil {
			return err
		}
		if (to == "" && g.Leader == res.From) || (to != "" && g.Leader != to) {
			return errNoLeader
		}
		res.To, res.Term = g.Leader, g.Term
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("group %d: leadership left %s but no new leader showed up: %s", group, res.From, describe(err))
	}
	return res, nil
}

// groupView polls the cluster and returns the group's view; a group
// without a leader is errNoLeader (retried).
func (a *app) groupView(ctx context.Context, group uint32) (clusterView, *groupView, error) {
	v, err := a.pollView(ctx, false)
	if err != nil {
		return v, nil, err
	}
	g := v.group(group)
	if g == nil {
		return v, nil, fmt.Errorf("no node that answered hosts group %d", group)
	}
	if g.Leader == "" || !v.up(g.Leader) {
		return v, g, fmt.Errorf("group %d: %w", group, errNoLeader)
	}
	return v, g, nil
}

// parseGroup parses a group id argument.
func parseGroup(s string) (uint32, error) {
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		return 0, usagef("GROUP must be a group number, not %q", s)
	}
	return uint32(n), nil
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
