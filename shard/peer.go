package shard

import (
	"context"
	"fmt"
	"sync"

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
	return p.propose(ctx, req), nil
}

// ProposeBatch answers each request as Propose would. The requests are
// proposed concurrently, so that those of one group ride the same
// group-commit entries (raftnode's proposer batches what is queued
// together); the call returns once every one has its answer.
func (p peerServer) ProposeBatch(ctx context.Context, req *ledgerpb.ProposeBatchRequest) (*ledgerpb.ProposeBatchResponse, error) {
	n := len(req.Requests)
	if n > forwardBatchMax {
		return &ledgerpb.ProposeBatchResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID,
			Message: fmt.Sprintf("a batch of %d commands: at most %d may be forwarded in one call", n, forwardBatchMax)}, nil
	}
	resp := &ledgerpb.ProposeBatchResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK,
		Responses: make([]*ledgerpb.ProposeResponse, n)}
	if n == 0 {
		return resp, nil
	}
	var wg sync.WaitGroup
	for i, r := range req.Requests[:n-1] {
		wg.Go(func() { resp.Responses[i] = p.propose(ctx, r) })
	}
	// The last on this goroutine: one goroutine fewer, and a batch of one
	// costs what Propose costs.
	resp.Responses[n-1] = p.propose(ctx, req.Requests[n-1])
	wg.Wait()
	return resp, nil
}

// propose is one forwarded command, whether it came alone or in a batch.
func (p peerServer) propose(ctx context.Context, req *ledgerpb.ProposeRequest) *ledgerpb.ProposeResponse {
	g, err := p.r.node.Group(req.GetGroupId())
	if err != nil {
		return &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER, Message: err.Error()}
	}
	cmd := req.GetCommand()
	if cmd == nil || cmd.ClientId == "" || cmd.GetBatch() != nil || cmd.GetExpire() != nil || cmd.GetWebhookCursor() != nil {
		// Only client commands travel between nodes: leader-issued entries
		// are made by the leader itself.
		return &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID, Message: "only client commands may be forwarded"}
	}
	res, err := g.Propose(ctx, cmd)
	resp := &ledgerpb.ProposeResponse{Status: forwardStatus(err), Result: res, LeaderId: g.Leader()}
	if err != nil {
		resp.Message = err.Error()
	}
	return resp
}

func (p peerServer) Read(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	g, err := p.r.node.Group(req.GroupId)
	if err != nil {
		if resp := p.r.knownNodes(req); resp != nil {
			return resp, nil // what this node learned (SetKnownNodes)
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
