package shard

import "github.com/seatledger/seatledger/proto/ledgerpb"

// Routing is what a client needs to send each call to its show's group
// leader itself: the shard map, and per group the leader this node knows
// (its own replica's, or the last one a forward's answer named) with its
// gRPC address from the node registry. A group without a known leader has
// no leader in its route: the client sends its calls to any node, which
// forwards them.
func (r *Router) Routing() *ledgerpb.Routing {
	out := &ledgerpb.Routing{Groups: r.smap.Groups, ServedBy: r.node.ID()}
	for g := range r.smap.Groups {
		route := &ledgerpb.GroupRoute{GroupId: g}
		leader := ""
		if grp, err := r.node.Group(g); err == nil {
			leader = grp.Leader()
		} else {
			r.mu.Lock()
			leader = r.mu.hints[g]
			r.mu.Unlock()
		}
		if p, ok := r.node.Peer(leader); leader != "" && ok {
			route.LeaderId, route.LeaderGrpcAddr = leader, p.GRPCAddr
		}
		out.Routes = append(out.Routes, route)
	}
	return out
}
