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
//   - at a follower, the time it last received its leader's commit index
//     (commitKnown), which must be within maxStale, once it has applied up
//     to that index.
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
// when (the time the AppendEntries carrying it arrived), the index, and the
// leader's term. Heartbeats do not carry the commit index, so the time of
// the last heartbeat (raft's LastContact) says nothing of what the follower
// knows to be committed: between appends, a leader tells its followers its
// commit index only in heartbeat frames, as of the previous frame
// (beats_serve.go, noteCommit), or every CommitTimeout to 2×CommitTimeout.
type commitKnown struct {
	mu   sync.Mutex
	last knownCommit
}

type knownCommit struct {
	at          time.Time
	index, term uint64
}

func (c *commitKnown) note(k knownCommit) {
	c.mu.Lock()
	c.last = k
	c.mu.Unlock()
}

func (c *commitKnown) get() knownCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// relay passes the RPCs of in to raft through out, noting the commit index
// each AppendEntries carries (FreshView) and letting screen answer some
// itself (catchup.go), until stop. It starts once raft exists.
func (g *Group) relay(in <-chan raft.RPC, out chan<- raft.RPC) {
	defer g.wg.Done()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.stop:
			return
		}
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && req.LeaderCommitIndex > 0 {
			g.commits.note(knownCommit{at: time.Now(), index: req.LeaderCommitIndex, term: req.Term})
		}
		if g.screen(rpc) {
			continue
		}
		select {
		case out <- rpc:
		case <-g.stop:
			return
		}
	}
}
