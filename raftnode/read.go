package raftnode

import (
	"context"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
)

// View returns a read view of the group's state. With linearizable set, the
// view reflects every write acknowledged before the call:
//
//  1. this replica leads and its start-of-term barrier has completed, so
//     every entry of earlier terms is applied here;
//  2. VerifyLeader confirms with a quorum that no newer leader exists, so no
//     write was acknowledged elsewhere;
//  3. every write acknowledged in this term was acknowledged by this node
//     only after its own FSM applied it.
//
// Hence a view of the state published after VerifyLeader includes them all
// (fsm.Machine.ReadView: a read of it is at that index or a later one).
// Otherwise the view is this replica's applied state, possibly behind.
func (g *Group) View(ctx context.Context, linearizable bool) (*fsm.View, error) {
	if !linearizable {
		return g.machine.ReadView(), nil
	}
	epoch := g.epoch.Load()
	if !g.leaderReady() {
		return nil, ErrNotLeader
	}
	// Heartbeats waiting for the coalescer's tick go now (heartbeat.go).
	g.trans.verifying.Add(1)
	defer g.trans.verifying.Add(-1)
	g.node.beats.hurry()
	f := g.raft.VerifyLeader()
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrNotLeader, err)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
	if g.epoch.Load() != epoch {
		return nil, ErrNotLeader
	}
	return g.machine.ReadView(), nil
}
