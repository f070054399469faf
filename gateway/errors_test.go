// This file proves the error table: every FSM rejection, routing failure
// and membership failure maps to the documented gRPC code and HTTP status,
// carries an ErrorInfo reason, and conflicts name the taken seats.
package gateway

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

func reasonOf(s *status.Status) string {
	for _, d := range s.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

func TestResultErrorTable(t *testing.T) {
	tests := []struct {
		code   ledgerpb.Code
		op     op
		reason string
		grpc   codes.Code
		http   int
	}{
		{ledgerpb.Code_CODE_INVALID_ARGUMENT, opOther, "INVALID_ARGUMENT", codes.InvalidArgument, 400},
		{ledgerpb.Code_CODE_UNKNOWN_SEAT, opOther, "UNKNOWN_SEAT", codes.InvalidArgument, 400},
		{ledgerpb.Code_CODE_SHOW_NOT_FOUND, opOther, "SHOW_NOT_FOUND", codes.NotFound, 404},
		{ledgerpb.Code_CODE_SHOW_EXISTS, opOther, "SHOW_EXISTS", codes.AlreadyExists, 409},
		{ledgerpb.Code_CODE_SEATS_TAKEN, opOther, "SEATS_TAKEN", codes.Aborted, 409},
		{ledgerpb.Code_CODE_HOLD_NOT_FOUND, opOther, "HOLD_NOT_FOUND", codes.NotFound, 404},
		{ledgerpb.Code_CODE_HOLD_NOT_FOUND, opConfirm, "HOLD_GONE", codes.NotFound, 410},
		{ledgerpb.Code_CODE_HOLD_EXPIRED, opConfirm, "HOLD_EXPIRED", codes.FailedPrecondition, 410},
		{ledgerpb.Code_CODE_HOLD_CANCELLED, opConfirm, "HOLD_CANCELLED", codes.FailedPrecondition, 410},
		{ledgerpb.Code_CODE_HOLD_CONFIRMED, opOther, "HOLD_CONFIRMED", codes.FailedPrecondition, 409},
		{ledgerpb.Code_CODE_NOT_HOLD_OWNER, opOther, "NOT_HOLD_OWNER", codes.PermissionDenied, 403},
		{ledgerpb.Code_CODE_REQUEST_ID_REUSED, opOther, "REQUEST_ID_REUSED", codes.AlreadyExists, 409},
		{ledgerpb.Code_CODE_REQUEST_EXPIRED, opOther, "REQUEST_EXPIRED", codes.FailedPrecondition, 422},
		{ledgerpb.Code_CODE_NODE_NOT_FOUND, opOther, "NODE_NOT_FOUND", codes.NotFound, 404},
		{ledgerpb.Code_CODE_NODE_REMOVED, opOther, "NODE_REMOVED", codes.FailedPrecondition, 409},
		{ledgerpb.Code_CODE_NODE_ADDRESS_TAKEN, opOther, "NODE_ADDRESS_TAKEN", codes.AlreadyExists, 409},
	}
	for _, tt := range tests {
		err := resultError(&ledgerpb.Result{Code: tt.code, Message: "m", Field: "f", SeatIds: []string{"A2"}}, tt.op)
		s := status.Convert(err)
		if got := reasonOf(s); got != tt.reason {
			t.Errorf("resultError(%v).reason = %q, want %q", tt.code, got, tt.reason)
		}
		if s.Code() != tt.grpc {
			t.Errorf("resultError(%v).code = %v, want %v", tt.code, s.Code(), tt.grpc)
		}
		if got := httpStatus(s); got != tt.http {
			t.Errorf("httpStatus(%v) = %d, want %d", tt.code, got, tt.http)
		}
	}
	if err := resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}, opOther); err != nil {
		t.Errorf("resultError(OK) = %v, want nil", err)
	}
	if s := status.Convert(resultError(&ledgerpb.Result{Code: ledgerpb.Code(999)}, opOther)); s.Code() != codes.Internal {
		t.Errorf("resultError(unknown code) = %v, want Internal", s.Code())
	}
}

func TestEveryCodeIsMapped(t *testing.T) {
	for c := range ledgerpb.Code_name {
		code := ledgerpb.Code(c)
		if code == ledgerpb.Code_CODE_UNSPECIFIED || code == ledgerpb.Code_CODE_OK {
			continue
		}
		s := status.Convert(resultError(&ledgerpb.Result{Code: code}, opOther))
		if s.Code() == codes.Internal {
			t.Errorf("Code %v has no entry in the error table", code)
		}
	}
}

func TestConflictNamesTakenSeats(t *testing.T) {
	s := status.Convert(resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_SEATS_TAKEN, SeatIds: []string{"A2"}}, opOther))
	for _, d := range s.Details() {
		if e, ok := d.(*ledgerpb.ErrorDetail); ok && fmt.Sprint(e.TakenSeatIds) == "[A2]" {
			return
		}
	}
	t.Errorf("SEATS_TAKEN details %v do not name A2", s.Details())
}

func TestRouteErrorTable(t *testing.T) {
	tests := []struct {
		err    error
		reason string
		http   int
	}{
		{raftnode.ErrNotLeader, "NOT_LEADER", http.StatusServiceUnavailable},
		{raftnode.ErrUnavailable, "UNAVAILABLE", http.StatusServiceUnavailable},
		{fmt.Errorf("x: %w", raftnode.ErrNoLeader), "UNAVAILABLE", http.StatusServiceUnavailable},
		{fmt.Errorf("x: %w", raftnode.ErrOutcomeUnknown), "OUTCOME_UNKNOWN", http.StatusServiceUnavailable},
		{shard.ErrShowNotFound, "SHOW_NOT_FOUND", http.StatusNotFound},
		{shard.ErrHoldNotFound, "HOLD_NOT_FOUND", http.StatusNotFound},
		{context.DeadlineExceeded, "DEADLINE_EXCEEDED", http.StatusGatewayTimeout},
	}
	for _, tt := range tests {
		s := status.Convert(routeError(tt.err))
		if got := reasonOf(s); got != tt.reason {
			t.Errorf("routeError(%v).reason = %q, want %q", tt.err, got, tt.reason)
		}
		if got := httpStatus(s); got != tt.http {
			t.Errorf("routeError(%v) HTTP = %d, want %d", tt.err, got, tt.http)
		}
	}
}

// A DropGroup refused because no leader confirmed the removal is a
// precondition the operator can act on (its message says how), and the
// raftnode message reaches the caller whole.
func TestMembershipErrorTable(t *testing.T) {
	tests := []struct {
		err    error
		reason string
		http   int
	}{
		{fmt.Errorf("%w: group 3: n2 did not answer", raftnode.ErrStillMember), "FAILED_PRECONDITION", http.StatusPreconditionFailed},
		{fmt.Errorf("%w: group 3", raftnode.ErrGroupHosted), "FAILED_PRECONDITION", http.StatusPreconditionFailed},
		{fmt.Errorf("%w: group 3 is not hosted here", raftnode.ErrUnknownGroup), "NOT_FOUND", http.StatusNotFound},
		{raftnode.ErrNotLeader, "NOT_LEADER", http.StatusServiceUnavailable},
		{raftnode.ErrNodeClosed, "UNAVAILABLE", http.StatusServiceUnavailable},
	}
	for _, tt := range tests {
		s := status.Convert(membershipError(tt.err))
		if got := reasonOf(s); got != tt.reason {
			t.Errorf("membershipError(%v).reason = %q, want %q", tt.err, got, tt.reason)
		}
		if got := httpStatus(s); got != tt.http {
			t.Errorf("membershipError(%v) HTTP = %d, want %d", tt.err, got, tt.http)
		}
		if tt.reason != "NOT_LEADER" && s.Message() != tt.err.Error() {
			t.Errorf("membershipError(%v) message = %q, want the error's own", tt.err, s.Message())
		}
	}
}
