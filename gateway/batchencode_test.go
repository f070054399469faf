// This file holds the hand encoder of a Batch's answer to protobuf's own
// encoding: the same bytes for every response it takes, a decline for
// every one it must leave to protobuf, and every field of the messages it
// writes known to it.
package gateway

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	gproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func randomString(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return ""
	case 1:
		return strings.Repeat("x", 100+r.IntN(300)) // a length of two bytes
	case 2:
		return "séance-€" // UTF-8 beyond ASCII
	}
	return "h3-12345-7"
}

func randomTimestamp(r *rand.Rand) *timestamppb.Timestamp {
	switch r.IntN(4) {
	case 0:
		return nil
	case 1:
		return &timestamppb.Timestamp{} // set, empty: still encoded
	case 2:
		return &timestamppb.Timestamp{Seconds: -r.Int64N(1 << 40), Nanos: -r.Int32N(1e9)}
	}
	return &timestamppb.Timestamp{Seconds: r.Int64N(1 << 40), Nanos: r.Int32N(1e9)}
}

func randomInt(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return -r.Int64N(1 << 20)
	case 2:
		return math.MaxInt64
	}
	return r.Int64N(1 << 20)
}

func randomSeats(r *rand.Rand) []string {
	var s []string
	for range r.IntN(4) {
		s = append(s, randomString(r))
	}
	return s
}

// randomError is a call's error as the gateway answers it: a status with
// an ErrorInfo (whose metadata map has several keys) and maybe the taken
// seats, or a bare status.
func randomError(r *rand.Rand) *statuspb.Status {
	st := status.New(codes.Code(1+r.IntN(16)), randomString(r))
	if r.IntN(3) == 0 {
		return st.Proto()
	}
	info := &errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"}
	if r.IntN(2) == 0 {
		info.Metadata = map[string]string{"show_id": randomString(r), "seat": randomString(r), "z": "1", "a": "2"}
	}
	withDetails, err := st.WithDetails(info, &ledgerpb.ErrorDetail{TakenSeatIds: randomSeats(r), Revision: uint64(randomInt(r))})
	if err != nil {
		panic(err)
	}
	return withDetails.Proto()
}

// randomBatchAnswer is a BatchResponse of the results the hand encoder
// takes, every field random, zero, negative or long.
func randomBatchAnswer(r *rand.Rand) *ledgerpb.BatchResponse {
	resp := &ledgerpb.BatchResponse{}
	for range r.IntN(30) {
		var res ledgerpb.BatchResult
		state := ledgerpb.HoldState(r.IntN(5))
		switch r.IntN(4) {
		case 0:
			res.Result = &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{HoldId: randomString(r), ShowId: randomString(r),
				SeatIds: randomSeats(r), ExpiresAt: randomTimestamp(r), Revision: uint64(randomInt(r)), AppliedAt: randomTimestamp(r),
				AmountMinor: randomInt(r), Currency: randomString(r), Replayed: r.IntN(2) == 0, HoldToken: randomString(r),
				MaxExpiresAt: randomTimestamp(r)}}
		case 1:
			res.Result = &ledgerpb.BatchResult_Confirm{Confirm: &ledgerpb.ConfirmResponse{HoldId: randomString(r), ShowId: randomString(r),
				SeatIds: randomSeats(r), State: state, PaymentRef: randomString(r), Revision: uint64(randomInt(r)),
				AppliedAt: randomTimestamp(r), AmountMinor: randomInt(r), Currency: randomString(r), Replayed: r.IntN(2) == 0}}
		case 2:
			res.Result = &ledgerpb.BatchResult_Release{Release: &ledgerpb.ReleaseResponse{HoldId: randomString(r), State: state,
				Revision: uint64(randomInt(r)), AppliedAt: randomTimestamp(r), Replayed: r.IntN(2) == 0}}
		case 3:
			res.Result = &ledgerpb.BatchResult_Error{Error: randomError(r)}
		}
		resp.Results = append(resp.Results, &res)
	}
	return resp
}

func TestAppendBatchResponseMatchesProto(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		resp := randomBatchAnswer(r)
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := appendBatchResponse([]byte("prefix"), resp)
		if !ok {
			t.Fatalf("appendBatchResponse declined %v", resp)
		}
		if !bytes.Equal(got[len("prefix"):], want) || string(got[:len("prefix")]) != "prefix" {
			t.Fatalf("appendBatchResponse(%v) =\n%x\nprotobuf encodes\n%x", resp, got, want)
		}
	}
}

// TestAppendBatchResponseDeclines: what the hand encoder leaves to
// protobuf, which encodes it, or refuses to (a string that is not UTF-8).
func TestAppendBatchResponseDeclines(t *testing.T) {
	unknown := &ledgerpb.HoldResponse{HoldId: "h1"}
	unknown.ProtoReflect().SetUnknown(protoreflect.RawFields{0x98, 0x06, 0x01}) // field 99, varint 1
	for name, res := range map[string]*ledgerpb.BatchResult{
		"error not UTF-8":  {Result: &ledgerpb.BatchResult_Error{Error: status.New(codes.Aborted, "taken \xff").Proto()}},
		"extend":           {Result: &ledgerpb.BatchResult_Extend{Extend: &ledgerpb.ExtendResponse{HoldId: "h1"}}},
		"refund":           {Result: &ledgerpb.BatchResult_Refund{Refund: &ledgerpb.RefundResponse{}}},
		"no result":        {},
		"nil hold":         {Result: &ledgerpb.BatchResult_Hold{}},
		"not UTF-8":        {Result: &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{HoldId: "h\xff"}}},
		"a seat not UTF-8": {Result: &ledgerpb.BatchResult_Confirm{Confirm: &ledgerpb.ConfirmResponse{SeatIds: []string{"A1", "\xc3"}}}},
		"unknown fields":   {Result: &ledgerpb.BatchResult_Hold{Hold: unknown}},
	} {
		resp := &ledgerpb.BatchResponse{Results: []*ledgerpb.BatchResult{
			{Result: &ledgerpb.BatchResult_Release{Release: &ledgerpb.ReleaseResponse{HoldId: "h0"}}}, res}}
		if _, ok := appendBatchResponse(nil, resp); ok {
			t.Errorf("%s: appendBatchResponse took %v", name, resp)
		}
	}
	// The server's codec then encodes it as protobuf does.
	resp := &ledgerpb.BatchResponse{Results: []*ledgerpb.BatchResult{
		{Result: &ledgerpb.BatchResult_Error{Error: status.New(codes.Aborted, "taken").Proto()}},
		{Result: &ledgerpb.BatchResult_Extend{Extend: &ledgerpb.ExtendResponse{HoldId: "h1"}}}}}
	got, err := watchCodec{encoding.GetCodecV2(gproto.Name)}.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	var back ledgerpb.BatchResponse
	if err := proto.Unmarshal(got.Materialize(), &back); err != nil || !proto.Equal(&back, resp) {
		t.Fatalf("the codec sent %v (%v), want %v", &back, err, resp)
	}
}

// TestBatchEncoderKnowsEveryField sets every field the descriptors of the
// hand-encoded messages have, so a field added to booking.proto that the
// encoder does not write fails here rather than vanish from answers.
func TestBatchEncoderKnowsEveryField(t *testing.T) {
	fill := func(m protoreflect.Message) {
		fields := m.Descriptor().Fields()
		for i := range fields.Len() {
			f := fields.Get(i)
			switch {
			case f.IsList():
				m.Mutable(f).List().Append(protoreflect.ValueOfString("A1"))
			case f.Kind() == protoreflect.MessageKind:
				ts := &timestamppb.Timestamp{Seconds: 1795816932, Nanos: 310}
				if f.Message().FullName() != ts.ProtoReflect().Descriptor().FullName() {
					t.Fatalf("%s.%s is a %s: the encoder writes only Timestamps", m.Descriptor().Name(), f.Name(), f.Message().FullName())
				}
				m.Set(f, protoreflect.ValueOfMessage(ts.ProtoReflect()))
			case f.Kind() == protoreflect.StringKind:
				m.Set(f, protoreflect.ValueOfString("s"))
			case f.Kind() == protoreflect.BoolKind:
				m.Set(f, protoreflect.ValueOfBool(true))
			case f.Kind() == protoreflect.EnumKind:
				m.Set(f, protoreflect.ValueOfEnum(1))
			case f.Kind() == protoreflect.Int64Kind:
				m.Set(f, protoreflect.ValueOfInt64(7))
			case f.Kind() == protoreflect.Uint64Kind:
				m.Set(f, protoreflect.ValueOfUint64(7))
			default:
				t.Fatalf("%s.%s is of kind %s, which the encoder does not write", m.Descriptor().Name(), f.Name(), f.Kind())
			}
		}
	}
	hold, confirm, release := &ledgerpb.HoldResponse{}, &ledgerpb.ConfirmResponse{}, &ledgerpb.ReleaseResponse{}
	for _, m := range []proto.Message{hold, confirm, release} {
		fill(m.ProtoReflect())
	}
	if n := (&timestamppb.Timestamp{}).ProtoReflect().Descriptor().Fields().Len(); n != 2 {
		t.Fatalf("Timestamp has %d fields, the encoder writes 2", n)
	}
	resp := &ledgerpb.BatchResponse{Results: []*ledgerpb.BatchResult{{Result: &ledgerpb.BatchResult_Hold{Hold: hold}},
		{Result: &ledgerpb.BatchResult_Confirm{Confirm: confirm}}, {Result: &ledgerpb.BatchResult_Release{Release: release}}}}
	got, ok := appendBatchResponse(nil, resp)
	if !ok {
		t.Fatal("appendBatchResponse declined a response of every field")
	}
	var back ledgerpb.BatchResponse
	if err := proto.Unmarshal(got, &back); err != nil || !proto.Equal(&back, resp) {
		t.Fatalf("a response of every field came back as %v (%v), want %v", &back, err, resp)
	}
	// BatchResult's oneof: the encoder takes hold, confirm and release,
	// and must decline every other kind (TestAppendBatchResponseDeclines
	// names the ones there are now).
	if n := (&ledgerpb.BatchResult{}).ProtoReflect().Descriptor().Fields().Len(); n != 6 {
		t.Fatalf("BatchResult has %d fields, TestAppendBatchResponseDeclines knows 6", n)
	}
}

func FuzzAppendBatchResponse(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 10 {
		b, _ := proto.Marshal(randomBatchAnswer(r))
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var resp ledgerpb.BatchResponse
		if proto.Unmarshal(b, &resp) != nil {
			return
		}
		got, ok := appendBatchResponse(nil, &resp)
		if !ok {
			return
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(&resp)
		if err != nil {
			t.Fatalf("the encoder took %v, which protobuf refuses: %v", &resp, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("appendBatchResponse(%v) =\n%x\nprotobuf encodes\n%x", &resp, got, want)
		}
	})
}

// BenchmarkBatchAnswerEncode encodes the answer of a Batch of 23 holds
// (seatbench's mean under the uniform load) as the server's codec did,
// through protobuf, and as it does now, by hand (watchCodec); taken/ is
// the same answer with its last hold refused, SEATS_TAKEN.
func BenchmarkBatchAnswerEncode(b *testing.B) {
	resp := &ledgerpb.BatchResponse{}
	for i := range 23 {
		resp.Results = append(resp.Results, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{
			HoldId: "h3-100000-" + string(rune('0'+i%8)), ShowId: "show-1234", SeatIds: []string{"C7", "C8"},
			ExpiresAt: &timestamppb.Timestamp{Seconds: 1795817232, Nanos: 310e6}, Revision: uint64(100000 + i),
			AppliedAt: &timestamppb.Timestamp{Seconds: 1795816932, Nanos: 310e6}, AmountMinor: 2000, Currency: "EUR",
			HoldToken: "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", MaxExpiresAt: &timestamppb.Timestamp{Seconds: 1795818732}}}})
	}
	// The same with the last hold refused, as about half the answers
	// under load carry a seat taken.
	taken := &ledgerpb.BatchResponse{Results: slices.Clone(resp.Results)}
	st, err := status.New(codes.Aborted, "seats [C7] are taken").WithDetails(
		&errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"},
		&ledgerpb.ErrorDetail{TakenSeatIds: []string{"C7"}, Revision: 100023, SuggestedSeatIds: []string{"D7", "D8"}})
	if err != nil {
		b.Fatal(err)
	}
	taken.Results[22] = &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Error{Error: st.Proto()}}
	codec := encoding.GetCodecV2(gproto.Name)
	for _, tc := range []struct {
		name string
		c    encoding.CodecV2
		resp *ledgerpb.BatchResponse
	}{{"proto", codec, resp}, {"hand", watchCodec{codec}, resp}, {"taken/proto", codec, taken}, {"taken/hand", watchCodec{codec}, taken}} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				out, err := tc.c.Marshal(tc.resp)
				if err != nil {
					b.Fatal(err)
				}
				out.Free()
			}
		})
	}
}
