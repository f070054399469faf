package fsm

// Every client command is encoded to hash its payload and writes a
// request record (requests.go), and most write a hold record; encoding
// them through the protobuf runtime, which walks the messages by
// reflection, was the apply path's largest encoding cost. Here the
// request record and its Result, the hold record, and the payload of the
// commands group commit carries most (hold, confirm, release, extend) are
// encoded by hand into the very bytes the runtime's deterministic
// encoding makes (fields in number order, zero values left out); tests
// hold them equal (encode_test.go). Anything else (nested messages,
// unknown fields, a string that is not UTF-8, which the runtime refuses)
// goes to the runtime.

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
		start := len(b)
		b = prefixLen(appendResult(b, r), start)
	}
	if rec.AppliedAtMs != 0 {
		b = protowire.AppendTag(b, 3, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(rec.AppliedAtMs))
	}
	return b
}

// prefixLen puts the length of b[start:], a message just encoded, before
// it: its length goes first, but is known only once it is encoded.
func prefixLen(b []byte, start int) []byte {
	n := len(b) - start
	var lenBuf [binary.MaxVarintLen64]byte
	l := protowire.AppendVarint(lenBuf[:0], uint64(n))
	b = append(b, l...)
	copy(b[start+len(l):], b[start:start+n])
	copy(b[start:], l)
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
	return validUTF8(r.Message, r.Field, r.HoldId, r.Currency, r.HoldToken, r.QueueEntryId, r.QueueToken, r.RoomEntryToken) &&
		validUTF8(r.SeatIds...) && validUTF8(r.AlternativeSeatIds...)
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
// as protobuf encodes them. It is small enough to be inlined, so that a
// zero field, the most common, costs a compare and no call.
func appendVarintOmitZero(b []byte, num protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendVarintField(b, num, v)
}

// appendVarintField appends a varint field, zero or not.
func appendVarintField(b []byte, num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(appendTag(b, num, protowire.VarintType), v)
}

// appendStringOmitEmpty appends a string field unless it is empty; like
// appendVarintOmitZero, it is inlined.
func appendStringOmitEmpty(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return appendStringField(b, num, s)
}

// appendStringField is protowire's AppendTag and AppendString without a
// call for a field numbered below 16 and a string shorter than 128 bytes
// (a one-byte tag and length), as most of ours are.
func appendStringField(b []byte, num protowire.Number, s string) []byte {
	b = appendTag(b, num, protowire.BytesType)
	if len(s) < 1<<7 {
		b = append(b, byte(len(s)))
	} else {
		b = protowire.AppendVarint(b, uint64(len(s)))
	}
	return append(b, s...)
}

// appendTag is protowire.AppendTag, one byte without a call for a field
// numbered below 16.
func appendTag(b []byte, num protowire.Number, typ protowire.Type) []byte {
	if uint64(num) < 16 {
		return append(b, byte(num)<<3|byte(typ&7))
	}
	return protowire.AppendTag(b, num, typ)
}

// appendPayload appends c's deterministic protobuf encoding to b, as
// payloadHash hashes it (stamps already cleared).
func appendPayload(b []byte, c *ledgerpb.Command) []byte {
	if !plainPayload(c) {
		out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, c)
		must(err, "marshal payload")
		return out
	}
	b = appendVarintOmitZero(b, 1, uint64(c.ProposedAtMs))
	b = appendStringOmitEmpty(b, 2, c.ClientId)
	b = appendStringOmitEmpty(b, 3, c.RequestId)
	b = appendVarintOmitZero(b, 4, uint64(c.FirstSentAtMs))
	var num protowire.Number
	switch c.Op.(type) {
	case *ledgerpb.Command_Hold:
		num = 11
	case *ledgerpb.Command_Confirm:
		num = 12
	case *ledgerpb.Command_Release:
		num = 13
	case *ledgerpb.Command_Extend:
		num = 16
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	start := len(b)
	switch op := c.Op.(type) {
	case *ledgerpb.Command_Hold:
		h := op.Hold
		b = appendStringOmitEmpty(b, 1, h.ShowId)
		for _, s := range h.SeatIds {
			b = protowire.AppendTag(b, 2, protowire.BytesType)
			b = protowire.AppendString(b, s)
		}
		b = appendVarintOmitZero(b, 3, uint64(h.TtlMs))
		b = appendVarintOmitZero(b, 4, uint64(h.Count))
		b = appendStringOmitEmpty(b, 5, h.Category)
		b = appendVarintOmitZero(b, 6, protowire.EncodeBool(h.Wait))
		b = appendStringOmitEmpty(b, 50, h.AdmissionToken)
	case *ledgerpb.Command_Confirm:
		b = appendStringOmitEmpty(b, 1, op.Confirm.ShowId)
		b = appendStringOmitEmpty(b, 2, op.Confirm.HoldId)
		b = appendStringOmitEmpty(b, 3, op.Confirm.PaymentRef)
		b = appendStringOmitEmpty(b, 4, op.Confirm.HoldToken)
	case *ledgerpb.Command_Release:
		b = appendStringOmitEmpty(b, 1, op.Release.ShowId)
		b = appendStringOmitEmpty(b, 2, op.Release.HoldId)
		b = appendStringOmitEmpty(b, 3, op.Release.HoldToken)
	case *ledgerpb.Command_Extend:
		b = appendStringOmitEmpty(b, 1, op.Extend.ShowId)
		b = appendStringOmitEmpty(b, 2, op.Extend.HoldId)
		b = appendStringOmitEmpty(b, 3, op.Extend.HoldToken)
		b = appendVarintOmitZero(b, 4, uint64(op.Extend.TtlMs))
	}
	return prefixLen(b, start)
}

// plainPayload reports whether appendPayload encodes c itself: a hold,
// confirm, release or extend without unknown fields or strings that are
// not UTF-8.
func plainPayload(c *ledgerpb.Command) bool {
	if len(c.ProtoReflect().GetUnknown()) > 0 || !validUTF8(c.ClientId, c.RequestId) {
		return false
	}
	switch o := c.Op.(type) {
	case *ledgerpb.Command_Hold:
		h := o.Hold
		if h == nil || len(h.ProtoReflect().GetUnknown()) > 0 || !validUTF8(h.ShowId, h.Category, h.AdmissionToken) {
			return false
		}
		for _, s := range h.SeatIds {
			if !utf8.ValidString(s) {
				return false
			}
		}
		return true
	case *ledgerpb.Command_Confirm:
		x := o.Confirm
		return x != nil && len(x.ProtoReflect().GetUnknown()) == 0 && validUTF8(x.ShowId, x.HoldId, x.PaymentRef, x.HoldToken)
	case *ledgerpb.Command_Release:
		x := o.Release
		return x != nil && len(x.ProtoReflect().GetUnknown()) == 0 && validUTF8(x.ShowId, x.HoldId, x.HoldToken)
	case *ledgerpb.Command_Extend:
		x := o.Extend
		return x != nil && len(x.ProtoReflect().GetUnknown()) == 0 && validUTF8(x.ShowId, x.HoldId, x.HoldToken)
	}
	return false
}

func validUTF8(ss ...string) bool {
	for _, s := range ss {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

// appendHoldRecord appends h's deterministic protobuf encoding to b: the
// record every hold, confirm, release and expiry writes.
func appendHoldRecord(b []byte, h *ledgerpb.HoldRecord) []byte {
	if len(h.ProtoReflect().GetUnknown()) > 0 || !validUTF8(h.HoldId, h.ShowId, h.ClientId, h.PaymentRef, h.Currency, h.RefundReason) ||
		!validUTF8(h.SeatIds...) {
		out, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(b, h)
		must(err, "marshal hold record")
		return out
	}
	b = appendStringOmitEmpty(b, 1, h.HoldId)
	b = appendStringOmitEmpty(b, 2, h.ShowId)
	for _, s := range h.SeatIds {
		b = protowire.AppendTag(b, 3, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = appendStringOmitEmpty(b, 4, h.ClientId)
	b = appendVarintOmitZero(b, 5, uint64(h.CreatedAtMs))
	b = appendVarintOmitZero(b, 6, uint64(h.ExpiresAtMs))
	b = appendVarintOmitZero(b, 7, uint64(h.State))
	b = appendStringOmitEmpty(b, 8, h.PaymentRef)
	b = appendVarintOmitZero(b, 9, uint64(h.AmountMinor))
	b = appendStringOmitEmpty(b, 10, h.Currency)
	b = appendVarintOmitZero(b, 11, uint64(h.ClosedAtMs))
	b = appendVarintOmitZero(b, 12, h.Revision)
	b = appendVarintOmitZero(b, 13, uint64(h.RefundedAtMs))
	return appendStringOmitEmpty(b, 14, h.RefundReason)
}
