package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/registry"
	"github.com/seatledger/seatledger/shard"
)

// How a node takes part in the node registry (package registry):
//
//   - A node started with --peers registers them as it starts (a seed
//     registration: only ids the registry has never seen), so a new
//     cluster's registry fills itself, and bootstraps the groups the
//     placement over --peers gives it, on its first start only.
//   - A node started with --join bootstraps nothing: it must have been
//     registered (seatctl node add), learns the registry from the nodes
//     named, hosts nothing until replicas are moved onto it, and serves
//     the API (forwarding) at once. On restart it resumes the groups on
//     its disk and knows its peers from the table it saved.
//   - Every node rereads the registry every second; a node the registry
//     lists as REMOVED when it starts stops with an error, and one removed
//     while it runs logs that it should be stopped.

// placement is the initial placement: over --peers for a node that
// bootstraps; every group without replicas for a node that joins, so that
// it hosts what is on its disk and may host any group later (HostGroup),
// but never bootstraps one: its own placement over a partial peer list
// would be a second, split-brain configuration.
func (c *nodeConfig) placement() map[uint32][]string {
	if len(c.Join) > 0 {
		out := make(map[uint32][]string, c.Groups)
		for g := range c.Groups {
			out[g] = nil
		}
		return out
	}
	ids := make([]string, len(c.Peers))
	for i, p := range c.Peers {
		ids[i] = p.ID
	}
	return shard.Placement(c.Groups, ids, c.Replicas)
}

// self is this node's seed list entry: the addresses it registers and is
// registered with.
func (c *nodeConfig) self() raftnode.Peer {
	i := slices.IndexFunc(c.Peers, func(p raftnode.Peer) bool { return p.ID == c.ID })
	if i < 0 {
		return raftnode.Peer{ID: c.ID}
	}
	return c.Peers[i]
}

// join learns the registry through --join before the node serves, unless
// the node knows peers already (a restart: the table it saved).
func (c *nodeConfig) join(rn *raftnode.Node, reg *registry.Registry) error {
	if len(c.Join) == 0 || len(rn.Peers()) > 1 {
		return nil
	}
	if err := reg.Join(context.Background(), c.Join, c.self()); err != nil {
		return fmt.Errorf("node %s cannot join: %w", c.ID, err)
	}
	return nil
}

// startRegistry starts the node's registry goroutines: the seed
// registration (--peers only) and the periodic refresh.
func (n *node) startRegistry() {
	ctx, cancel := context.WithCancel(context.Background())
	n.stopBackground = cancel
	log := n.cfg.Logger.With("node", n.cfg.ID)
	if len(n.cfg.Join) == 0 {
		n.bg.Add(1)
		go func() {
			defer n.bg.Done()
			if err := n.nodes.RegisterSeeds(ctx, n.cfg.Peers); err != nil && ctx.Err() == nil {
				log.Warn("registering the seed list in the node registry failed", "err", err)
			}
		}()
	}
	self := n.cfg.self()
	first, warned := true, false
	check := func(list *ledgerpb.NodeList) {
		err := registry.SelfState(list, self)
		switch {
		case errors.Is(err, registry.ErrNodeRemoved) && first:
			n.fatal <- err
		case err != nil && len(list.Nodes) > 0 && !warned:
			log.Warn("this node's registry entry is not right: if it was removed, stop it", "err", err)
			warned = true
		case err == nil:
			warned = false
		}
		first = false
	}
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		n.nodes.Run(ctx, registry.RefreshInterval, log, check)
	}()
}
