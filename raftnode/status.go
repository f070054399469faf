package raftnode

import (
	"errors"
	"fmt"

	"github.com/hashicorp/raft"
)

// The typed view of a replica that the layers above use, so that
// hashicorp/raft's types, its string-keyed Stats and its errors stay inside
// this package (STYLE 20): a raft upgrade then changes this file, not the
// gateway.

// Status is one replica's raft state as this node sees it now. The fields
// are read one by one, not under one lock, so they may be a moment apart:
// good for operators and readiness, not for deciding safety.
type Status struct {
	// State is the replica's role: Leader, Follower, Candidate or Shutdown.
	State string
	// Leader is the node id of the leader this replica knows, "" if none.
	Leader string
	// Term is the replica's current term.
	Term uint64
	// LastIndex is the index of the last entry in the replica's log.
	LastIndex uint64
	// CommitIndex is the highest index this replica knows to be committed.
	CommitIndex uint64
	// AppliedIndex is the highest index raft has handed to the FSM.
	AppliedIndex uint64
}

// Status reports the replica's raft state.
func (g *Group) Status() Status {
	return Status{State: g.raft.State().String(), Leader: g.Leader(), Term: g.raft.CurrentTerm(),
		LastIndex: g.raft.LastIndex(), CommitIndex: g.raft.CommitIndex(), AppliedIndex: g.raft.AppliedIndex()}
}

// ErrTransferFailed: a leadership transfer did not complete (the target did
// not catch up or win its election in time, or another transfer runs). The
// leader may still be this replica; asking again is safe.
var ErrTransferFailed = errors.New("raftnode: leadership transfer failed")

// TransferLeadership hands the group's leadership to node to's replica, or
// to the most up-to-date follower when to is "". Call it on the leader: it
// answers ErrNotLeader elsewhere, ErrUnknownPeer for a node with no known
// address, and ErrTransferFailed when raft gave up. It waits for raft's
// answer.
func (g *Group) TransferLeadership(to string) error {
	if !g.IsLeader() {
		return ErrNotLeader
	}
	var f raft.Future
	if to == "" {
		f = g.raft.LeadershipTransfer()
	} else {
		addr := g.serverAddr(to)
		if addr == "" {
			return fmt.Errorf("%w: %s (not in this node's peer table nor in group %d's configuration)", ErrUnknownPeer, to, g.id)
		}
		// The replica's server id, incarnation included (incarnation.go).
		f = g.raft.LeadershipTransferToServer(g.serverID(to), raft.ServerAddress(addr))
	}
	return transferError(g.waitFuture(f))
}

// transferError maps a leadership transfer's raft error to this package's.
func transferError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader):
		return ErrNotLeader
	default:
		return fmt.Errorf("%w: %w", ErrTransferFailed, err)
	}
}

// membershipError maps a configuration change's raft error to this
// package's, so callers match one error whatever raft said: refused because
// this replica does not lead is ErrNotLeader; leadership lost after the
// change was appended is ErrOutcomeUnknown (it may still commit, and asking
// again is safe: a change already made is found made). Others keep raft's
// text.
func membershipError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	case errors.Is(err, raft.ErrLeadershipLost):
		return fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	default:
		return err
	}
}
