package raftnode

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/raft"

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
//   - at a follower, the time its leader had committed the index its last
//     heartbeat frame carried (leader_commit.go), which must be within maxStale,
//     once it has applied up to that index.
//
// Otherwise it returns ErrStale. It never talks to other replicas, so it
// costs the group's leader nothing: browse reads use it.
func (g *Group) FreshView(ctx context.Context, maxStale time.Duration) (*fsm.View, time.Time, error) {
	if g.leaderReady() {
		return g.machine.ReadView(), time.Now(), nil
	}
	k := g.commits.get()
	if g.IsLeader() || k.at.IsZero() || time.Since(k.at) > maxStale {
		return nil, time.Time{}, ErrStale
	}
	// The state machine's own applied index: raft's AppliedIndex counts
	// entries handed to the FSM goroutine, which may not have applied them
	// yet.
	deadline := time.Now().Add(staleApplyWaitMax)
	for g.machine.Applied() < k.index {
		if time.Now().After(deadline) {
			return nil, time.Time{}, ErrStale
		}
		select {
		case <-ctx.Done():
			return nil, time.Time{}, ctx.Err()
		case <-time.After(staleApplyPoll):
		}
	}
	// A leader's commit index covers every entry committed before it was
	// elected only once it has committed an entry of its own term (until
	// then it may lag what its predecessor acknowledged).
	var e raft.Log
	if err := g.logs.GetLog(k.index, &e); err != nil || e.Term != k.term {
		return nil, time.Time{}, ErrStale
	}
	return g.machine.ReadView(), k.at, nil
}
