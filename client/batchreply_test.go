// This file holds the raw decoding of a Batch's answer to protobuf's own:
// for any bytes protobuf decodes as a BatchResponse, parse finds as many
// results, and answer gives each caller what merging the decoded result
// into its reply gave, or the same status.
package client

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// randomBatchResponse is a BatchResponse of every result kind, some with
// their fields set, some empty.
func randomBatchResponse(r *rand.Rand) *ledgerpb.BatchResponse {
	resp := &ledgerpb.BatchResponse{}
	for range r.IntN(8) {
		var res ledgerpb.BatchResult
		switch r.IntN(7) {
		case 0:
			res.Result = &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{HoldId: "h1-2-3", SeatIds: []string{"A1", "A2"}[:r.IntN(3)],
				ExpiresAt: timestamppb.New(time.UnixMilli(r.Int64N(1e12))), Revision: r.Uint64(), HoldToken: "tok", AmountMinor: r.Int64N(1000), Currency: "EUR"}}
		case 1:
			res.Result = &ledgerpb.BatchResult_Confirm{Confirm: &ledgerpb.ConfirmResponse{HoldId: "h9", SeatIds: []string{"B7"}}}
		case 2:
			res.Result = &ledgerpb.BatchResult_Release{Release: &ledgerpb.ReleaseResponse{}}
		case 3:
			res.Result = &ledgerpb.BatchResult_Extend{Extend: &ledgerpb.ExtendResponse{HoldId: "h3", Replayed: true}}
		case 4:
			res.Result = &ledgerpb.BatchResult_Refund{Refund: &ledgerpb.RefundResponse{}}
		case 5:
			st := status.New(codes.Aborted, "seats [A7] are taken")
			st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"})
			res.Result = &ledgerpb.BatchResult_Error{Error: st.Proto()}
		case 6:
			// no result set: a node's bug, or a kind from a newer node
		}
		resp.Results = append(resp.Results, &res)
	}
	return resp
}

// wantAnswer is what the client answered before it decoded raw: the
// decoded result merged into reply, or its status.
func wantAnswer(res *ledgerpb.BatchResult, reply proto.Message) error {
	var got proto.Message
	switch r := res.GetResult().(type) {
	case *ledgerpb.BatchResult_Error:
		if err := callError(r.Error); err != nil {
			return err
		}
	case *ledgerpb.BatchResult_Hold:
		got = r.Hold
	case *ledgerpb.BatchResult_Confirm:
		got = r.Confirm
	case *ledgerpb.BatchResult_Release:
		got = r.Release
	case *ledgerpb.BatchResult_Extend:
		got = r.Extend
	case *ledgerpb.BatchResult_Refund:
		got = r.Refund
	}
	if got == nil || reply.ProtoReflect().Descriptor() != got.ProtoReflect().Descriptor() {
		return ErrBadReply
	}
	proto.Merge(reply, got)
	return nil
}

var replyKinds = []func() proto.Message{
	func() proto.Message { return &ledgerpb.HoldResponse{} },
	func() proto.Message { return &ledgerpb.ConfirmResponse{} },
	func() proto.Message { return &ledgerpb.ReleaseResponse{} },
	func() proto.Message { return &ledgerpb.ExtendResponse{} },
	func() proto.Message { return &ledgerpb.RefundResponse{} },
}

// checkRawAgrees decodes b both ways and compares every answer for every
// reply kind.
func checkRawAgrees(t *testing.T, b []byte) {
	t.Helper()
	var raw rawBatchResponse
	rawErr := raw.parse(b)
	var resp ledgerpb.BatchResponse
	if err := proto.Unmarshal(b, &resp); err != nil {
		return // protobuf refuses it: so may parse, or answer later
	}
	if rawErr != nil {
		t.Fatalf("parse(%x) = %v; protobuf decodes %v", b, rawErr, &resp)
	}
	if len(raw.results) != len(resp.Results) {
		t.Fatalf("parse(%x) found %d results, protobuf %d", b, len(raw.results), len(resp.Results))
	}
	for i, res := range resp.Results {
		for _, kind := range replyKinds {
			want, got := kind(), kind()
			wantErr := wantAnswer(res, want)
			gotErr := answer(raw.results[i], got)
			switch {
			case errors.Is(wantErr, ErrBadReply):
				if !errors.Is(gotErr, ErrBadReply) {
					t.Fatalf("result %d (%v) into %T: answer = %v, want ErrBadReply", i, res, got, gotErr)
				}
			case wantErr != nil:
				if !proto.Equal(status.Convert(gotErr).Proto(), status.Convert(wantErr).Proto()) {
					t.Fatalf("result %d into %T: answer = %v, want %v", i, got, gotErr, wantErr)
				}
			case gotErr != nil:
				t.Fatalf("result %d (%v) into %T: answer = %v, want the result", i, res, got, gotErr)
			case !proto.Equal(got, want):
				t.Fatalf("result %d into %T: answer gave %v, merging gives %v", i, got, got, want)
			}
		}
	}
}

func TestRawBatchReplyAgreesWithProtobuf(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 300 {
		b, err := proto.Marshal(randomBatchResponse(r))
		if err != nil {
			t.Fatal(err)
		}
		checkRawAgrees(t, b)
	}
	// A result met twice merges; a field this client does not know, at
	// either level, is skipped; an error with an Any detail decodes.
	hold := func(h *ledgerpb.HoldResponse) []byte {
		b, _ := proto.Marshal(h)
		return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), b)
	}
	twice := append(hold(&ledgerpb.HoldResponse{HoldId: "h1"}), hold(&ledgerpb.HoldResponse{SeatIds: []string{"A1"}})...)
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5)
	result := append(append([]byte{}, unknown...), twice...)
	b := protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), result)
	b = append(b, protowire.AppendBytes(protowire.AppendTag(nil, 42, protowire.BytesType), []byte("later"))...)
	checkRawAgrees(t, b)
	var raw rawBatchResponse
	if err := raw.parse(b); err != nil || len(raw.results) != 1 {
		t.Fatalf("parse = %v, %d results", err, len(raw.results))
	}
	var h ledgerpb.HoldResponse
	if err := answer(raw.results[0], &h); err != nil || h.HoldId != "h1" || len(h.SeatIds) != 1 {
		t.Fatalf("a hold met twice answered %v, %v; want both halves", &h, err)
	}
	detail, _ := anypb.New(&ledgerpb.ErrorDetail{})
	st := &spb.Status{Code: int32(codes.Aborted), Message: "taken", Details: []*anypb.Any{detail}}
	b, _ = proto.Marshal(&ledgerpb.BatchResponse{Results: []*ledgerpb.BatchResult{{Result: &ledgerpb.BatchResult_Error{Error: st}}}})
	checkRawAgrees(t, b)
	// Malformed: protobuf refuses it, and so does parse.
	for _, bad := range [][]byte{{0x0a, 0x05, 0x01}, {0x0a, 0x02, 0x0a, 0x05}, {0x0a, 0x01, 0x78}} {
		if err := raw.parse(bad); err == nil {
			t.Errorf("parse(%x) = nil, want an error", bad)
		}
	}
}

func FuzzRawBatchReply(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20 {
		b, _ := proto.Marshal(randomBatchResponse(r))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRawAgrees(t, b)
	})
}

// BenchmarkBatchAnswer answers the 23 hold calls of a Batch (seatbench's
// mean under the uniform load): "merged" as the client did before, the
// response decoded whole and each result merged into its reply; "raw" as
// it does now.
func BenchmarkBatchAnswer(b *testing.B) {
	resp := &ledgerpb.BatchResponse{}
	for i := range 23 {
		resp.Results = append(resp.Results, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{
			HoldId: fmt.Sprintf("h3-%d-%d", 100000+i, i%8), ShowId: fmt.Sprintf("show-%d", i*797), SeatIds: []string{"C7", "C8"},
			ExpiresAt: timestamppb.New(time.UnixMilli(1795816932310 + 300_000)), Revision: uint64(100000 + i),
			AppliedAt: timestamppb.New(time.UnixMilli(1795816932310)), AmountMinor: 2000, Currency: "EUR",
			HoldToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", MaxExpiresAt: timestamppb.New(time.UnixMilli(1795816932310 + 1_800_000))}}})
	}
	wire, err := proto.Marshal(resp)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("merged", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r ledgerpb.BatchResponse
			if err := proto.Unmarshal(wire, &r); err != nil {
				b.Fatal(err)
			}
			for _, res := range r.Results {
				if err := wantAnswer(res, &ledgerpb.HoldResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r rawBatchResponse
			if err := r.parse(wire); err != nil {
				b.Fatal(err)
			}
			for _, res := range r.results {
				if err := answer(res, &ledgerpb.HoldResponse{}); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
