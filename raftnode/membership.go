package raftnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/fsm"
)

// Moving a group's replica from node A to node D, online, is four steps that
// an operator (seatctl, the fault harness) runs in order; each is safe to
// retry and none loses acknowledged data, because raft changes membership one
// server at a time through its log:
//
//  1. D.HostGroup(g): D starts an empty replica, a new raft server, that
//     waits for the leader.
//  2. leader.AddVoter(g, D): D joins as a non-voter, takes the log or a
//     snapshot, and is made a voter once it holds the commit index.
//  3. leader.RemoveVoter(g, A): the configuration loses A (a leader that
//     removes itself steps down once the change commits).
//  4. A.DropGroup(g): A stops its replica, deletes its raft files and state,
//     and leaves a tombstone so that a restart does not host it again. A
//     may never learn of step 3 (the leader stops replicating to it), so
//     DropGroup asks the group's leader whether its committed
//     configuration omits A's replica (membership_ask.go); only when no
//     leader can be reached does the operator need force.
//
// One server at a time is safe only while a server id keeps its state, so
// every replica HostGroup starts has a new id, the node id with a fresh
// incarnation (incarnation.go), and the Mux refuses RPCs addressed to an
// earlier one: an empty replica can never stand in for the voter its
// node's earlier replica was. Until it is promoted no candidate asks for
// its vote (raftseam.go, 9). docs/ARCHITECTURE.md says why the id, not
// only the address, carries the incarnation.

// tombstoneFile marks a group this node no longer hosts.
const tombstoneFile = "REMOVED"

// membershipTimeout bounds one configuration change.
const membershipTimeout = 10 * time.Second

// Membership errors.
var (
	ErrGroupHosted = errors.New("raftnode: group already hosted here")
	ErrStillMember = errors.New("raftnode: this node is still in the group's configuration")
	ErrNodeClosed  = errors.New("raftnode: node closed")
	ErrUnknownPeer = errors.New("raftnode: unknown node")
	// ErrOtherIncarnation: the group's configuration names another
	// incarnation of the node than the replica it hosts (membership.go).
	ErrOtherIncarnation = errors.New("raftnode: the group names another replica of this node")
	// ErrNotCaughtUp is a replica added as a non-voter that did not catch
	// up with its leader in time: it was not made a voter.
	ErrNotCaughtUp = errors.New("raftnode: the new replica has not caught up")
)

// HostGroup starts an empty replica of group id on this node, under a new
// incarnation, to be added to the group with AddVoter on its leader. Any
// state left from an earlier replica of the group here is deleted first.
func (n *Node) HostGroup(id uint32) error {
	if _, ok := n.cfg.Groups[id]; !ok {
		return fmt.Errorf("%w: group %d", ErrUnknownGroup, id)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.closed {
		return ErrNodeClosed
	}
	if _, ok := n.mu.groups[id]; ok {
		return fmt.Errorf("%w: group %d", ErrGroupHosted, id)
	}
	dir := n.groupDir(id)
	tomb := filepath.Join(dir, tombstoneFile)
	inc, err := newIncarnation()
	if err != nil {
		return err
	}
	// Until the new incarnation is on disk a tombstone stays, so a crash
	// in between leaves a group this node does not host at start, never an
	// empty replica under a plain id (or a bootstrapped one).
	if !exists(tomb) {
		if err := writeTombstone(dir); err != nil {
			return fmt.Errorf("raftnode: group %d: %w", id, err)
		}
	}
	if err := n.wipeGroup(id); err != nil {
		return err
	}
	if err := writeIncarnation(dir, inc); err != nil {
		return err
	}
	if err := os.Remove(tomb); err != nil {
		return fmt.Errorf("raftnode: group %d: remove tombstone: %w", id, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("raftnode: group %d: %w", id, err)
	}
	g, err := startGroup(n, id, nil, nil)
	if err != nil {
		return err
	}
	n.mu.groups[id] = g
	n.cfg.Logger.Info("hosting group", "group", id, "server_id", string(g.self))
	return nil
}

// DropGroup stops this node's replica of group id and deletes its raft files
// and state, leaving a tombstone. Without force it drops only a replica
// the group no longer counts on: one that never received a configuration,
// or one that another node, leading the group, confirms its committed
// configuration omits (membership_ask.go): the replica itself may never
// learn of its removal. Otherwise it refuses with ErrStillMember, saying
// what each node answered. force skips the check: the operator vouches
// that the removal committed (the leader acknowledged RemoveVoter) when
// no leader can be reached from this node.
func (n *Node) DropGroup(ctx context.Context, id uint32, force bool) error {
	g, err := n.Group(id)
	if err != nil {
		return fmt.Errorf("%w: group %d is not hosted here", ErrUnknownGroup, id)
	}
	// Asked without the lock: the question takes a network round trip,
	// and other nodes' DropGroups ask this one.
	if !force {
		if err := n.confirmRemoved(ctx, g); err != nil {
			return err
		}
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.closed {
		return ErrNodeClosed
	}
	if n.mu.groups[id] != g {
		return fmt.Errorf("%w: group %d: the replica checked was dropped meanwhile", ErrUnknownGroup, id)
	}
	if err := g.close(); err != nil {
		n.cfg.Logger.Warn("closing dropped group", "group", id, "err", err)
	}
	delete(n.mu.groups, id)
	n.metrics.forget(id)
	// The tombstone first: a crash while wiping then leaves a group this
	// node does not host at start, never a half-deleted replica.
	if err := writeTombstone(n.groupDir(id)); err != nil {
		return fmt.Errorf("raftnode: group %d: %w", id, err)
	}
	if err := n.wipeGroup(id); err != nil {
		return err
	}
	n.cfg.Logger.Info("dropped group", "group", id)
	return nil
}

// writeTombstone marks, synced, that this node does not host the group in
// dir.
func writeTombstone(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tombstone: %w", err)
	}
	path := filepath.Join(dir, tombstoneFile)
	if err := writeFileSynced(path, []byte("removed from this node\n")); err != nil {
		return fmt.Errorf("tombstone %s: %w", path, err)
	}
	return nil
}

// wipeGroup deletes a group's raft files (all but its tombstone), its
// entries in the node log and its state machine range.
func (n *Node) wipeGroup(id uint32) error {
	if err := n.log.wipe(id); err != nil {
		return fmt.Errorf("raftnode: remove group %d's log: %w", id, err)
	}
	dir := n.groupDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("raftnode: group %d dir: %w", id, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("raftnode: group %d dir: %w", id, err)
	}
	for _, e := range entries {
		if e.Name() == tombstoneFile {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("raftnode: remove group %d files: %w", id, err)
		}
	}
	return fsm.DropGroup(n.db, id)
}

// Replicas is the group's current configuration as this replica knows it,
// as node ids (without incarnations).
func (g *Group) Replicas() ([]string, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range f.Configuration().Servers {
		ids = append(ids, nodeOf(s.ID))
	}
	slices.Sort(ids)
	return ids, nil
}

// AddVoter adds node id's replica to the group; call it on the leader. The
// new replica must be hosted (HostGroup) on that node, and the node be in
// this node's peer table (registered). The server id added is the one of
// the replica the node hosts now (its incarnation, asked of its Mux); a
// configuration that still names another incarnation of the node is
// refused: remove that one first.
func (g *Group) AddVoter(ctx context.Context, id string) error {
	// The registry's address (peers.go): a node added after this one
	// started is known by it, not by the seed list.
	peer, ok := g.node.Peer(id)
	if !ok || peer.RaftAddr == "" {
		return fmt.Errorf("%w: %s (not in this node's peer table: register it with seatctl node add)", ErrUnknownPeer, id)
	}
	if !g.IsLeader() {
		return ErrNotLeader
	}
	timeout := membershipTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(d))
	}
	inc, err := g.node.mux.incarnationAt(peer.RaftTarget(), g.id, timeout)
	if err != nil {
		return fmt.Errorf("raftnode: add %s to group %d: %w", id, g.id, err)
	}
	sid := replicaID(id, inc)
	if cur, ok := g.memberID(id); ok && cur != sid {
		return fmt.Errorf("%w: group %d names %s, the node hosts %s", ErrOtherIncarnation, g.id, cur, sid)
	}
	addr := raft.ServerAddress(withIncarnation(peer.RaftAddr, inc))
	if !g.isVoter(sid) {
		// A learner first, as CockroachDB adds replicas: it takes the log
		// (or a snapshot) without counting toward any quorum, and votes
		// only once it holds what was committed when it joined.
		if err := membershipError(g.raft.AddNonvoter(sid, addr, 0, timeout).Error()); err != nil {
			return fmt.Errorf("raftnode: add %s to group %d as a non-voter: %w", id, g.id, err)
		}
		if err := g.waitCaughtUp(ctx, sid, timeout); err != nil {
			return err
		}
	}
	return membershipError(g.raft.AddVoter(sid, addr, 0, timeout).Error())
}

// isVoter reports whether server sid votes in the group's configuration.
func (g *Group) isVoter(sid raft.ServerID) bool {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if s.ID == sid {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// waitCaughtUp waits until server sid's log holds the leader's commit
// index as it was when the wait began (its AppendEntries answers tell:
// followerProgress), within timeout.
func (g *Group) waitCaughtUp(ctx context.Context, sid raft.ServerID, timeout time.Duration) error {
	target := g.raft.CommitIndex()
	deadline := time.Now().Add(timeout)
	for g.metrics.followers.lastIndex(sid) < target {
		if !g.IsLeader() {
			return ErrNotLeader
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: replica %s of group %d holds index %d of %d after %v; it stays a non-voter until it is added again",
				ErrNotCaughtUp, sid, g.id, g.metrics.followers.lastIndex(sid), target, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(catchUpPoll):
		}
	}
	return nil
}

// catchUpPoll is how often waitCaughtUp looks at a learner's progress.
const catchUpPoll = 20 * time.Millisecond

// RemoveVoter removes node id's replica, whatever its incarnation, from the
// group; call it on the leader.
func (g *Group) RemoveVoter(ctx context.Context, id string) error {
	if !g.IsLeader() {
		return ErrNotLeader
	}
	return membershipError(g.raft.RemoveServer(g.serverID(id), 0, membershipTimeout).Error())
}
