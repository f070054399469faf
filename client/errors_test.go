// This file proves that Reason and Detail read what a node puts in a
// failed call's status, and nothing from an error without one.
package client

import (
	"errors"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestReasonAndDetail(t *testing.T) {
	st, err := status.New(codes.Aborted, "seats [A1] are taken").WithDetails(
		&errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"},
		&ledgerpb.ErrorDetail{TakenSeatIds: []string{"A1"}, SuggestedSeatIds: []string{"B1"}})
	if err != nil {
		t.Fatal(err)
	}
	taken := st.Err()
	if got := Reason(taken); got != "SEATS_TAKEN" {
		t.Errorf("Reason = %q, want SEATS_TAKEN", got)
	}
	if d := Detail(taken); len(d.GetTakenSeatIds()) != 1 || d.GetSuggestedSeatIds()[0] != "B1" {
		t.Errorf("Detail = %v, want taken A1, suggested B1", d)
	}
	for _, e := range []error{errors.New("dial tcp: refused"), status.Error(codes.Unavailable, "no details"), nil} {
		if Reason(e) != "" || Detail(e) != nil {
			t.Errorf("Reason, Detail(%v) = %q, %v; want none", e, Reason(e), Detail(e))
		}
	}
}
