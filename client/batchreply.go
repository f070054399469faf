package client

import (
	"errors"
	"fmt"

	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A Batch's answer is not decoded into a BatchResponse: each call's result
// stays the bytes it came as (rawResult), and its caller decodes them once,
// straight into the reply its generated client made. Decoding the whole
// response into messages and then merging each into its reply (reflection,
// and every string twice) was a fifth of a load tool's CPU.

// rawResult is one call's BatchResult: the number of the oneof field it
// holds (0: none this client knows) and that field's bytes.
type rawResult struct {
	field protowire.Number
	body  []byte
}

// rawBatchResponse is a BatchResponse, each result raw.
type rawBatchResponse struct {
	results []rawResult
}

// BatchResult's oneof fields, as booking.proto numbers them.
const (
	resultHold    protowire.Number = 1
	resultConfirm protowire.Number = 2
	resultRelease protowire.Number = 3
	resultExtend  protowire.Number = 4
	resultRefund  protowire.Number = 5
	resultError   protowire.Number = 15
)

// resultKinds is the reply message each successful result field decodes
// into.
var resultKinds = map[protowire.Number]protoreflect.MessageDescriptor{
	resultHold:    (*ledgerpb.HoldResponse)(nil).ProtoReflect().Descriptor(),
	resultConfirm: (*ledgerpb.ConfirmResponse)(nil).ProtoReflect().Descriptor(),
	resultRelease: (*ledgerpb.ReleaseResponse)(nil).ProtoReflect().Descriptor(),
	resultExtend:  (*ledgerpb.ExtendResponse)(nil).ProtoReflect().Descriptor(),
	resultRefund:  (*ledgerpb.RefundResponse)(nil).ProtoReflect().Descriptor(),
}

var errMalformedBatch = errors.New("client: malformed BatchResponse")

// parse reads a BatchResponse's wire bytes: field 1, repeated BatchResult,
// and in each the last oneof field, as protobuf's decoding keeps it.
// Fields this client does not know, and known ones of another wire type,
// are skipped, as protobuf keeps them aside as unknown fields.
func (r *rawBatchResponse) parse(b []byte) error {
	r.results = r.results[:0]
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errMalformedBatch
		}
		b = b[n:]
		if num != 1 || typ != protowire.BytesType {
			// Unknown, or a known field of another wire type, which
			// protobuf also keeps as unknown.
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return errMalformedBatch
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return errMalformedBatch
		}
		b = b[n:]
		res, err := parseResult(v)
		if err != nil {
			return err
		}
		r.results = append(r.results, res)
	}
	return nil
}

func parseResult(b []byte) (rawResult, error) {
	var res rawResult
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return rawResult{}, errMalformedBatch
		}
		b = b[n:]
		_, known := resultKinds[num]
		if (!known && num != resultError) || typ != protowire.BytesType {
			if n = protowire.ConsumeFieldValue(num, typ, b); n < 0 {
				return rawResult{}, errMalformedBatch
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return rawResult{}, errMalformedBatch
		}
		b = b[n:]
		if num == res.field {
			// A message field met twice is the two merged, and merging
			// encodings is concatenating them.
			v = append(res.body[:len(res.body):len(res.body)], v...)
		}
		res = rawResult{field: num, body: v}
	}
	return res, nil
}

// answer gives a caller its call's result: the response decoded into
// reply, or the status the node answered.
func answer(res rawResult, reply any) error {
	if res.field == resultError {
		var s spb.Status
		if err := proto.Unmarshal(res.body, &s); err != nil {
			return fmt.Errorf("%w: its error status does not decode: %v", ErrBadReply, err)
		}
		if err := callError(&s); err != nil {
			return err
		}
	}
	want := resultKinds[res.field]
	dst, ok := reply.(proto.Message)
	if want == nil || !ok || dst.ProtoReflect().Descriptor() != want {
		return fmt.Errorf("%w: %s for a %T", ErrBadReply, resultName(res.field), reply)
	}
	// Merge: into the reply as it is, as proto.Merge of a decoded result
	// did (a generated client hands a new, empty one).
	if err := (proto.UnmarshalOptions{Merge: true}).Unmarshal(res.body, dst); err != nil {
		return fmt.Errorf("%w: its %s does not decode: %v", ErrBadReply, resultName(res.field), err)
	}
	return nil
}

// resultName names a result field for errors.
func resultName(field protowire.Number) string {
	if d := resultKinds[field]; d != nil {
		return string(d.Name())
	}
	if field == resultError {
		return "OK status"
	}
	return "no result"
}

// batchCodec is the Batch call's codec: the request as protobuf, the
// answer into a rawBatchResponse.
type batchCodec struct{}

func (batchCodec) Marshal(v any) (mem.BufferSlice, error) {
	return protoCodec().Marshal(v)
}

func (batchCodec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*rawBatchResponse)
	if !ok {
		return protoCodec().Unmarshal(data, v)
	}
	// Materialize copies: the results' bytes must outlive grpc's buffers,
	// until each caller has decoded its own.
	return r.parse(data.Materialize())
}

func (batchCodec) Name() string { return protoCodecName }

// protoCodecName is grpc's protobuf codec, which batchCodec stands in for
// (the content-subtype stays the same).
const protoCodecName = "proto"

func protoCodec() encoding.CodecV2 { return encoding.GetCodecV2(protoCodecName) }
