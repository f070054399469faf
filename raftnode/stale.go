package raftnode

import (
	"context"
	"errors"
	"time"

	"github.com/seatledger/seatledger/fsm"
)

// ErrStale: this replica cannot serve a read within the asked staleness
// bound (no recent contact with a leader, or too far behind in applying);
// the leader can.
var ErrStale = errors.New("raftnode: replica too stale")

// Bounded-stale reads (browse) wait at most this long for a follower to
// apply what it knows is committed, polling at staleApplyPoll.
const (
	staleApplyWaitMax = 50 * time.Millisecond
	staleApplyPoll    = 2 * time.Millisecond
)

// FreshView returns a view of this replica's applied state that is stale by
// at most maxStale, and the time it is fresh as of:
//
//   - at a leader whose start-of-term barrier completed, now: a leader that
//     lost its quorum steps down within LeaderLeaseTimeout, which must be
//     shorter than maxStale;
//   - at a follower, the time it last heard from its leader, which must be
//     within maxStale, once it has applied every entry it knew committed
//     when the call began.
//
// Otherwise it returns ErrStale. It never talks to other replicas, so it
// costs the group's leader nothing: browse reads use it.
func (g *Group) FreshView(ctx context.Context, maxStale time.Duration) (*fsm.View, time.Time, error) {
	if g.leaderReady() {
		v, err := g.machine.View()
		return v, time.Now(), err
	}
	last := g.raft.LastContact()
	if g.IsLeader() || last.IsZero() || time.Since(last) > maxStale {
		return nil, time.Time{}, ErrStale
	}
	// Raft counts the entries it has handed to the FSM goroutine, which
	// applies them in order right after: the view lags by that queue only.
	committed := g.raft.CommitIndex()
	deadline := time.Now().Add(staleApplyWaitMax)
	for g.raft.AppliedIndex() < committed {
		if time.Now().After(deadline) {
			return nil, time.Time{}, ErrStale
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-time.After(staleApplyPoll):
		}
	}
	v, err := g.machine.View()
	return v, last, err
}
