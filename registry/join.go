package registry

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

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
func (r *Registry) Join(ctx context.Context, addrs []string, self raftnode.Peer) error {
	ctx, cancel := context.WithTimeout(ctx, joinTimeoutDefault)
	defer cancel()
	var last error
	for backoff := joinBackoffMin; ; backoff = min(2*backoff, time.Second) {
		for _, addr := range addrs {
			list, err := r.router.NodesAt(ctx, addr)
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

// RegisterSeeds registers the seed list (--peers) as a seed AddNode: ids
// the registry has never seen are added, nothing else changes. Each node
// does it as it starts, so a new cluster's registry fills itself and a
// cluster from before the registry gets one. It retries until ctx ends.
func (r *Registry) RegisterSeeds(ctx context.Context, seeds []raftnode.Peer) error {
	add := &ledgerpb.AddNodeCmd{Seed: true}
	for _, p := range seeds {
		add.Nodes = append(add.Nodes, &ledgerpb.NodeRecord{NodeId: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: p.GRPCAddr})
	}
	if fe := fsm.ValidateNodeCmd(&ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_AddNode{AddNode: add}}); fe != nil {
		return fmt.Errorf("registry: seed list: %w", fe)
	}
	cmd := &ledgerpb.Command{ClientId: "node:" + r.router.Node().ID(), RequestId: "seed-" + strconv.FormatInt(time.Now().UnixNano(), 36),
		Op: &ledgerpb.Command_Node{Node: &ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_AddNode{AddNode: add}}}}
	for {
		res, err := r.router.ProposeCatalog(ctx, cmd)
		if err == nil {
			if res.Code != ledgerpb.Code_CODE_OK {
				return fmt.Errorf("registry: register seed list: %v %s", res.Code, res.Message)
			}
			return nil
		}
		// No catalog leader yet (a cluster whose nodes are still
		// starting), or a peer that refused: try again, unhurried.
		select {
		case <-ctx.Done():
			return err
		case <-time.After(RefreshInterval):
		}
	}
}
