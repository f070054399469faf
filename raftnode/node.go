package raftnode

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/fsm"
)

// Node is one seatledger process's share of the cluster: a Pebble database,
// one raft port, and a replica of every group that names this node.
type Node struct {
	cfg    Config
	db     *pebble.DB
	mux    *Mux
	groups map[uint32]*Group // fixed after Start

	muxDone   chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start opens the node's storage, listens on its raft port and starts its
// groups.
func Start(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.BatchCommandsMax > fsm.BatchCommandsMax {
		return nil, fmt.Errorf("raftnode: batch of %d commands exceeds the fsm limit %d", cfg.BatchCommandsMax, fsm.BatchCommandsMax)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("raftnode: data dir: %w", err)
	}
	db, err := fsm.OpenDB(filepath.Join(cfg.DataDir, "state"))
	if err != nil {
		return nil, err
	}
	ln := cfg.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.RaftAddr)
	}
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("raftnode: listen on %s: %w", cfg.RaftAddr, err)
	}
	n := &Node{cfg: cfg, db: db, mux: NewMux(ln), groups: map[uint32]*Group{}, muxDone: make(chan struct{})}
	go func() {
		defer close(n.muxDone)
		n.mux.Serve()
	}()
	for _, id := range n.hostedGroups() {
		g, err := startGroup(n, id, cfg.Groups[id])
		if err != nil {
			n.Close()
			return nil, err
		}
		n.groups[id] = g
	}
	return n, nil
}

func (n *Node) hostedGroups() []uint32 {
	var ids []uint32
	for g, replicas := range n.cfg.Groups {
		if slices.Contains(replicas, n.cfg.NodeID) {
			ids = append(ids, g)
		}
	}
	slices.Sort(ids)
	return ids
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Peers lists the cluster's nodes.
func (n *Node) Peers() []Peer { return n.cfg.Peers }

// Group returns this node's replica of a group.
func (n *Node) Group(id uint32) (*Group, error) {
	g, ok := n.groups[id]
	if !ok {
		return nil, fmt.Errorf("%w: group %d", ErrUnknownGroup, id)
	}
	return g, nil
}

// Groups returns the hosted groups in id order.
func (n *Node) Groups() []*Group {
	out := make([]*Group, 0, len(n.groups))
	for _, id := range n.hostedGroups() {
		if g, ok := n.groups[id]; ok {
			out = append(out, g)
		}
	}
	return out
}

// Close stops every group (failing queued proposals), shuts raft down,
// closes the port and the database. Safe to call twice.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		for _, g := range n.groups {
			errs = append(errs, g.close())
		}
		errs = append(errs, n.mux.Close())
		<-n.muxDone
		errs = append(errs, n.db.Close())
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}
