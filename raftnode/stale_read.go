package raftnode

import (
	"context"
	"errors"
	"sync"
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
//     heartbeat frame carried (commitKnown), which must be within maxStale,
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
	// the entries it has handed to the FSM goroutine, which may not have
	// applied them yet (a view taken then missed acknowledged writes, seen
	// as a flaky TestFreshViewIncludesWritesAcknowledgedBeforeItsTime on a
	// loaded machine).
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

// commitKnown is what a follower last learned of its leader's commit index:
// the index, the leader's term, and a time at which the leader had
// committed at least that much. Only heartbeat frames tell it
// (beats_serve.go, noteCommit): a frame goes out after the answer to the
// previous one, so its commit index is dated by the previous frame's
// arrival. An AppendEntries is not: it may have been in flight while the
// leader committed (and acknowledged) further entries with the other
// followers, so dating its commit index by its arrival claimed a view
// fresher than it was (TestFollowerLearnsCommitsFromHeartbeatFrames caught
// it now and then under load).
type commitKnown struct {
	mu   sync.Mutex
	last knownCommit
}

type knownCommit struct {
	at          time.Time
	index, term uint64
}

func (c *commitKnown) get() knownCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// relay passes the RPCs of in to raft through out until stop. It starts
// once raft exists.
func (g *Group) relay(in <-chan raft.RPC, out chan<- raft.RPC) {
	defer g.wg.Done()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.stop:
			return
		}
		select {
		case out <- rpc:
		case <-g.stop:
			return
		}
	}
}
