package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/registry"
)

// The node registry's Admin calls (admin.proto). They change the registry
// only, through the catalog group's log; moving replicas on or off a node
// is the membership calls' work (seatctl node remove --drain and group
// rebalance run them).

// registryClient is the client_id of registry commands the Admin API makes.
const registryClient = "admin"

// ListNodes reads the registry (bounded stale, as browse reads).
func (a *Admin) ListNodes(ctx context.Context, _ *ledgerpb.ListNodesRequest) (*ledgerpb.NodeList, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeoutDefault)
	defer cancel()
	list, err := a.router.Nodes(ctx)
	if err != nil {
		return nil, routeError(err)
	}
	return list, nil
}

// AddNode registers a node, or new addresses of one, or ends its drain.
func (a *Admin) AddNode(ctx context.Context, req *ledgerpb.AddNodeRequest) (*ledgerpb.NodeResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	if fe := fsm.ValidateNode("", req.NodeId, req.RaftAddr, req.GrpcAddr); fe != nil {
		return nil, fieldError(fe)
	}
	rec := &ledgerpb.NodeRecord{NodeId: req.NodeId, RaftAddr: req.RaftAddr, GrpcAddr: req.GrpcAddr}
	op := &ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_AddNode{AddNode: &ledgerpb.AddNodeCmd{Nodes: []*ledgerpb.NodeRecord{rec}}}}
	res, err := a.proposeNode(ctx, op)
	if err != nil {
		return nil, err
	}
	rec.State = ledgerpb.NodeState_NODE_STATE_ACTIVE
	return &ledgerpb.NodeResponse{Node: rec, Revision: res.Revision}, nil
}

// DrainNode marks a node DRAINING.
func (a *Admin) DrainNode(ctx context.Context, req *ledgerpb.NodeRequest) (*ledgerpb.NodeResponse, error) {
	return a.setNodeState(ctx, req, ledgerpb.NodeState_NODE_STATE_DRAINING)
}

// RemoveNode marks a node REMOVED; its id is retired.
func (a *Admin) RemoveNode(ctx context.Context, req *ledgerpb.NodeRequest) (*ledgerpb.NodeResponse, error) {
	return a.setNodeState(ctx, req, ledgerpb.NodeState_NODE_STATE_REMOVED)
}

func (a *Admin) setNodeState(ctx context.Context, req *ledgerpb.NodeRequest, st ledgerpb.NodeState) (*ledgerpb.NodeResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	op := &ledgerpb.NodeCmd{Op: &ledgerpb.NodeCmd_SetState{SetState: &ledgerpb.SetNodeStateCmd{NodeId: req.NodeId, State: st}}}
	if fe := fsm.ValidateNodeCmd(op); fe != nil {
		return nil, fieldError(fe)
	}
	res, err := a.proposeNode(ctx, op)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.NodeResponse{Node: &ledgerpb.NodeRecord{NodeId: req.NodeId, State: st}, Revision: res.Revision}, nil
}

// proposeNode applies a registry command in the catalog group under a fresh
// request id: the commands are idempotent by their meaning (registering the
// same addresses, asking for the state a node has), so a caller's retry is
// a new request, and an old answer is never replayed for a node whose
// state changed since. Then this node rereads the registry, so that its
// own peer table has the change at once.
func (a *Admin) proposeNode(ctx context.Context, op *ledgerpb.NodeCmd) (*ledgerpb.Result, error) {
	var id [12]byte
	rand.Read(id[:])
	cmd := &ledgerpb.Command{ClientId: registryClient, RequestId: "node-" + hex.EncodeToString(id[:]), Op: &ledgerpb.Command_Node{Node: op}}
	pctx, cancel := context.WithTimeout(ctx, requestTimeoutDefault)
	defer cancel()
	res, err := a.router.ProposeCatalog(pctx, cmd)
	if err != nil {
		return nil, routeError(err)
	}
	if err := resultError(res, opOther); err != nil {
		return nil, err
	}
	// A failed reread is no failure of the call: the change is committed,
	// and the periodic refresh catches up.
	a.refreshNodes(ctx)
	return res, nil
}

// withPeer runs f, and once more after rereading the registry if f failed
// because this node's peer table lacks a node: a node registered moments
// ago (seatctl node add, then a move onto it) is known at once.
func (a *Admin) withPeer(ctx context.Context, f func() error) error {
	err := f()
	if !errors.Is(err, raftnode.ErrUnknownPeer) {
		return err
	}
	if _, rerr := a.refreshNodes(ctx); rerr != nil {
		return fmt.Errorf("%w (and rereading the registry failed: %v)", err, rerr)
	}
	return f()
}

// SetRegistry gives the Admin API the node's registry, which it rereads
// after a change so that this node's peer table has it at once; call
// before serving.
func (s *Server) SetRegistry(r *registry.Registry) { s.registry = r }

// refreshNodes rereads the registry into this node's peer table.
func (a *Admin) refreshNodes(ctx context.Context) (*ledgerpb.NodeList, error) {
	if a.registry == nil {
		return nil, errNoRegistry
	}
	return a.registry.Refresh(ctx)
}

// errNoRegistry: an Admin served without SetRegistry (a test's) cannot
// reread the registry.
var errNoRegistry = errors.New("gateway: no registry to reread")

// nodeState is the registry state of a peer table entry.
func nodeState(p raftnode.Peer) ledgerpb.NodeState {
	if p.Draining {
		return ledgerpb.NodeState_NODE_STATE_DRAINING
	}
	return ledgerpb.NodeState_NODE_STATE_ACTIVE
}
