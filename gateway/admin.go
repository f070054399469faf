package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/internal/buildinfo"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/registry"
	"github.com/seatledger/seatledger/shard"
)

// Admin implements ledgerpb.AdminServer over this node's replicas.
// Every call requires the admin credential (auth.go).
type Admin struct {
	ledgerpb.UnimplementedAdminServer
	router *shard.Router
	auth   *Auth
	// registry is reread after a change; nil rereads nothing (nodes.go).
	registry *registry.Registry
}

// NewAdmin serves the Admin API for router's node.
func NewAdmin(router *shard.Router) *Admin { return &Admin{router: router} }

// Status reports this node's peers and the groups it hosts.
func (a *Admin) Status(ctx context.Context, req *ledgerpb.StatusRequest) (*ledgerpb.StatusResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	n := a.router.Node()
	resp := &ledgerpb.StatusResponse{NodeId: n.ID(), Version: buildinfo.Get().Version}
	for _, p := range n.Peers() {
		resp.Nodes = append(resp.Nodes, &ledgerpb.NodeInfo{Id: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: p.GRPCAddr, State: nodeState(p)})
	}
	for _, g := range n.Groups() {
		gs, err := a.groupStatus(g.ID(), req.Digests)
		if err != nil {
			return nil, newStatus("INTERNAL", err.Error())
		}
		resp.Groups = append(resp.Groups, gs)
	}
	return resp, nil
}

func (a *Admin) groupStatus(id uint32, digest bool) (*ledgerpb.GroupStatus, error) {
	g, err := a.router.Node().Group(id)
	if err != nil {
		return nil, err
	}
	lo, hi := a.router.Map().Range(id)
	st := g.Status()
	gs := &ledgerpb.GroupStatus{Group: id, RangeStart: lo, RangeEnd: hi, State: st.State,
		LeaderId: st.Leader, Term: st.Term, LastIndex: st.LastIndex,
		CommitIndex: st.CommitIndex, AppliedIndex: g.Machine().Applied(), ClockMs: g.Machine().Clock()}
	if reps, err := g.Replicas(); err == nil {
		gs.Replicas = reps
	}
	if digest {
		d, err := g.Machine().Digest()
		if err != nil {
			return nil, fmt.Errorf("group %d: %w", id, err)
		}
		gs.Digest, gs.DigestIndex, gs.ClockMs = hex.EncodeToString(d.Sum[:]), d.Applied, d.Clock
	}
	return gs, nil
}

// TransferLeader hands a group's leadership to another replica. It must be
// called on the node that leads the group.
func (a *Admin) TransferLeader(ctx context.Context, req *ledgerpb.TransferLeaderRequest) (*ledgerpb.TransferLeaderResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	g, err := a.router.Node().Group(req.Group)
	if err != nil {
		return nil, fieldError(&fsm.FieldError{Field: "group", Message: fmt.Sprintf("this node hosts no group %d", req.Group)})
	}
	if !g.IsLeader() {
		return nil, notLeaderError(g.Leader())
	}
	if req.ToNode != "" && a.router.RaftAddr(req.ToNode) == "" {
		// Registered moments ago? Reread the registry once.
		if _, err := a.refreshNodes(ctx); err != nil || a.router.RaftAddr(req.ToNode) == "" {
			return nil, fieldError(&fsm.FieldError{Field: "to_node", Message: fmt.Sprintf("no node %q", req.ToNode)})
		}
	}
	if err := g.TransferLeadership(req.ToNode); err != nil {
		if errors.Is(err, raftnode.ErrNotLeader) {
			return nil, notLeaderError(g.Leader())
		}
		return nil, newStatus("UNAVAILABLE", fmt.Sprintf("leadership transfer of group %d: %v", req.Group, err))
	}
	return &ledgerpb.TransferLeaderResponse{LeaderId: g.Leader()}, nil
}

// HostGroup starts an empty replica of a group on this node.
func (a *Admin) HostGroup(ctx context.Context, req *ledgerpb.GroupRequest) (*ledgerpb.MembershipResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	if err := a.router.Node().HostGroup(req.Group); err != nil {
		return nil, membershipError(err)
	}
	return a.membership(req.Group), nil
}

// DropGroup stops and deletes this node's replica of a group; without force
// only once the group's leader confirms that its committed configuration
// omits the replica (raftnode.Node.DropGroup).
func (a *Admin) DropGroup(ctx context.Context, req *ledgerpb.GroupRequest) (*ledgerpb.MembershipResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	if err := a.router.Node().DropGroup(ctx, req.Group, req.Force); err != nil {
		return nil, membershipError(err)
	}
	return &ledgerpb.MembershipResponse{}, nil
}

// AddVoter adds a node to a group; this node must lead it.
func (a *Admin) AddVoter(ctx context.Context, req *ledgerpb.VoterRequest) (*ledgerpb.MembershipResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	return a.changeVoters(req, func(g *raftnode.Group) error {
		return a.withPeer(ctx, func() error { return g.AddVoter(ctx, req.Node) })
	})
}

// RemoveVoter removes a node from a group; this node must lead it.
func (a *Admin) RemoveVoter(ctx context.Context, req *ledgerpb.VoterRequest) (*ledgerpb.MembershipResponse, error) {
	if err := a.auth.admin(ctx); err != nil {
		return nil, err
	}
	return a.changeVoters(req, func(g *raftnode.Group) error { return g.RemoveVoter(ctx, req.Node) })
}

func (a *Admin) changeVoters(req *ledgerpb.VoterRequest, change func(*raftnode.Group) error) (*ledgerpb.MembershipResponse, error) {
	g, err := a.router.Node().Group(req.Group)
	if err != nil {
		return nil, membershipError(err)
	}
	if !g.IsLeader() {
		return nil, notLeaderError(g.Leader())
	}
	if err := change(g); err != nil {
		return nil, membershipError(err)
	}
	return a.membership(req.Group), nil
}

func (a *Admin) membership(group uint32) *ledgerpb.MembershipResponse {
	resp := &ledgerpb.MembershipResponse{}
	if g, err := a.router.Node().Group(group); err == nil {
		resp.Replicas, _ = g.Replicas()
	}
	return resp
}
