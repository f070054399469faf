package shard

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// The node registry (fsm/node.go) lives in the catalog group. Every node
// learns it with a bounded-stale read of that group, from its own replica
// when it hosts one and else from another node (forwarded as browse reads
// are), every RegistryRefreshInterval, and hands the live nodes to its peer
// table (raftnode/peers.go): raft's dials, AddVoter, the balancer, the
// router's forwards and Status all use it. A node that does not host the
// catalog group (or whose replica cannot serve and knows no leader) answers
// registry reads with the registry it last learned, so a node joining the
// cluster can learn it from any node it is given.

// Registry timing.
const (
	// RegistryRefreshInterval is how often a node rereads the registry: a
	// node added or moved is dialled at its registered address within it.
	RegistryRefreshInterval = time.Second
	// registryReadTimeout bounds one registry read.
	registryReadTimeout = 3 * time.Second
	// joinTimeoutDefault bounds how long a joining node looks for a node
	// that gives it the registry.
	joinTimeoutDefault = 30 * time.Second
	// registryFailWarn is how long registry reads fail before a warning.
	registryFailWarn = 10 * time.Second
)

// Registry errors.
var (
	// ErrNotRegistered: the registry does not list this node (run seatctl
	// node add first), or lists it with other addresses.
	ErrNotRegistered = errors.New("shard: node is not registered")
	// ErrNodeRemoved: the registry lists this node as REMOVED: its id is
	// retired and it must not serve.
	ErrNodeRemoved = errors.New("shard: node was removed from the cluster")
)

// Nodes reads the registry from the catalog group within the browse
// staleness bound.
func (r *Router) Nodes(ctx context.Context) (*ledgerpb.NodeList, error) {
	resp, err := r.browse(ctx, &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_NODES})
	if err != nil {
		return nil, err
	}
	if resp.NodeList == nil {
		return nil, fmt.Errorf("%w: registry read without a node list", raftnode.ErrUnavailable)
	}
	return resp.NodeList, nil
}

// RefreshNodes reads the registry and, unless it is older than the one this
// node knows, makes it this node's peer table. It returns the registry it
// read.
func (r *Router) RefreshNodes(ctx context.Context) (*ledgerpb.NodeList, error) {
	ctx, cancel := context.WithTimeout(ctx, registryReadTimeout)
	defer cancel()
	list, err := r.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	return list, r.learn(list)
}

// learn takes a registry into the peer table unless an older one than the
// one known (a lagging node's cached answer).
func (r *Router) learn(list *ledgerpb.NodeList) error {
	r.mu.Lock()
	if cur := r.mu.registry; cur != nil && list.Revision < cur.Revision {
		r.mu.Unlock()
		return nil
	}
	r.mu.registry = list
	r.mu.Unlock()
	_, err := r.node.SetPeers(livePeers(list))
	return err
}

// KnownNodes is the registry as this node last learned it, or nil.
func (r *Router) KnownNodes() *ledgerpb.NodeList {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.registry
}

// livePeers lists the registry's ACTIVE and DRAINING nodes.
func livePeers(list *ledgerpb.NodeList) []raftnode.Peer {
	var out []raftnode.Peer
	for _, n := range list.GetNodes() {
		switch n.State {
		case ledgerpb.NodeState_NODE_STATE_ACTIVE, ledgerpb.NodeState_NODE_STATE_DRAINING:
			out = append(out, raftnode.Peer{ID: n.NodeId, RaftAddr: n.RaftAddr, GRPCAddr: n.GrpcAddr,
				Draining: n.State == ledgerpb.NodeState_NODE_STATE_DRAINING})
		}
	}
	return out
}

// RunRegistry refreshes the registry every interval until ctx ends; check,
// if set, sees every registry read (seatd stops a node the registry says
// was removed). Reads failing for registryFailWarn are logged once (a
// starting cluster has no catalog leader for a moment: no warning for that).
func (r *Router) RunRegistry(ctx context.Context, interval time.Duration, log *slog.Logger, check func(*ledgerpb.NodeList)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var failingSince time.Time
	warned := false
	for {
		list, err := r.RefreshNodes(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if !warned && time.Since(failingSince) >= registryFailWarn {
				log.Warn("cannot read the node registry; keeping the peer table", "err", err, "since", failingSince)
				warned = true
			}
		case err == nil:
			if warned {
				log.Info("node registry read again", "revision", list.Revision)
			}
			failingSince, warned = time.Time{}, false
			if check != nil {
				check(list)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SelfState checks this node's record in a registry: ErrNodeRemoved if it
// was removed, ErrNotRegistered if absent or registered at other addresses
// than self's. An empty registry (not written yet) is not an error.
func SelfState(list *ledgerpb.NodeList, self raftnode.Peer) error {
	if len(list.GetNodes()) == 0 {
		return nil
	}
	for _, n := range list.Nodes {
		if n.NodeId != self.ID {
			continue
		}
		switch {
		case n.State == ledgerpb.NodeState_NODE_STATE_REMOVED:
			return fmt.Errorf("%w: %s was removed at revision %d: its id is retired (register the machine under a new id)", ErrNodeRemoved, self.ID, n.Revision)
		case n.RaftAddr != self.RaftAddr || n.GrpcAddr != self.GRPCAddr:
			return fmt.Errorf("%w: %s is registered with raft %s, gRPC %s but runs with raft %s, gRPC %s (seatctl node add %s --raft %s --grpc %s registers the new ones)",
				ErrNotRegistered, self.ID, n.RaftAddr, n.GrpcAddr, self.RaftAddr, self.GRPCAddr, self.ID, self.RaftAddr, self.GRPCAddr)
		}
		return nil
	}
	return fmt.Errorf("%w: %s is not in the registry (seatctl node add %s --raft %s --grpc %s registers it)",
		ErrNotRegistered, self.ID, self.ID, self.RaftAddr, self.GRPCAddr)
}

// Join learns the registry from one of addrs (gRPC addresses of nodes of a
// running cluster) for a node that joins it: the registry must list self,
// ACTIVE or DRAINING, at self's addresses. It retries until ctx ends (at
// most joinTimeoutDefault) while no node answers; a registry that does not
// list self is retried too (the answering node may not have learned the
// registration yet), and reported when time is up.
func (r *Router) Join(ctx context.Context, addrs []string, self raftnode.Peer) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeoutDefault)
	defer cancel()
	var last error
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, time.Second) {
		for _, addr := range addrs {
			list, err := r.nodesAt(ctx, addr)
			if err == nil && len(list.GetNodes()) == 0 {
				err = fmt.Errorf("%s has no registry yet", addr)
			}
			if err == nil {
				err = SelfState(list, self)
				if err == nil {
					return r.learn(list)
				}
				if errors.Is(err, ErrNodeRemoved) {
					return err
				}
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("join through %v: %w", addrs, last)
		case <-time.After(backoff):
		}
	}
}

// nodesAt asks the node at a gRPC address for the registry.
func (r *Router) nodesAt(ctx context.Context, addr string) (*ledgerpb.NodeList, error) {
	c, err := r.connAddr(addr, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, registryReadTimeout)
	defer cancel()
	resp, err := ledgerpb.NewPeerClient(c).Read(ctx, &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(),
		Kind: ledgerpb.ReadKind_READ_KIND_NODES, Hops: 1})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if err := forwardErr(resp.Status, resp.Message); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if resp.NodeList == nil {
		return nil, fmt.Errorf("%s answered without a registry", addr)
	}
	return resp.NodeList, nil
}

// RegisterSeeds registers the seed list (--peers) as a seed AddNode: ids
// the registry has never seen are added, nothing else changes. Each node
// does it as it starts, so a new cluster's registry fills itself and a
// cluster from before the registry gets one. It retries until ctx ends.
func (r *Router) RegisterSeeds(ctx context.Context, seeds []raftnode.Peer) error {
	add := &ledgerpb.AddNodeCmd{Seed: true}
	for _, p := range seeds {
		add.Nodes = append(add.Nodes, &ledgerpb.NodeRecord{NodeId: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: p.GRPCAddr})
	}
	if fe := fsm.ValidateNodeCmd(&ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_AddNode{AddNode: add}}); fe != nil {
		return fmt.Errorf("shard: seed list: %w", fe)
	}
	cmd := &ledgerpb.Command{ClientId: "node:" + r.node.ID(), RequestId: "seed-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Op: &ledgerpb.Command_Node{Node: &ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_AddNode{AddNode: add}}}}
	for {
		res, err := r.ProposeCatalog(ctx, cmd)
		if err == nil {
			if res.Code != ledgerpb.Code_CODE_OK {
				return fmt.Errorf("shard: register seed list: %v %s", res.Code, res.Message)
			}
			return nil
		}
		// No catalog leader yet (a cluster whose nodes are still
		// starting), or a peer that refused: try again, unhurried.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(RegistryRefreshInterval):
		}
	}
}

// knownNodes answers a forwarded registry read of the catalog group that
// this node's replica cannot serve (it hosts none, or its replica is too
// stale and knows no leader) with the registry it last learned; nil for
// other reads or before it learned one.
func (r *Router) knownNodes(req *ledgerpb.ReadRequest) *ledgerpb.ReadResponse {
	if req.Kind != ledgerpb.ReadKind_READ_KIND_NODES || req.GroupId != r.smap.CatalogGroup() {
		return nil
	}
	list := r.KnownNodes()
	if list == nil {
		return nil
	}
	return &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK, Code: ledgerpb.Code_CODE_OK, NodeList: list}
}
