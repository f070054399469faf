// This file fuzzes what Booking.Batch does with a request before any call
// runs: whatever bytes decode as a BatchRequest, checkBatch either refuses
// it with INVALID_ARGUMENT or accepts a batch of 1..BatchCallsMax calls
// within batchBytesMax, each of which handlers.of turns into its unary
// request, method and handler without panicking.
package gateway

import (
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func FuzzCheckBatch(f *testing.F) {
	for _, req := range []*ledgerpb.BatchRequest{
		{},
		{Calls: []*ledgerpb.BatchCall{holdCall("s", "c", "r", "A1")}},
		{Calls: []*ledgerpb.BatchCall{{}, holdCall("s", "c", "r", "A1")}},
		{Calls: []*ledgerpb.BatchCall{
			{Call: &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: "s"}}},
			{Call: &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{ShowId: "s"}}},
			{Call: &ledgerpb.BatchCall_Extend{Extend: &ledgerpb.ExtendRequest{ShowId: "s"}}, FirstSentAtMs: -1},
			{Call: &ledgerpb.BatchCall_Refund{Refund: &ledgerpb.RefundRequest{ShowId: "s"}}, FirstSentAtMs: 1 << 62},
		}},
	} {
		b, err := proto.Marshal(req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x0a, 0x00, 0x0a, 0x00})
	s := &Server{}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := &ledgerpb.BatchRequest{}
		if proto.Unmarshal(data, req) != nil {
			return
		}
		if err := checkBatch(req); err != nil {
			if status.Code(err) != codes.InvalidArgument {
				t.Fatalf("checkBatch = %v, want InvalidArgument", err)
			}
			return
		}
		if n := len(req.Calls); n < 1 || n > BatchCallsMax || proto.Size(req) > batchBytesMax {
			t.Fatalf("checkBatch accepted %d calls of %d bytes", n, proto.Size(req))
		}
		hs := s.handlers(nil)
		for i, c := range req.Calls {
			r, info, h := hs.of(c)
			if r == nil || info == nil || h == nil {
				t.Fatalf("handlers.of(calls[%d] %v) = %v, %v, %v", i, c, r, info, h)
			}
		}
	})
}
