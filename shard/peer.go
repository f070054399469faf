package shard

import (
	"context"
	"fmt"
	"sync"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
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

// ProposeBatch answers each request as Propose would. The commands of one
// group are proposed together (raftnode.Group.ProposeAll), so that they
// share one entry, and the groups concurrently; the call returns once
// every one has its answer.
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
	if n == 1 {
		resp.Responses[0] = p.propose(ctx, req.Requests[0]) // what Propose costs
		return resp, nil
	}
	groups := map[*raftnode.Group][]int{}
	for i, r := range req.Requests {
		g, refused := p.check(r)
		if refused != nil {
			resp.Responses[i] = refused
			continue
		}
		groups[g] = append(groups[g], i)
	}
	var wg sync.WaitGroup
	for g, idx := range groups {
		wg.Go(func() {
			cmds := make([]*ledgerpb.Command, len(idx))
			for k, i := range idx {
				cmds[k] = req.Requests[i].GetCommand()
			}
			results, errs := g.ProposeAll(ctx, cmds)
			leader := g.Leader()
			for k, i := range idx {
				resp.Responses[i] = proposeResponse(results[k], errs[k], leader)
			}
		})
	}
	wg.Wait()
	return resp, nil
}

// propose is one forwarded command alone.
func (p peerServer) propose(ctx context.Context, req *ledgerpb.ProposeRequest) *ledgerpb.ProposeResponse {
	g, refused := p.check(req)
	if refused != nil {
		return refused
	}
	res, err := g.Propose(ctx, req.GetCommand())
	return proposeResponse(res, err, g.Leader())
}

// check returns the group a forwarded command is for, or the answer that
// refuses it: a group not hosted here, or not a client command.
func (p peerServer) check(req *ledgerpb.ProposeRequest) (*raftnode.Group, *ledgerpb.ProposeResponse) {
	g, err := p.r.node.Group(req.GetGroupId())
	if err != nil {
		return nil, &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER, Message: err.Error()}
	}
	cmd := req.GetCommand()
	if cmd == nil || cmd.ClientId == "" || cmd.GetBatch() != nil || cmd.GetExpire() != nil || cmd.GetWebhookCursor() != nil {
		// Only client commands travel between nodes: leader-issued entries
		// are made by the leader itself.
		return nil, &ledgerpb.ProposeResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID, Message: "only client commands may be forwarded"}
	}
	return g, nil
}

// proposeResponse is the answer to a forwarded command that was proposed.
func proposeResponse(res *ledgerpb.Result, err error, leader string) *ledgerpb.ProposeResponse {
	resp := &ledgerpb.ProposeResponse{Status: forwardStatus(err), Result: res, LeaderId: leader}
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
