package gateway

import (
	"unicode/utf8"

	statuspb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A Batch's answer, encoded by hand. The gRPC codec sized a BatchResponse
// and then marshalled it, both through protobuf's table-driven coders,
// whose oneof sizers look each result's type up in a map: the pair was
// 1.4 % of a loaded node's CPU. appendBatchResponse writes hold, confirm
// and release results field by field, and an error's status as protobuf
// encodes that one message, into the bytes protobuf's own encoding of the
// whole response would give (TestAppendBatchResponseMatchesProto). Under
// load about half the answers carry an error (a seat taken), and each
// such answer went whole through protobuf before. It declines the whole
// response to protobuf when a result is anything else (an extend, a
// refund), carries unknown fields, or holds a string that is not UTF-8
// (which protobuf refuses to encode).
// TestBatchEncoderKnowsEveryField fails when one of these messages gains
// a field.

// appendBatchResponse appends resp's encoding to b, or reports false and
// leaves the encoding to protobuf.
func appendBatchResponse(b []byte, resp *ledgerpb.BatchResponse) ([]byte, bool) {
	if !plain(resp) {
		return b, false
	}
	for _, r := range resp.Results {
		if !plain(r) {
			return b, false
		}
		var m proto.Message
		var body func(b []byte) ([]byte, bool)
		var field protowire.Number // BatchResult's oneof field
		switch res := r.Result.(type) {
		case *ledgerpb.BatchResult_Hold:
			m, field, body = res.Hold, 1, func(b []byte) ([]byte, bool) { return appendHoldResponse(b, res.Hold) }
		case *ledgerpb.BatchResult_Confirm:
			m, field, body = res.Confirm, 2, func(b []byte) ([]byte, bool) { return appendConfirmResponse(b, res.Confirm) }
		case *ledgerpb.BatchResult_Release:
			m, field, body = res.Release, 3, func(b []byte) ([]byte, bool) { return appendReleaseResponse(b, res.Release) }
		case *ledgerpb.BatchResult_Error:
			m, field, body = res.Error, 15, func(b []byte) ([]byte, bool) { return appendStatus(b, res.Error) }
		default:
			return b, false
		}
		if !plain(m) {
			return b, false
		}
		var result, kind int
		var ok bool
		b, result = beginMsg(b, 1) // BatchResponse.results
		b, kind = beginMsg(b, field)
		if b, ok = body(b); !ok {
			return b, false
		}
		b = endMsg(endMsg(b, kind), result)
	}
	return b, true
}

// plain reports whether m is set and carries no unknown fields, which the
// hand encoder would drop.
func plain(m proto.Message) bool {
	r := m.ProtoReflect()
	return r.IsValid() && len(r.GetUnknown()) == 0
}

func appendHoldResponse(b []byte, m *ledgerpb.HoldResponse) ([]byte, bool) {
	ok := true
	b, ok = appendString(b, 1, m.HoldId, ok)
	b, ok = appendString(b, 2, m.ShowId, ok)
	b, ok = appendStrings(b, 3, m.SeatIds, ok)
	b, ok = appendTimestamp(b, 4, m.ExpiresAt, ok)
	b = appendVarint(b, 5, m.Revision)
	b, ok = appendTimestamp(b, 6, m.AppliedAt, ok)
	b = appendVarint(b, 7, uint64(m.AmountMinor))
	b, ok = appendString(b, 8, m.Currency, ok)
	b = appendBool(b, 9, m.Replayed)
	b, ok = appendString(b, 10, m.HoldToken, ok)
	b, ok = appendTimestamp(b, 11, m.MaxExpiresAt, ok)
	return b, ok
}

func appendConfirmResponse(b []byte, m *ledgerpb.ConfirmResponse) ([]byte, bool) {
	ok := true
	b, ok = appendString(b, 1, m.HoldId, ok)
	b, ok = appendString(b, 2, m.ShowId, ok)
	b, ok = appendStrings(b, 3, m.SeatIds, ok)
	b = appendVarint(b, 4, uint64(m.State))
	b, ok = appendString(b, 5, m.PaymentRef, ok)
	b = appendVarint(b, 6, m.Revision)
	b, ok = appendTimestamp(b, 7, m.AppliedAt, ok)
	b = appendVarint(b, 8, uint64(m.AmountMinor))
	b, ok = appendString(b, 9, m.Currency, ok)
	b = appendBool(b, 10, m.Replayed)
	return b, ok
}

func appendReleaseResponse(b []byte, m *ledgerpb.ReleaseResponse) ([]byte, bool) {
	ok := true
	b, ok = appendString(b, 1, m.HoldId, ok)
	b = appendVarint(b, 2, uint64(m.State))
	b = appendVarint(b, 3, m.Revision)
	b, ok = appendTimestamp(b, 4, m.AppliedAt, ok)
	b = appendBool(b, 5, m.Replayed)
	return b, ok
}

// appendStatus appends an error's status as protobuf encodes it: it is
// one result of many, and its details (an ErrorInfo, the taken seats) are
// Anys that hold their bytes already, which any encoding copies as they
// are. Deterministic, as the test's reference is.
func appendStatus(b []byte, st *statuspb.Status) ([]byte, bool) {
	out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, st)
	return out, err == nil
}

// appendTimestamp appends a Timestamp field, if t is set (a message field
// is present when set, even if empty).
func appendTimestamp(b []byte, field protowire.Number, t *timestamppb.Timestamp, ok bool) ([]byte, bool) {
	if t == nil {
		return b, ok
	}
	if !plain(t) {
		return b, false
	}
	b, start := beginMsg(b, field)
	b = appendVarint(b, 1, uint64(t.Seconds))
	b = appendVarint(b, 2, uint64(int64(t.Nanos))) // an int32 is sign-extended
	return endMsg(b, start), ok
}

// appendString appends a proto3 string field unless it is empty; ok turns
// false for a string that is not UTF-8.
func appendString(b []byte, field protowire.Number, s string, ok bool) ([]byte, bool) {
	if s == "" {
		return b, ok
	}
	return protowire.AppendString(protowire.AppendTag(b, field, protowire.BytesType), s), ok && utf8.ValidString(s)
}

// appendStrings appends a repeated string field, each element even if
// empty.
func appendStrings(b []byte, field protowire.Number, ss []string, ok bool) ([]byte, bool) {
	for _, s := range ss {
		b = protowire.AppendString(protowire.AppendTag(b, field, protowire.BytesType), s)
		ok = ok && utf8.ValidString(s)
	}
	return b, ok
}

// appendVarint appends a proto3 integer or enum field unless it is zero.
func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), v)
}

func appendBool(b []byte, field protowire.Number, v bool) []byte {
	if !v {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), 1)
}

// beginMsg appends a message field's tag and one byte for its length, and
// returns where the message starts; endMsg writes the length.
func beginMsg(b []byte, field protowire.Number) ([]byte, int) {
	b = append(protowire.AppendTag(b, field, protowire.BytesType), 0)
	return b, len(b)
}

// endMsg writes the length of the message that starts at start, moving
// it on when the length takes more than the byte beginMsg left.
func endMsg(b []byte, start int) []byte {
	n := len(b) - start
	if n < 0x80 {
		b[start-1] = byte(n)
		return b
	}
	k := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, k-1)...)
	copy(b[start+k-1:], b[start:start+n])
	protowire.AppendVarint(b[:start-1], uint64(n))
	return b
}
