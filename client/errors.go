package client

import (
	"context"
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Reason returns the reason a seatledger node gave for a failed call (its
// google.rpc.ErrorInfo: "SEATS_TAKEN", "NOT_LEADER", …; docs/HTTP-API.md
// lists them), "" for an error that carries none (a transport failure).
func Reason(err error) string {
	st, ok := status.FromError(err)
	if !ok {
		return ""
	}
	for _, d := range st.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// Detail returns the seatledger ErrorDetail of a failed call (the taken
// seats and suggested ones, the leader hint, limits), nil if it has none.
func Detail(err error) *ledgerpb.ErrorDetail {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	for _, d := range st.Details() {
		if ed, ok := d.(*ledgerpb.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

// The package reads the statuses of nodes' answers here only; gateway/errors.go
// is where nodes make them.

// callError is the status a node answered for one call of a Batch (nil
// for OK), as the call alone would have returned it.
func callError(s *spb.Status) error { return status.FromProto(s).Err() }

// endedCallError is the error of a batched call whose context ended
// before its Batch answered: the status grpc-go returns for a unary call
// whose context ended (Canceled or DeadlineExceeded), so that a batched
// call fails exactly as the call alone would.
func endedCallError(ctx context.Context) error { return status.FromContextError(ctx.Err()).Err() }

// unimplemented reports whether a node answered that it has no such
// method (a node without Batch).
func unimplemented(err error) bool { return status.Code(err) == codes.Unimplemented }

// ErrBadReply is a Batch answer that does not fit the calls sent: another
// count of results, or a result of another kind than the call. A node
// that answers so has a bug; the client makes no status of its own for it.
var ErrBadReply = errors.New("client: a batch's answer does not fit its calls")

// Unavailable reports whether a node answered that it cannot serve the
// call now (it knows no leader, or is draining): another node may.
func Unavailable(err error) bool { return status.Code(err) == codes.Unavailable }

// NotFound reports whether a node answered that what the call names does
// not exist.
func NotFound(err error) bool { return status.Code(err) == codes.NotFound }

// Gone reports whether a call or stream ended because the node could not
// serve it or went away: unavailable, out of resources, out of time,
// cancelled, or a transport failure (a stream that ended without a status
// reads Unknown). Another node may serve it.
func Gone(err error) bool {
	if errors.Is(err, ErrBadReply) {
		return false // the node answered, wrongly
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.Canceled, codes.Unknown:
		return true
	}
	return false
}
