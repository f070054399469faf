package gateway

import (
	"context"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// GetRouting returns the shard map and the group leaders this node knows,
// for clients that route by themselves (client/). It is public: it tells
// nothing a client of any node could not learn from leader hints.
func (s *Server) GetRouting(context.Context, *ledgerpb.GetRoutingRequest) (*ledgerpb.Routing, error) {
	return s.router.Routing(), nil
}
