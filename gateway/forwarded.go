package gateway

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// ForwardedKey is the response header (gRPC metadata; over HTTP
// Grpc-Metadata-Seatledger-Forwarded) of a write this node forwarded, or
// a Batch one of whose commands it forwarded: this node does not lead the
// command's group, so the caller's routing is stale. The Go client
// (client/) reads its routing table afresh when it sees it, instead of at
// its next background refresh; a leadership moved during a burst (the
// balancer's hand-over, a node back from a restart) otherwise had every
// call of the group forwarded, a hop that costs both nodes, for up to that
// refresh's 2 s.
const ForwardedKey = "seatledger-forwarded"

// noteForwarded sets ForwardedKey if this node does not lead the group of
// one of shows: the commands for it are forwarded.
func (s *Server) noteForwarded(ctx context.Context, shows ...string) {
	for _, show := range shows {
		if !s.router.Leads(show) {
			_ = grpc.SetHeader(ctx, metadata.Pairs(ForwardedKey, "1")) // no stream (an in-process call): no one to tell
			return
		}
	}
}
