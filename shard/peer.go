package shard

import (
	"context"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// PeerServer serves forwarded work from other nodes. It acts only on this
// node's replicas and never forwards again: a node that is not the leader
// answers NOT_LEADER with its view of the leader, and the caller retries.
func (r *Router) PeerServer() ledgerpb.PeerServer { return peerServer{r: r} }

type peerServer struct {
	ledgerpb.UnimplementedPeerServer
	r *Router
}

func (p peerServer) Propose(ctx context.Context, req *ledgerpb.ProposeRequest) (*ledgerpb.ProposeResponse, error) {
	g, err := p.r.node.Group(req.GroupId)
	if err != nil {
		return &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER, Message: err.Error()}, nil
	}
	if req.Command == nil || req.Command.ClientId == "" || req.Command.GetBatch() != nil || req.Command.GetExpire() != nil {
		// Only client commands travel between nodes: leader-issued entries
		// are made by the leader itself.
		return &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID, Message: "only client commands may be forwarded"}, nil
	}
	res, err := g.Propose(ctx, req.Command)
	resp := &ledgerpb.ProposeResponse{Status: forwardStatus(err), Result: res, LeaderId: g.Leader()}
	if err != nil {
		resp.Message = err.Error()
	}
	return resp, nil
}

func (p peerServer) Read(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	g, err := p.r.node.Group(req.GroupId)
	if err != nil {
		if resp := p.r.knownNodes(req); resp != nil {
			return resp, nil // registry.go: what this node learned
		}
		return &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER, Message: err.Error()}, nil
	}
	if isBrowse(req.Kind) {
		resp := p.r.servePeerBrowse(ctx, g, req)
		if known := p.r.knownNodes(req); resp.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK && resp.LeaderId == "" && known != nil {
			// A catalog replica too stale to answer and no leader to send
			// the caller to: the registry this node learned is the best
			// answer a joining node can get.
			return known, nil
		}
		return resp, nil
	}
	resp, err := p.r.readLocal(ctx, g, req, true)
	if err != nil {
		return &ledgerpb.ReadResponse{Status: forwardStatus(err), Message: err.Error(), LeaderId: g.Leader()}, nil
	}
	resp.LeaderId = g.Leader()
	return resp, nil
}
