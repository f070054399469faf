package fsm

// Every client command writes a request record (requests.go), and
// encoding it through the protobuf runtime, which walks the messages by
// reflection, was the apply path's largest encoding cost. Here the record
// and its Result are encoded by hand into the very bytes the runtime's
// deterministic encoding makes (fields in number order, zero values left
// out); TestAppendRequestRecordMatchesProto holds the two equal. A result
// that carries nested messages (the waiting room's) or unknown fields, or
// a string that is not UTF-8 (which the runtime refuses), goes to the
// runtime.

import (
	"encoding/binary"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// appendRequestRecord appends rec's deterministic protobuf encoding to b.
func appendRequestRecord(b []byte, rec *ledgerpb.RequestRecord) []byte {
	if !plainResult(rec.Result) || len(rec.ProtoReflect().GetUnknown()) > 0 {
		out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, rec)
		must(err, "marshal request record")
		return out
	}
	if len(rec.PayloadHash) > 0 {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, rec.PayloadHash)
	}
	if r := rec.Result; r != nil {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		// The result's length goes before it: encode it, then move it
		// up behind its length.
		start := len(b)
		b = appendResult(b, r)
		n := len(b) - start
		var lenBuf [binary.MaxVarintLen64]byte
		l := protowire.AppendVarint(lenBuf[:0], uint64(n))
		b = append(b, l...)
		copy(b[start+len(l):], b[start:start+n])
		copy(b[start:], l)
	}
	if rec.AppliedAtMs != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(rec.AppliedAtMs))
	}
	return b
}

// plainResult reports whether r (nil included) is one appendResult
// encodes: no nested message, no unknown field, UTF-8 strings only.
func plainResult(r *ledgerpb.Result) bool {
	if r == nil {
		return true
	}
	if r.RoomEntry != nil || r.Room != nil || r.RoomAuto != nil || len(r.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	for _, s := range [...]string{r.Message, r.Field, r.HoldId, r.Currency, r.HoldToken, r.QueueEntryId, r.QueueToken, r.RoomEntryToken} {
		if !utf8.ValidString(s) {
			return false
		}
	}
	for _, ss := range [...][]string{r.SeatIds, r.AlternativeSeatIds} {
		for _, s := range ss {
			if !utf8.ValidString(s) {
				return false
			}
		}
	}
	return true
}

// appendResult appends a plain result's fields (plainResult), in field
// number order.
func appendResult(b []byte, r *ledgerpb.Result) []byte {
	b = appendVarintOmitZero(b, 1, uint64(r.Code))
	b = appendStringOmitEmpty(b, 2, r.Message)
	b = appendStringOmitEmpty(b, 3, r.Field)
	for _, s := range r.SeatIds {
		b = protowire.AppendTag(b, 4, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = appendStringOmitEmpty(b, 5, r.HoldId)
	b = appendVarintOmitZero(b, 6, uint64(r.ExpiresAtMs))
	b = appendVarintOmitZero(b, 7, uint64(r.HoldState))
	b = appendVarintOmitZero(b, 8, r.Revision)
	b = appendVarintOmitZero(b, 9, uint64(r.AppliedAtMs))
	b = appendVarintOmitZero(b, 10, uint64(r.AmountMinor))
	b = appendStringOmitEmpty(b, 11, r.Currency)
	b = appendVarintOmitZero(b, 12, protowire.EncodeBool(r.Replayed))
	b = appendVarintOmitZero(b, 13, uint64(r.Expired))
	b = appendStringOmitEmpty(b, 14, r.HoldToken)
	for _, s := range r.AlternativeSeatIds {
		b = protowire.AppendTag(b, 15, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = appendVarintOmitZero(b, 16, uint64(r.Limit))
	b = appendVarintOmitZero(b, 17, uint64(r.MaxExpiresAtMs))
	b = appendStringOmitEmpty(b, 18, r.QueueEntryId)
	b = appendVarintOmitZero(b, 19, uint64(r.QueuePosition))
	b = appendStringOmitEmpty(b, 20, r.QueueToken)
	b = appendVarintOmitZero(b, 21, uint64(r.SeatsAhead))
	b = appendStringOmitEmpty(b, 51, r.RoomEntryToken)
	b = appendVarintOmitZero(b, 52, r.RoomPosition)
	b = appendVarintOmitZero(b, 53, r.RoomPeopleAhead)
	b = appendVarintOmitZero(b, 55, uint64(r.Admitted))
	return appendVarintOmitZero(b, 56, uint64(r.RoomAdmitPerSecond))
}

// appendVarintOmitZero appends a varint field unless v is zero. Signed
// fields and enums pass their value converted to uint64, sign extended
// as protobuf encodes them.
func appendVarintOmitZero(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

// appendStringOmitEmpty appends a string field unless it is empty.
func appendStringOmitEmpty(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}
