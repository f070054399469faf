// This file measures how lanes let one sink keep up with a group: one read
// of the change log (64 entries over 16 shows) sent to a sink that answers
// each request after 1 ms, one lane against LanesDefault.
package delivery

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// slowSink takes every event after a round trip.
type slowSink struct{ rtt time.Duration }

func (slowSink) id() string        { return "slow" }
func (slowSink) wants(string) bool { return true }
func (s slowSink) send(ctx context.Context, _ *Event, _ []byte) error {
	return sleepErr(ctx, s.rtt)
}

func sleepErr(ctx context.Context, d time.Duration) error {
	if !sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

func BenchmarkSendRead(b *testing.B) {
	var recs []fsm.ShowEvent
	for rev := uint64(1); rev <= 64; rev++ {
		recs = append(recs, fsm.ShowEvent{ShowID: fmt.Sprint("show-", rev%16), SeatEvent: fsm.SeatEvent{Revision: rev,
			HoldChanges: []*ledgerpb.WebhookHoldChange{{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED, HoldId: "h"}}}})
	}
	for _, lanes := range []int{1, LanesDefault} {
		b.Run(fmt.Sprint("lanes=", lanes), func(b *testing.B) {
			d := &Deliverer{cfg: Config{Lanes: lanes}.withDefaults(), m: newMetrics(), log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			r := &groupRunner{d: d}
			s := slowSink{rtt: time.Millisecond}
			start := time.Now()
			for b.Loop() {
				if !r.sendRead(b.Context(), s, lanesOf(1, s, recs, lanes)) {
					b.Fatal("sendRead stopped")
				}
			}
			b.ReportMetric(float64(b.N*len(recs))/time.Since(start).Seconds(), "events/s")
		})
	}
}
