package raftnode

import (
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// The seam into hashicorp/raft: coalesced heartbeats, commit indexes in
// heartbeat frames and follower progress lean on behaviours of raft v1.7.3
// that its API does not promise. They are used through this file only, and
// raft_contract_test.go pins each against the real library, so that a raft
// upgrade fails there, loudly, naming what to re-check:
//
//  1. Heartbeat shape. Raft's heartbeat loop sends an AppendEntries with
//     only RPCHeader, Term and Leader set, the shape raft's NetworkTransport
//     itself recognises (isHeartbeat); heartbeat frames carry exactly those
//     fields (heartbeat_wire.go). TestRaftContractHeartbeatShape.
//  2. Heartbeat pacing. After a periodic heartbeat's answer raft waits at
//     least HeartbeatTimeout/10 before the next (heartbeatGapMin); one sent
//     sooner was asked for (VerifyLeader, a retry) and is urgent. Raft
//     keeps sending them while it replicates appends, so their answers keep
//     follower progress fresh. TestRaftContractHeartbeatShape.
//  3. Heartbeat handler. NewRaft gives the transport a heartbeat handler
//     that answers before it returns, or never once raft has shut down
//     (answerHeartbeat). TestRaftContractHeartbeatHandler.
//  4. Commit by an empty append. A follower served, on its Consumer
//     channel, an AppendEntries of its term without entries whose previous
//     entry it holds commits and applies up to LeaderCommitIndex, its log
//     unchanged, and refuses one whose previous entry it lacks
//     (commitAppend, relay.go's inject). TestRaftContractCommitAppend.
//  5. LastLog. A follower answers an AppendEntries, heartbeats included,
//     with its last index from before it appends the request's entries
//     (answeredLastIndex: follower progress, and AddVoter's promotion of a
//     caught-up learner). TestRaftContractCommitAppend,
//     TestAddVoterWaitsForTheLearner.
//  6. Monotonic log. raft.LogCache passes IsMonotonic through, and raft then
//     drops a follower's whole log when it installs a snapshot.
//     TestRaftContractLogCacheIsMonotonic, TestFollowerCatchesUpFromSnapshot.
//  7. The client speaks first. On a connection its transport dials, raft
//     writes an RPC before it reads anything; the Mux reads the first byte
//     before handing the connection over (mux.go).
//     TestRaftContractTransportSpeaksFirst.
//  8. The term's key. Raft keeps its current term in its stable store
//     under "CurrentTerm" (keyCurrentTerm), which seeding a group from a
//     backup writes (backup.go). TestRaftContractTermKey.
//  9. Learners do not vote. A candidate asks voters only, so a replica
//     that joined as a non-voter counts in no election until AddVoter
//     promotes it; membership.go's safety argument rests on it.
//     TestRaftContractCandidatesAskVotersOnly.
// 10. Removal is told by nothing but the log. The leader stops replicating
//     to a server as soon as it appends the configuration that removes it,
//     after one best-effort append, so the removed server may keep a
//     configuration that names it; and GetConfiguration's Index (so also
//     Stats' "latest_configuration_index") is 0, so no replica can compare
//     its configuration's index with its commit index. DropGroup asks the
//     leader instead, which proves its configuration committed with a
//     Barrier after reading it (membership_ask.go).
//     TestRaftContractConfigurationIndexUnknown,
//     TestRaftContractRemovedFollowerMayNotLearn,
//     TestDropGroupAfterAnUnseenRemoval.
// 11. Append fields. An AppendEntries, its entries and its answer have the
//     fields append frames carry (append_wire.go) and no others, so a frame
//     drops nothing raft sends. TestRaftContractAppendFields.
//
// Raft learns a transport's optional features (pre-vote, close) and a log
// store's by type assertion; the wrappers keep them, checked below.

var (
	_ raft.WithPreVote       = (*beatTransport)(nil)
	_ raft.WithClose         = (*beatTransport)(nil)
	_ raft.MonotonicLogStore = checkedLogs{}
	_ raft.MonotonicLogStore = timedLogs{}
)

// keyCurrentTerm is raft's stable-store key for its current term
// (unexported there).
var keyCurrentTerm = []byte("CurrentTerm")

// isHeartbeat reports whether req is what raft's heartbeat loop sends, by
// the test raft's NetworkTransport applies on receipt (handleCommand).
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	leader := req.RPCHeader.Addr
	if len(leader) == 0 {
		leader = req.Leader
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

// heartbeatGapMin is the least time raft waits after a periodic
// heartbeat's answer before it sends the next one to that follower.
func heartbeatGapMin(heartbeatTimeout time.Duration) time.Duration {
	return heartbeatTimeout / 10
}

// errHeartbeatUnanswered is raft's handler returning without an answer:
// raft is shutting down.
var errHeartbeatUnanswered = errors.New("raftnode: raft did not answer the heartbeat: it is shutting down")

// answerHeartbeat hands req to raft's heartbeat handler fn and returns its
// answer.
func answerHeartbeat(fn func(raft.RPC), req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
	ch := make(chan raft.RPCResponse, 1)
	fn(raft.RPC{Command: req, RespChan: ch})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		resp, ok := r.Response.(*raft.AppendEntriesResponse)
		if !ok || resp == nil {
			return nil, errors.New("raftnode: heartbeat handler gave no append response")
		}
		return resp, nil
	default:
		return nil, errHeartbeatUnanswered
	}
}

// commitAppend is the AppendEntries the leader of term, whose heartbeat
// was hb, would send to tell a follower holding entry (index, term) that
// it is committed: no entries, that entry as the previous one, and commit
// index index. Raft checks the previous entry itself, so by log matching
// the follower commits only what the leader has.
func commitAppend(hb *raft.AppendEntriesRequest, index, term uint64) *raft.AppendEntriesRequest {
	return &raft.AppendEntriesRequest{
		RPCHeader: hb.RPCHeader, Term: term, Leader: hb.Leader,
		PrevLogEntry: index, PrevLogTerm: term, LeaderCommitIndex: index,
	}
}

// answeredLastIndex is the follower's last log index once it has answered
// args with resp, and whether resp tells it (not for an error or an answer
// of a later term).
func answeredLastIndex(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, err error) (uint64, bool) {
	if err != nil || resp.Term > args.Term {
		return 0, false
	}
	last := resp.LastLog
	if resp.Success && len(args.Entries) > 0 {
		last = max(last, args.Entries[len(args.Entries)-1].Index)
	}
	return last, true
}
