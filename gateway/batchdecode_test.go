package gateway

import (
	"fmt"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// sampleBatch is a batch as a booking site sends one under load: holds,
// confirms and releases of different fans.
func sampleBatch(n int) *ledgerpb.BatchRequest {
	req := &ledgerpb.BatchRequest{}
	for i := range n {
		c := &ledgerpb.BatchCall{}
		switch i % 10 {
		case 0, 1, 2, 3, 4, 5:
			c.Call = &ledgerpb.BatchCall_Hold{Hold: &ledgerpb.HoldRequest{ShowId: fmt.Sprintf("show-%d", i*37),
				SeatIds: []string{"A-1", "A-2"}, ClientId: fmt.Sprintf("fan-%08d", i), RequestId: fmt.Sprintf("req-%016x", i)}}
		case 6, 7, 8:
			c.Call = &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: "show-1", HoldId: "h1-12345-2",
				PaymentRef: "pay-1", ClientId: "fan-1", RequestId: "req-2", HoldToken: "tokentokentokentokentokentokenaa"}}
		default:
			c.Call = &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{ShowId: "show-1", HoldId: "h1-12345-2",
				ClientId: "fan-1", RequestId: "req-3", HoldToken: "tokentokentokentokentokentokenaa"}}
		}
		if i%4 == 0 {
			c.FirstSentAtMs = 1_700_000_000_000 + int64(i)
		}
		req.Calls = append(req.Calls, c)
	}
	return req
}

// checkDecodeBatch decodes b both ways: where decodeBatch takes it, the
// message must equal proto.Unmarshal's, which must accept it.
func checkDecodeBatch(t *testing.T, b []byte) (taken bool) {
	t.Helper()
	want := &ledgerpb.BatchRequest{}
	werr := proto.Unmarshal(b, want)
	got := &ledgerpb.BatchRequest{}
	if !decodeBatch(b, got) {
		if len(got.Calls) != 0 {
			t.Fatalf("decodeBatch declined %x but set %d calls", b, len(got.Calls))
		}
		return false
	}
	if werr != nil {
		t.Fatalf("decodeBatch took %x, which proto.Unmarshal refuses: %v", b, werr)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decodeBatch(%x) = %v, proto.Unmarshal gives %v", b, got, want)
	}
	// The strings are the decoder's own: the input may be reused.
	for i := range b {
		b[i] ^= 0xff
	}
	if !proto.Equal(got, want) {
		t.Fatalf("decodeBatch's message changed with its input")
	}
	return true
}

func TestDecodeBatch(t *testing.T) {
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	msg := func(b []byte, num protowire.Number, body []byte) []byte {
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), body)
	}
	str := func(num protowire.Number, s string) []byte { return msg(nil, num, []byte(s)) }
	hold := msg(msg(str(1, "s"), 2, []byte("A-1")), 2, []byte("A-2"))
	taken := []struct {
		name string
		b    []byte
	}{
		{"sample", must(proto.Marshal(sampleBatch(23)))},
		{"empty batch", nil},
		{"empty call", msg(nil, 1, nil)},
		{"empty hold", msg(nil, 1, msg(nil, 1, nil))},
		{"hold of two seats", msg(nil, 1, msg(nil, 1, hold))},
		{"a string given twice: the last wins", msg(nil, 1, msg(nil, 2, append(str(1, "x"), str(1, "y")...)))},
		{"hold's scalars", msg(nil, 1, msg(nil, 1, protowire.AppendVarint(tag(protowire.AppendVarint(tag(
			protowire.AppendVarint(tag(str(50, "tok"), 5, protowire.VarintType), 1<<33|7), 6, protowire.VarintType), 3),
			8, protowire.VarintType), 2)))},
		{"first sent before the call", msg(nil, 1, msg(protowire.AppendVarint(tag(nil, 15, protowire.VarintType), 5), 3, str(5, "t")))},
	}
	for _, c := range taken {
		t.Run(c.name, func(t *testing.T) {
			if !checkDecodeBatch(t, c.b) {
				t.Fatalf("decodeBatch declined %x", c.b)
			}
		})
	}
	declined := []struct {
		name string
		b    []byte
	}{
		{"an extend call", msg(nil, 1, msg(nil, 4, str(1, "s")))},
		{"two requests in a call", msg(nil, 1, append(msg(nil, 1, nil), msg(nil, 2, nil)...))},
		{"an unknown field in a hold", msg(nil, 1, msg(nil, 1, str(9, "x")))},
		{"an unknown field in the batch", str(2, "x")},
		{"a scalar as bytes", msg(nil, 1, msg(nil, 1, str(5, "x")))},
		{"a string as a varint", msg(nil, 1, msg(nil, 2, protowire.AppendVarint(tag(nil, 1, protowire.VarintType), 1)))},
		{"invalid UTF-8", msg(nil, 1, msg(nil, 3, str(1, "\xff")))},
		{"a truncated call", msg(nil, 1, msg(nil, 1, hold))[:8]},
		{"a fixed64 field", msg(nil, 1, protowire.AppendFixed64(tag(nil, 15, protowire.Fixed64Type), 1))},
	}
	for _, c := range declined {
		t.Run(c.name, func(t *testing.T) {
			if checkDecodeBatch(t, c.b) {
				t.Fatalf("decodeBatch took %x", c.b)
			}
		})
	}
	// A message that already holds calls is merged into: proto's business.
	m := &ledgerpb.BatchRequest{Calls: []*ledgerpb.BatchCall{{}}}
	if decodeBatch(msg(nil, 1, nil), m) {
		t.Fatal("decodeBatch decoded into a message with calls")
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func FuzzDecodeBatch(f *testing.F) {
	f.Add(must(proto.Marshal(sampleBatch(3))))
	f.Add(must(proto.Marshal(sampleBatch(12))))
	f.Add([]byte{0x0a, 0x02, 0x0a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkDecodeBatch(t, b)
	})
}

// BenchmarkDecodeBatch decodes a batch of 23 calls, seatbench's mean
// under the uniform load, with decodeBatch and with proto.Unmarshal.
func BenchmarkDecodeBatch(b *testing.B) {
	data := must(proto.Marshal(sampleBatch(23)))
	b.Run("decodeBatch", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !decodeBatch(data, &ledgerpb.BatchRequest{}) {
				b.Fatal("declined")
			}
		}
	})
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := proto.Unmarshal(data, &ledgerpb.BatchRequest{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
