package raftnode

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// Before incarnations (membership.go, incarnation.go), a replica that
// HostGroup started afresh reused its node's raft server id, which the
// group's older configurations (still in lagging replicas' logs) name as a
// voter with the state the node's earlier replica had. hashicorp raft
// grants a vote to any candidate whose log is at least as long as its own;
// an empty or half-filled replica would grant a lagging candidate the vote
// its earlier replica (which held the committed entries) would have
// refused, and that candidate, elected, truncates committed entries on the
// others (seen in jepsen seed 21: 4,880 committed entries lost after a
// replica was dropped and hosted again within a second). Now the new
// replica is a new server that no older configuration names, and traffic
// for the earlier one is refused at the Mux; this guard stays as a second
// line (membership.go says why).
//
// A fresh replica refuses every vote and pre-vote until it holds every
// entry that was committed when it joined: until its last index reaches the
// commit index of the first AppendEntries it receives from a leader that
// has committed an entry of its own term (so its commit index covers every
// entry committed before that term) and whose term is at least the last
// term the node's earlier replica knew (kept in the tombstone): the earlier
// replica helped commit entries of its terms only, and a leader of such a
// term or a later one holds them all and, by then, counts them committed.
// A deposed leader of an older term, cut off from the rest but not from
// this replica, is not asked. Its catchUpFile (with that term) marks the
// state across restarts; after a restart the first such AppendEntries sets
// the target again.

// catchUpFile marks a replica that must not vote yet.
const catchUpFile = "CATCHING-UP"

type catchUp struct {
	on     atomic.Bool
	floor  uint64        // the earlier replica's last term (set before start)
	target atomic.Uint64 // the commit index to reach; 0: not known yet
}

// termLinePrefix starts the line of a tombstone or catch-up mark that holds
// a term.
const termLinePrefix = "term "

// lastTerm reads the term line of a tombstone or catch-up mark; 0 when the
// file or the line is missing.
func lastTerm(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, termLinePrefix); ok {
			if t, err := strconv.ParseUint(v, 10, 64); err == nil {
				return t
			}
		}
	}
	return 0
}

// markCatchUp records, before a fresh replica starts, that it may not vote;
// floor is the last term of the node's earlier replica of the group.
func markCatchUp(dir string, floor uint64) error {
	return writeFileSynced(filepath.Join(dir, catchUpFile),
		fmt.Appendf(nil, "this replica votes once it holds what was committed when it joined\n%s%d\n", termLinePrefix, floor))
}

// screen looks at an incoming RPC before raft does. While the replica
// catches up it answers vote and pre-vote requests itself, refused, and
// returns true; otherwise raft serves the RPC.
func (g *Group) screen(rpc raft.RPC) bool {
	if !g.catchUp.on.Load() {
		return false
	}
	switch req := rpc.Command.(type) {
	case *raft.AppendEntriesRequest:
		if req.LeaderCommitIndex > 0 && g.catchUp.target.Load() == 0 && req.Term >= g.catchUp.floor && g.committedInTerm(req) {
			g.catchUp.target.Store(req.LeaderCommitIndex)
		}
		g.checkCaughtUp()
		return false
	case *raft.RequestVoteRequest:
		g.checkCaughtUp()
		if !g.catchUp.on.Load() {
			return false
		}
		g.log.Warn("refusing a vote: this replica is still catching up", "candidate", string(req.ID), "term", req.Term)
		rpc.Respond(&raft.RequestVoteResponse{RPCHeader: g.rpcHeader(), Term: g.raft.CurrentTerm(), Granted: false}, nil)
		return true
	case *raft.RequestPreVoteRequest:
		g.checkCaughtUp()
		if !g.catchUp.on.Load() {
			return false
		}
		rpc.Respond(&raft.RequestPreVoteResponse{RPCHeader: g.rpcHeader(), Term: g.raft.CurrentTerm(), Granted: false}, nil)
		return true
	}
	return false
}

// committedInTerm reports whether the entry at req's commit index is of
// req's term, as far as req itself or this replica's log tells.
func (g *Group) committedInTerm(req *raft.AppendEntriesRequest) bool {
	c := req.LeaderCommitIndex
	for _, e := range req.Entries {
		if e.Index == c {
			return e.Term == req.Term
		}
	}
	if c == req.PrevLogEntry {
		return req.PrevLogTerm == req.Term
	}
	var e raft.Log
	return g.logs.GetLog(c, &e) == nil && e.Term == req.Term
}

// checkCaughtUp ends the catch-up once the replica holds the target index.
func (g *Group) checkCaughtUp() {
	t := g.catchUp.target.Load()
	if t == 0 || g.raft.LastIndex() < t {
		return
	}
	if err := os.Remove(filepath.Join(g.node.groupDir(g.id), catchUpFile)); err != nil && !os.IsNotExist(err) {
		g.log.Warn("could not clear the catch-up mark", "err", err)
		return
	}
	g.catchUp.on.Store(false)
	g.log.Info("replica caught up: it votes from now on", "index", t)
}

func (g *Group) rpcHeader() raft.RPCHeader {
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(g.self), Addr: []byte(withIncarnation(g.node.raftAddr(g.node.cfg.NodeID), g.incarnation))}
}
