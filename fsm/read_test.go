// This file proves that holdTiming, the partial decoder the seat map uses
// for the holds on its seats, never panics and reads exactly what a full
// decode of a HoldRecord reads.
package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func FuzzHoldTiming(f *testing.F) {
	for _, h := range []*ledgerpb.HoldRecord{
		{},
		{HoldId: "h1-2-3", ShowId: "s", SeatIds: []string{"A1", "A2"}, ExpiresAtMs: 1_700_000_300_000, State: ledgerpb.HoldState_HOLD_STATE_HELD},
		{HoldId: "h", State: ledgerpb.HoldState_HOLD_STATE_EXPIRED, ExpiresAtMs: -1, ClosedAtMs: 5, Revision: 9},
		{State: ledgerpb.HoldState(-7), ExpiresAtMs: ClockMaxMs + HoldTTLMaxMs},
	} {
		b, err := proto.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x38, 0x01, 0x38, 0x02})       // state twice: the last wins
	f.Add([]byte{0x32, 0x01, 0x00, 0x38, 0x03}) // expires_at_ms with the wrong wire type
	f.Fuzz(func(t *testing.T, b []byte) {
		state, expiresAt, err := holdTiming(b)
		var h ledgerpb.HoldRecord
		if proto.Unmarshal(b, &h) != nil {
			return // holdTiming may accept what a full decode refuses (bad UTF-8)
		}
		if err != nil || state != h.State || expiresAt != h.ExpiresAtMs {
			t.Fatalf("holdTiming(%x) = %v, %d, %v; want %v, %d (proto.Unmarshal)", b, state, expiresAt, err, h.State, h.ExpiresAtMs)
		}
	})
}
