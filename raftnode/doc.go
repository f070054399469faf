// Package raftnode hosts one hashicorp/raft instance per raft group on a
// node: raft-boltdb/v2 log and stable store, a file snapshot store whose
// own snapshots keep only their index (snapshots.go), and one listening
// port for all groups (mux.go). It adds what the ledger needs on
// top of raft:
//
//   - group commit: many client commands are proposed as one Batch entry, so
//     one fsync and one round trip serve many holds (proposer.go);
//   - time from the leader: every entry carries the leader's clock;
//   - the expiry driver: the leader proposes Expire entries when holds are due
//     (expiry.go); no follower ever decides expiry;
//   - linearizable reads (read.go);
//   - heartbeats coalesced per node pair (heartbeat.go): one frame per peer node
//     and tick carries every group's heartbeat and commit index, so an idle
//     cluster pays per node pair, not per group and follower, and followers
//     learn commits without raft's empty appends (CommitTimeout is 1 s);
//   - watchers: Group.WaitApplied wakes on every apply, with no polling and
//     no goroutine per watcher (applied.go);
//   - where raftnode leans on raft behaviour its API does not promise, it
//     does so in raftseam.go, and raft_contract_test.go pins each behaviour;
//   - outcomes kept apart: ErrNotLeader means the command was not appended
//     (retry elsewhere); ErrOutcomeUnknown means it may have been applied
//     (retry with the same request_id).
package raftnode
