package raftnode

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// commitKnown is what a follower last learned of its leader's commit index:
// the index, the leader's term, and a time at which the leader had
// committed at least that much. Only heartbeat frames tell it
// (heartbeat_serve.go dates them). An AppendEntries does not: it may have
// been in flight while the leader committed, and acknowledged, further
// entries with the other followers, so its arrival dates nothing.
type commitKnown struct {
	mu struct {
		sync.Mutex
		// last is the record; guarded by mu.
		last knownCommit
	}
}

type knownCommit struct {
	at          time.Time
	index, term uint64
}

func (c *commitKnown) get() knownCommit {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.last
}

// noteLater keeps k if it is known as of a later time than the record.
func (c *commitKnown) noteLater(k knownCommit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k.at.After(c.mu.last.at) {
		c.mu.last = k
	}
}

// noteCommit records a commit index a leader's heartbeat frame carried
// with req. Raft applies only what it knows committed, so FreshView would
// wait in vain for an index beyond it: such an index is first handed to
// raft (learnCommit), and recorded only if raft takes it.
func (g *Group) noteCommit(req *raft.AppendEntriesRequest, k knownCommit) {
	r := g.trans.raft.Load()
	if r == nil || (k.index > r.CommitIndex() && !g.learnCommit(r, req, k)) {
		return
	}
	g.commits.noteLater(k)
}

// learnCommit tells this follower's raft that the leader of k.term has
// committed k.index (commitAppend), if this replica holds that entry: by
// log matching its log then equals the leader's up to k.index, all
// committed. Raft's answer is dropped (the leader has the heartbeat's); a
// busy raft is skipped, and the next frame retries. The leader sends a
// commit index only with its own term's entry there; before that,
// FreshView would refuse it anyway.
func (g *Group) learnCommit(r *raft.Raft, hb *raft.AppendEntriesRequest, k knownCommit) bool {
	if r.State() != raft.Follower || r.CurrentTerm() != k.term {
		return false
	}
	var e raft.Log
	if err := g.logs.GetLog(k.index, &e); err != nil || e.Term != k.term {
		return false
	}
	return g.inject(commitAppend(hb, k.index, k.term))
}
