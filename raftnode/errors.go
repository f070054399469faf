package raftnode

import (
	"errors"

	"github.com/hashicorp/raft"
)

var (
	// ErrNotLeader: this replica does not lead the group; the command was
	// not appended. Retry at the leader.
	ErrNotLeader = errors.New("raftnode: not leader")
	// ErrOutcomeUnknown: the command may or may not have been applied
	// (leadership lost or shutdown after append, or the caller gave up).
	// Retry with the same request_id.
	ErrOutcomeUnknown = errors.New("raftnode: outcome unknown")
	// ErrUnavailable: the group cannot take commands now (shutting down,
	// overloaded, or no leader); nothing was appended.
	ErrUnavailable = errors.New("raftnode: unavailable")
	// ErrNoLeader: this replica has known no leader of the group for
	// leaderlessTimeouts election timeouts (cut off from its peers, or the
	// group has no quorum); nothing was appended. Retry at another node:
	// waiting here would only wait out the partition.
	ErrNoLeader = errors.New("raftnode: no leader known")
	// ErrUnknownGroup: this node hosts no replica of the group.
	ErrUnknownGroup = errors.New("raftnode: group not hosted here")
)

// classify maps a raft future's error to a definite or unknown outcome.
func classify(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	case errors.Is(err, raft.ErrEnqueueTimeout):
		return ErrUnavailable
	default:
		// ErrLeadershipLost, ErrRaftShutdown, ErrAbortedByRestore and
		// anything unexpected: the entry may be in the log.
		return ErrOutcomeUnknown
	}
}
