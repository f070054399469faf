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
//  1. D.HostGroup(g): D starts an empty replica that waits for the leader.
//  2. leader.AddVoter(g, D): the configuration gains D; the leader sends it
//     the log or a snapshot.
//  3. leader.RemoveVoter(g, A): the configuration loses A (a leader that
//     removes itself steps down once the change commits).
//  4. A.DropGroup(g): A stops its replica, deletes its raft files and state,
//     and leaves a tombstone so that a restart does not host it again.
//
// One server at a time is safe only while a server id keeps its state, and
// a node that hosts a group again reuses its id with an empty replica: that
// replica refuses to vote until it holds what was committed when it joined
// (catchup.go; without it, jepsen seed 21 lost committed entries).

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
)

// HostGroup starts an empty replica of group id on this node, to be added to
// the group with AddVoter on its leader. Any state left from an earlier
// replica of the group here is deleted first.
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
	floor := lastTerm(filepath.Join(n.groupDir(id), tombstoneFile))
	if err := n.wipeGroup(id); err != nil {
		return err
	}
	// It votes once it holds what was committed when it joined (catchup.go).
	if err := markCatchUp(n.groupDir(id), floor); err != nil {
		return fmt.Errorf("raftnode: mark group %d catching up: %w", id, err)
	}
	g, err := startGroup(n, id, nil)
	if err != nil {
		return err
	}
	n.mu.groups[id] = g
	n.cfg.Logger.Info("hosting group", "group", id)
	return nil
}

// DropGroup stops this node's replica of group id and deletes its raft files
// and state, leaving a tombstone. It refuses while the replica's
// configuration still names this node (remove it with RemoveVoter first),
// unless force: a removed server may never receive the entry that removed
// it, so the operator may vouch for the leader's acknowledgement instead.
func (n *Node) DropGroup(id uint32, force bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	g, ok := n.mu.groups[id]
	if !ok {
		return fmt.Errorf("%w: group %d is not hosted here", ErrUnknownGroup, id)
	}
	members, err := g.Replicas()
	if err == nil && slices.Contains(members, n.cfg.NodeID) && !force {
		return fmt.Errorf("%w: group %d (members %v)", ErrStillMember, id, members)
	}
	// The tombstone keeps the replica's last term: a replica hosted here
	// again takes commit indexes for its catch-up only from leaders of that
	// term or later (catchup.go).
	term := g.raft.CurrentTerm()
	if err := g.close(); err != nil {
		n.cfg.Logger.Warn("closing dropped group", "group", id, "err", err)
	}
	delete(n.mu.groups, id)
	n.metrics.forget(id)
	if err := n.wipeGroup(id); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(n.groupDir(id), tombstoneFile), fmt.Appendf(nil, "removed from this node\n%s%d\n", termLinePrefix, term), 0o644); err != nil {
		return fmt.Errorf("raftnode: tombstone for group %d: %w", id, err)
	}
	n.cfg.Logger.Info("dropped group", "group", id)
	return nil
}

// wipeGroup deletes a group's raft files, its entries in the node log and
// its state machine range.
func (n *Node) wipeGroup(id uint32) error {
	if err := n.log.wipe(id); err != nil {
		return fmt.Errorf("raftnode: remove group %d's log: %w", id, err)
	}
	if err := os.RemoveAll(n.groupDir(id)); err != nil {
		return fmt.Errorf("raftnode: remove group %d files: %w", id, err)
	}
	if err := os.MkdirAll(n.groupDir(id), 0o755); err != nil {
		return fmt.Errorf("raftnode: group %d dir: %w", id, err)
	}
	return fsm.DropGroup(n.db, id)
}

// Replicas is the group's current configuration as this replica knows it.
func (g *Group) Replicas() ([]string, error) {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, err
	}
	var ids []string
	for _, s := range f.Configuration().Servers {
		ids = append(ids, string(s.ID))
	}
	slices.Sort(ids)
	return ids, nil
}

// AddVoter adds node id to the group; call it on the leader. The new replica
// must be hosted (HostGroup) on that node, and the node be in this node's
// peer table (registered).
func (g *Group) AddVoter(ctx context.Context, id string) error {
	// The registry's address (peers.go): a node added after this one
	// started is known by it, not by the seed list.
	addr := g.node.raftAddr(id)
	if addr == "" {
		return fmt.Errorf("%w: %s (not in this node's peer table: register it with seatctl node add)", ErrUnknownPeer, id)
	}
	if !g.IsLeader() {
		return ErrNotLeader
	}
	return g.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, membershipTimeout).Error()
}

// RemoveVoter removes node id from the group; call it on the leader.
func (g *Group) RemoveVoter(ctx context.Context, id string) error {
	if !g.IsLeader() {
		return ErrNotLeader
	}
	return g.raft.RemoveServer(raft.ServerID(id), 0, membershipTimeout).Error()
}
