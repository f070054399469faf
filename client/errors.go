package client

import (
	"google.golang.org/genproto/googleapis/rpc/errdetails"
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
