// This file proves that appendRequestRecord, appendHoldRecord and
// appendPayload write the bytes the protobuf runtime's deterministic
// encoding writes, for random records and commands: every field set or
// zero, negative numbers, unknown enum values, empty repeated entries, and
// messages with nested messages or strings that are not UTF-8, which go to
// the runtime; and that none misses a field the messages gain.
package fsm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestAppendRequestRecordMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	str := func() string {
		switch rng.IntN(5) {
		case 0:
			return ""
		case 1:
			return "ü-€-" + string(rune('a'+rng.IntN(26)))
		default:
			b := make([]byte, rng.IntN(200))
			for i := range b {
				b[i] = byte('0' + rng.IntN(75))
			}
			return string(b)
		}
	}
	strs := func() []string {
		if rng.IntN(3) == 0 {
			return nil
		}
		ss := make([]string, rng.IntN(12))
		for i := range ss {
			ss[i] = str()
		}
		return ss
	}
	i64 := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return -rng.Int64N(math.MaxInt64)
		case 2:
			return math.MinInt64
		default:
			return rng.Int64()
		}
	}
	u32 := func() uint32 { return []uint32{0, 1, 127, 128, math.MaxUint32, rng.Uint32()}[rng.IntN(6)] }
	u64 := func() uint64 { return []uint64{0, 1, 300, math.MaxUint64, rng.Uint64()}[rng.IntN(5)] }
	viaRuntime := 0
	for i := range 5000 {
		rec := &ledgerpb.RequestRecord{AppliedAtMs: i64()}
		if rng.IntN(4) > 0 {
			rec.PayloadHash = []byte(str())
		}
		if rng.IntN(8) > 0 {
			rec.Result = &ledgerpb.Result{
				Code: ledgerpb.Code(int32(i64())), Message: str(), Field: str(), SeatIds: strs(), HoldId: str(),
				ExpiresAtMs: i64(), HoldState: ledgerpb.HoldState(int32(i64())), Revision: u64(), AppliedAtMs: i64(),
				AmountMinor: i64(), Currency: str(), Replayed: rng.IntN(2) == 0, Expired: u32(), HoldToken: str(),
				AlternativeSeatIds: strs(), Limit: u32(), MaxExpiresAtMs: i64(), QueueEntryId: str(),
				QueuePosition: u32(), QueueToken: str(), SeatsAhead: u32(), RoomEntryToken: str(),
				RoomPosition: u64(), RoomPeopleAhead: u64(), Admitted: u32(), RoomAdmitPerSecond: u32(),
			}
			switch rng.IntN(20) {
			case 0:
				rec.Result.RoomEntry = &ledgerpb.RoomEntryRecord{EntryId: str(), ClientId: str()}
			case 1:
				rec.Result.Room = &ledgerpb.RoomRecord{}
			case 2:
				rec.Result.RoomAuto = &ledgerpb.RoomAutoRecord{}
			}
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		prefix := []byte("prefix")
		got := appendRequestRecord(bytes.Clone(prefix), rec)
		if !bytes.Equal(got[:len(prefix)], prefix) || !bytes.Equal(got[len(prefix):], want) {
			t.Fatalf("record %d: appendRequestRecord =\n%x\nwant\n%x", i, got[len(prefix):], want)
		}
		if !plainResult(rec.Result) {
			viaRuntime++
		}
	}
	if viaRuntime == 0 {
		t.Fatal("no record went to the runtime")
	}
	for _, r := range []*ledgerpb.Result{{Message: "\xff"}, {SeatIds: []string{"A1", "\xc3"}}, {AlternativeSeatIds: []string{"\x80"}}} {
		if plainResult(r) {
			t.Errorf("plainResult(%q) = true for a string that is not UTF-8", r)
		}
	}
}

// TestAppendHoldRecordMatchesProto: hold records encoded by hand are the
// runtime's bytes, for random records, and those the runtime refuses go
// to it.
func TestAppendHoldRecordMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	str := func() string {
		return []string{"", "ü-€", "\xff", "h1-23-4", fmt.Sprint(rng.Int64())}[rng.IntN(5)]
	}
	i64 := func() int64 { return []int64{0, -1, math.MinInt64, math.MaxInt64, rng.Int64()}[rng.IntN(5)] }
	handled, refused := 0, 0
	for i := range 5000 {
		h := &ledgerpb.HoldRecord{HoldId: str(), ShowId: str(), ClientId: str(), CreatedAtMs: i64(), ExpiresAtMs: i64(),
			State: ledgerpb.HoldState(int32(i64())), PaymentRef: str(), AmountMinor: i64(), Currency: str(), ClosedAtMs: i64(),
			Revision: uint64(i64()), RefundedAtMs: i64(), RefundReason: str()}
		for range rng.IntN(5) {
			h.SeatIds = append(h.SeatIds, str())
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(h)
		if err != nil {
			refused++
			if !panics(func() { appendHoldRecord(nil, h) }) {
				t.Fatalf("record %d (%v): the runtime refuses it (%v), appendHoldRecord does not", i, h, err)
			}
			continue
		}
		handled++
		if got := appendHoldRecord([]byte("x"), h); got[0] != 'x' || !bytes.Equal(got[1:], want) {
			t.Fatalf("record %d (%v): appendHoldRecord =\n%x\nwant\n%x", i, h, got[1:], want)
		}
	}
	if handled == 0 || refused == 0 {
		t.Fatalf("%d records encoded, %d refused: want both", handled, refused)
	}
}

func panics(fn func()) (p bool) {
	defer func() { p = recover() != nil }()
	fn()
	return false
}

// TestAppendPayloadMatchesProto: the payloads hashed by hand are the
// runtime's bytes, for random holds, confirms, releases and extends, and
// for the commands that go to the runtime.
func TestAppendPayloadMatchesProto(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	str := func() string {
		switch rng.IntN(6) {
		case 0:
			return ""
		case 1:
			return "\xff" // not UTF-8: the runtime refuses it
		case 2:
			return "ü-€"
		default:
			return fmt.Sprintf("s%d", rng.Int64())
		}
	}
	i64 := func() int64 { return []int64{0, -1, math.MinInt64, math.MaxInt64, rng.Int64()}[rng.IntN(5)] }
	handled, viaRuntime := 0, 0
	for i := range 5000 {
		c := &ledgerpb.Command{ClientId: str(), RequestId: str()}
		if rng.IntN(3) == 0 {
			c.ProposedAtMs, c.FirstSentAtMs = i64(), i64()
		}
		switch rng.IntN(6) {
		case 0:
			h := &ledgerpb.HoldCmd{ShowId: str(), TtlMs: i64(), Count: rng.Uint32() >> rng.IntN(33), Category: str(),
				Wait: rng.IntN(2) == 0, AdmissionToken: str()}
			for range rng.IntN(4) {
				h.SeatIds = append(h.SeatIds, str())
			}
			c.Op = &ledgerpb.Command_Hold{Hold: h}
		case 1:
			c.Op = &ledgerpb.Command_Confirm{Confirm: &ledgerpb.ConfirmCmd{ShowId: str(), HoldId: str(), PaymentRef: str(), HoldToken: str()}}
		case 2:
			c.Op = &ledgerpb.Command_Release{Release: &ledgerpb.ReleaseCmd{ShowId: str(), HoldId: str(), HoldToken: str()}}
		case 3:
			c.Op = &ledgerpb.Command_Extend{Extend: &ledgerpb.ExtendCmd{ShowId: str(), HoldId: str(), HoldToken: str(), TtlMs: i64()}}
		case 4:
			c.Op = &ledgerpb.Command_Refund{Refund: &ledgerpb.RefundCmd{ShowId: str(), HoldId: str()}}
		default:
			c.Op = &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{}}
		}
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(c)
		if !plainPayload(c) {
			viaRuntime++
			continue // the runtime's own path (its error, for a string that is not UTF-8)
		}
		handled++
		if err != nil {
			t.Fatalf("command %d: plainPayload accepts %v, which the runtime refuses: %v", i, c, err)
		}
		got := appendPayload([]byte("x"), c)
		if got[0] != 'x' || !bytes.Equal(got[1:], want) {
			t.Fatalf("command %d (%v): appendPayload =\n%x\nwant\n%x", i, c, got[1:], want)
		}
	}
	if handled == 0 || viaRuntime == 0 {
		t.Fatalf("%d commands encoded by hand, %d by the runtime: want both", handled, viaRuntime)
	}
}

// TestEncodersByHandKnowEveryField fails when a message encoded by hand
// gains a field: appendRequestRecord, appendHoldRecord or appendPayload
// must learn it (or send what sets it to the runtime) before it may be
// set. A new op changes Command's fields too: it goes to the runtime, but
// the list here must learn it.
func TestEncodersByHandKnowEveryField(t *testing.T) {
	known := map[string][]int{
		"RequestRecord": {1, 2, 3},
		"Result":        {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 50, 51, 52, 53, 54, 55, 56, 57},
		// The payloads (appendPayload): the envelope's fields, and its
		// op's for the four ops it encodes.
		"Command":    {1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 30, 40, 50, 51, 52, 60, 61},
		"HoldCmd":    {1, 2, 3, 4, 5, 6, 50},
		"ConfirmCmd": {1, 2, 3, 4},
		"ReleaseCmd": {1, 2, 3},
		"ExtendCmd":  {1, 2, 3, 4},
		"HoldRecord": {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
	}
	for _, m := range []proto.Message{&ledgerpb.RequestRecord{}, &ledgerpb.Result{}, &ledgerpb.Command{},
		&ledgerpb.HoldCmd{}, &ledgerpb.ConfirmCmd{}, &ledgerpb.ReleaseCmd{}, &ledgerpb.ExtendCmd{}, &ledgerpb.HoldRecord{}} {
		d := m.ProtoReflect().Descriptor()
		var nums []int
		for i := range d.Fields().Len() {
			nums = append(nums, int(d.Fields().Get(i).Number()))
		}
		slices.Sort(nums)
		if want := known[string(d.Name())]; !slices.Equal(nums, want) {
			t.Errorf("%s has fields %v; appendRequestRecord knows %v", d.Name(), nums, want)
		}
	}
}

// BenchmarkRequestRecord encodes a successful hold's request record, by
// hand and through the runtime.
func BenchmarkRequestRecord(b *testing.B) {
	rec := &ledgerpb.RequestRecord{PayloadHash: bytes.Repeat([]byte{7}, 16), AppliedAtMs: 1_700_000_000_000,
		Result: &ledgerpb.Result{HoldId: "h1-123456-2", SeatIds: []string{"C7", "C8", "C9"}, ExpiresAtMs: 1_700_000_300_000,
			HoldState: ledgerpb.HoldState_HOLD_STATE_HELD, Revision: 123456, AppliedAtMs: 1_700_000_000_000, AmountMinor: 3000,
			Currency: "EUR", HoldToken: "0123456789abcdefghijkl", MaxExpiresAtMs: 1_700_003_600_000}}
	buf := make([]byte, 0, 512)
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			buf = appendRequestRecord(buf[:0], rec)
		}
	})
	b.Run("runtime", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			buf, err = proto.MarshalOptions{Deterministic: true}.MarshalAppend(buf[:0], rec)
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}
