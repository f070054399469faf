package client

import (
	"slices"
	"strings"

	"google.golang.org/grpc"
)

// When a call that a node refused is sent to another node (Invoke): the
// budget, which calls are safe to repeat, and which node is next.

// attemptsMax bounds the nodes one call is sent to: enough to step past a
// node cut off from its group and one that is shutting down, few enough
// that a cluster without a leader fails the call quickly; the caller's
// own retry (with the same request_id) covers an election.
const attemptsMax = 3

// retrySafe reports whether a call that failed with err (Unavailable) may
// be sent again to another node. NOT_LEADER and UNAVAILABLE say nothing was
// appended, so any call may; any other failure (OUTCOME_UNKNOWN, a broken
// connection) may have taken effect, so only a call that is exactly-once
// (a write with a request_id: the ledger answers a repeat with the first
// result) or a read may.
func retrySafe(method string, args any, err error) bool {
	switch Reason(err) {
	case "NOT_LEADER", "UNAVAILABLE":
		return true
	}
	if r, ok := args.(interface{ GetRequestId() string }); ok && r.GetRequestId() != "" {
		return true
	}
	return isRead(method)
}

// isRead reports whether a full method name ("/pkg.Service/GetSeatMap")
// names a read: the APIs name every read Get…, List… or Search.
func isRead(method string) bool {
	name := method[strings.LastIndexByte(method, '/')+1:]
	return strings.HasPrefix(name, "Get") || strings.HasPrefix(name, "List") || name == "Search"
}

// untried returns a seed's connection that is not in tried, taking the
// seeds in round-robin order, or nil when every seed was tried.
func (c *Client) untried(tried []*grpc.ClientConn) *grpc.ClientConn {
	for range c.seeds {
		if cc := c.seed(); !slices.Contains(tried, cc) {
			return cc
		}
	}
	return nil
}
