package gateway

import (
	"unicode/utf8"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeBatch decodes a Booking.Batch request of hold, confirm and release
// calls, as a booking site sends them under load, with a few allocations a
// batch: the calls, their requests and the oneof wrappers come from one
// slice each, and the calls' strings are carved from one string of the
// batch's bytes. proto.Unmarshal made about ten allocations a call (a
// string each, the call, its request, its wrapper, the seat list),
// 227 for a batch of 23 calls (BenchmarkDecodeBatch).
//
// It takes only what it decodes exactly as proto.Unmarshal would: the
// fields of those three requests and the call's first_sent_at_ms, each
// with its declared wire type, valid UTF-8, at most one request a call.
// For anything else (another call kind, an unknown field, two requests in
// one call, bytes that do not parse) it returns false having set
// nothing, and the caller decodes with proto.Unmarshal, which takes or
// refuses the request as before. FuzzDecodeBatch checks both paths agree.
//
// A string keeps its batch's bytes alive (batchBytesMax bounds them) for
// as long as it is held: what keeps a request's string beyond the call
// clones it (limiter.allow).
func decodeBatch(b []byte, m *ledgerpb.BatchRequest) bool {
	if len(m.Calls) > 0 || len(m.ProtoReflect().GetUnknown()) > 0 {
		return false // decoding merges into a message: only a fresh one here
	}
	// Count the calls, and each one's kind from its first field, or its
	// second after first_sent_at_ms (protobuf-go writes that first), to
	// size the slabs.
	var nCalls, nHolds, nConfirms, nReleases int
	top := wireReader{b: b, end: len(b)}
	for top.pos < top.end {
		f, ok := top.next()
		if !ok || f.num != 1 || f.typ != protowire.BytesType {
			return false
		}
		nCalls++
		r := wireReader{b: b, pos: f.lo, end: f.hi}
		g, ok := r.next()
		if ok && g.num == 15 {
			g, ok = r.next()
		}
		switch {
		case !ok || g.typ != protowire.BytesType:
		case g.num == 1:
			nHolds++
		case g.num == 2:
			nConfirms++
		case g.num == 3:
			nReleases++
		}
	}
	d := batchSlabs{
		holds:    make([]ledgerpb.HoldRequest, nHolds),
		holdW:    make([]ledgerpb.BatchCall_Hold, nHolds),
		confirms: make([]ledgerpb.ConfirmRequest, nConfirms),
		confirmW: make([]ledgerpb.BatchCall_Confirm, nConfirms),
		releases: make([]ledgerpb.ReleaseRequest, nReleases),
		releaseW: make([]ledgerpb.BatchCall_Release, nReleases),
		seats:    make([]string, 0, 2*nHolds),
	}
	calls := make([]ledgerpb.BatchCall, nCalls)
	ptrs := make([]*ledgerpb.BatchCall, nCalls)
	// The batch's bytes as one string: every call's strings are slices of
	// it, at the same offsets. One allocation a batch, not one a call; the
	// calls live as long as the batch, and nothing keeps a string of a
	// request past its call but the rate limiter, which clones it.
	whole := string(b)
	top = wireReader{b: b, end: len(b)}
	for i := range calls {
		f, _ := top.next() // read above
		ptrs[i] = &calls[i]
		r := wireReader{b: b[f.lo:f.hi], s: whole[f.lo:f.hi], end: f.hi - f.lo}
		if !d.call(&r, &calls[i]) {
			return false
		}
	}
	m.Calls = ptrs
	return true
}

// batchSlabs hands out a batch's requests and oneof wrappers; when a kind
// runs out (decodeBatch's guess was short), it allocates.
type batchSlabs struct {
	holds    []ledgerpb.HoldRequest
	holdW    []ledgerpb.BatchCall_Hold
	confirms []ledgerpb.ConfirmRequest
	confirmW []ledgerpb.BatchCall_Confirm
	releases []ledgerpb.ReleaseRequest
	releaseW []ledgerpb.BatchCall_Release
	seats    []string
}

// take hands out the next element of a slab, or a new one when the slab
// has run out.
func take[T any](slab *[]T) *T {
	if len(*slab) == 0 {
		return new(T)
	}
	p := &(*slab)[0]
	*slab = (*slab)[1:]
	return p
}

// call decodes a BatchCall's fields into c: at most one request, and
// first_sent_at_ms.
func (d *batchSlabs) call(r *wireReader, c *ledgerpb.BatchCall) bool {
	for r.pos < r.end {
		f, ok := r.next()
		if !ok {
			return false
		}
		if f.num == 15 && f.typ == protowire.VarintType {
			c.FirstSentAtMs = int64(f.v)
			continue
		}
		if c.Call != nil || f.num < 1 || f.num > 3 || f.typ != protowire.BytesType {
			return false // a second request is merged by proto; other kinds and fields are proto's too
		}
		in := wireReader{b: r.b, s: r.s, pos: f.lo, end: f.hi}
		switch f.num {
		case 1:
			h, w := take(&d.holds), take(&d.holdW)
			if !in.hold(h, &d.seats) {
				return false
			}
			w.Hold, c.Call = h, w
		case 2:
			cf, w := take(&d.confirms), take(&d.confirmW)
			if !in.confirm(cf) {
				return false
			}
			w.Confirm, c.Call = cf, w
		case 3:
			rl, w := take(&d.releases), take(&d.releaseW)
			if !in.release(rl) {
				return false
			}
			w.Release, c.Call = rl, w
		}
	}
	return true
}

// wireReader reads the fields of b[pos:end]; s, when set, is b as a
// string, from which str takes its strings.
type wireReader struct {
	b        []byte
	s        string
	pos, end int
}

// wireField is a field read: a varint's value, or the range of a
// length-delimited field's bytes in the reader's b.
type wireField struct {
	num    protowire.Number
	typ    protowire.Type
	v      uint64
	lo, hi int
}

// next reads one field; false for bytes that do not parse and for wire
// types other than varint and length-delimited. Tags and lengths below
// 128, nearly all of a batch's, take the short way.
func (r *wireReader) next() (wireField, bool) {
	var f wireField
	p := r.pos
	if p >= r.end {
		return f, false
	}
	var tag uint64
	if c := r.b[p]; c < 0x80 {
		tag, p = uint64(c), p+1
	} else {
		v, n := protowire.ConsumeVarint(r.b[p:r.end])
		if n < 0 {
			return f, false
		}
		tag, p = v, p+n
	}
	if tag>>3 == 0 || tag>>3 > uint64(protowire.MaxValidNumber) {
		return f, false
	}
	f.num, f.typ = protowire.Number(tag>>3), protowire.Type(tag&7)
	var v uint64
	if p < r.end && r.b[p] < 0x80 {
		v, p = uint64(r.b[p]), p+1
	} else {
		var n int
		v, n = protowire.ConsumeVarint(r.b[p:r.end])
		if n < 0 {
			return f, false
		}
		p += n
	}
	switch f.typ {
	case protowire.VarintType:
		f.v = v
	case protowire.BytesType:
		if v > uint64(r.end-p) {
			return f, false
		}
		f.lo, f.hi = p, p+int(v)
		p = f.hi
	default:
		return f, false
	}
	r.pos = p
	return f, true
}

// str is a string field's value; false if it is not length-delimited or
// not UTF-8, which proto3 strings must be.
func (r *wireReader) str(f wireField) (string, bool) {
	if f.typ != protowire.BytesType {
		return "", false
	}
	s := r.s[f.lo:f.hi]
	return s, utf8.ValidString(s)
}

// hold fills h from the reader's fields, its seat ids appended to
// *seats; false for a field it does not know or that is not valid.
func (r *wireReader) hold(h *ledgerpb.HoldRequest, seats *[]string) bool {
	first := len(*seats)
	for r.pos < r.end {
		f, ok := r.next()
		if !ok {
			return false
		}
		var s string
		switch f.num {
		case 5, 6, 8: // uint32, uint32, bool
			if f.typ != protowire.VarintType {
				return false
			}
		case 1, 2, 3, 4, 7, 50:
			if s, ok = r.str(f); !ok {
				return false
			}
		default:
			return false
		}
		switch f.num {
		case 1:
			h.ShowId = s
		case 2:
			*seats = append(*seats, s)
		case 3:
			h.ClientId = s
		case 4:
			h.RequestId = s
		case 5:
			h.TtlSeconds = uint32(f.v)
		case 6:
			h.Count = uint32(f.v)
		case 7:
			h.Category = s
		case 8:
			h.Wait = protowire.DecodeBool(f.v)
		case 50:
			h.AdmissionToken = s
		}
	}
	if n := len(*seats); n > first {
		// Capped: an append to one hold's seats never writes another's.
		h.SeatIds = (*seats)[first:n:n]
	}
	return true
}

// strings reads a request of string fields numbered 1..len(dst) into dst;
// false for another field or one that is not valid.
func (r *wireReader) strings(dst ...*string) bool {
	for r.pos < r.end {
		f, ok := r.next()
		if !ok || f.num < 1 || int(f.num) > len(dst) {
			return false
		}
		s, ok := r.str(f)
		if !ok {
			return false
		}
		*dst[f.num-1] = s
	}
	return true
}

func (r *wireReader) confirm(c *ledgerpb.ConfirmRequest) bool {
	return r.strings(&c.ShowId, &c.HoldId, &c.PaymentRef, &c.ClientId, &c.RequestId, &c.HoldToken)
}

func (r *wireReader) release(c *ledgerpb.ReleaseRequest) bool {
	return r.strings(&c.ShowId, &c.HoldId, &c.ClientId, &c.RequestId, &c.HoldToken)
}
