package raftnode

import (
	"fmt"
	"sync/atomic"
	"time"
)

// leaderlessTimeouts is how many election timeouts a replica may know no
// leader before its group's calls fail fast with ErrNoLeader (DESIGN 4,
// Outcomes). One timeout is a normal election; two leave room for a split
// vote before a healthy group is called cut off.
const leaderlessTimeouts = 2

// leaderWatch tracks since when a replica has known no leader, so that a
// node cut off from its peers answers its group's calls at once instead of
// holding them until the client gives up.
type leaderWatch struct {
	// born is since's monotonic origin; set in start, then read-only.
	born time.Time
	// since is when the replica stopped knowing a leader, in nanoseconds
	// after born plus one; 0 while it knows one. Written by
	// watchHeartbeats (raft's leader observations) and CheckLeader.
	since atomic.Int64
}

// start begins with no leader known: a replica learns its leader from the
// first heartbeat.
func (w *leaderWatch) start() {
	w.born = time.Now()
	w.since.Store(w.now())
}

func (w *leaderWatch) now() int64 { return int64(time.Since(w.born)) + 1 }

// observe records a leader observation: known or lost.
func (w *leaderWatch) observe(known bool) {
	if known {
		w.since.Store(0)
		return
	}
	w.since.CompareAndSwap(0, w.now())
}

// elapsed returns how long no leader has been known, given whether raft
// knows one now. Raft's own view wins over the observations, which are
// dropped when their channel is full: a lost-leader observation never
// seen starts the clock here, later rather than never.
func (w *leaderWatch) elapsed(known bool) time.Duration {
	if known {
		w.since.Store(0)
		return 0
	}
	now := w.now()
	if w.since.CompareAndSwap(0, now) {
		return 0
	}
	return time.Duration(max(0, now-w.since.Load()))
}

// CheckLeader returns ErrNoLeader when this replica has known no leader of
// the group for leaderlessTimeouts election timeouts, else nil. Callers
// check it before waiting on the group, so that a node cut off from its
// peers sends its clients elsewhere at once.
func (g *Group) CheckLeader() error {
	d := g.leaderless.elapsed(g.Leader() != "")
	if limit := leaderlessTimeouts * g.node.cfg.ElectionTimeout; d >= limit {
		return fmt.Errorf("%w: group %d for %v (over %v)", ErrNoLeader, g.id, d.Round(time.Millisecond), limit)
	}
	return nil
}
