// This file measures what a large live ledger costs the garbage collector:
// 20,000 shows of 200 seats (the uniform load's) with 100,000 holds of two
// seats, half of them confirmed, live while runtime.GC runs.
//
//	go test -run='^$' -bench=LedgerGC -benchtime=10x ./fsm/
package fsm

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func BenchmarkLedgerGC(b *testing.B) {
	const shows, holdsPerShow, batch = 20000, 5, 256
	m := newTestMachine(b, newTestDB(b), 1)
	index := uint64(0)
	var cmds, confirms []*ledgerpb.Command
	// flush applies cmds as one entry; every other new hold is confirmed
	// later.
	flush := func() {
		if len(cmds) == 0 {
			return
		}
		index++
		res := mustApply(b, m, index, at(1000+int64(index), cmdBatch(cmds...)), len(cmds))
		for i, r := range res {
			if r.Code != ledgerpb.Code_CODE_OK {
				b.Fatalf("%v = %s", cmds[i], resultString(r))
			}
			if h := cmds[i].GetHold(); h != nil && len(confirms)%2 == 0 {
				confirms = append(confirms, cmdConfirm(cmds[i].ClientId, "r2", h.ShowId, r.HoldId, "pay"))
			} else if h != nil {
				confirms = append(confirms, nil)
			}
		}
		cmds = cmds[:0]
	}
	add := func(c *ledgerpb.Command) {
		cmds = append(cmds, c)
		if len(cmds) == batch {
			flush()
		}
	}
	rows := "A:20:std,B:20:std,C:20:std,D:20:std,E:20:std,F:20:std,G:20:std,H:20:std,I:20:std,J:20:std"
	for s := range shows {
		add(cmdShow("admin", fmt.Sprintf("r%d", s), testShow(fmt.Sprintf("s%d", s), rows, "std:1000:EUR")))
	}
	flush()
	for s := range shows {
		for h := range holdsPerShow {
			add(cmdHold(fmt.Sprintf("c%d-%d", s, h), "r", fmt.Sprintf("s%d", s), HoldTTLMaxMs,
				fmt.Sprintf("%c1", 'A'+h), fmt.Sprintf("%c2", 'A'+h)))
		}
	}
	flush()
	for _, c := range confirms {
		if c != nil {
			add(c)
		}
	}
	flush()
	if got := m.LiveHolds(); got != shows*holdsPerShow/2 {
		b.Fatalf("%d live holds, want %d", got, shows*holdsPerShow/2)
	}
	runtime.GC()
	runtime.GC()
	samples := []metrics.Sample{{Name: "/gc/scan/heap:bytes"}, {Name: "/gc/heap/objects:objects"}}
	metrics.Read(samples)
	b.ResetTimer()
	var gc time.Duration
	for b.Loop() {
		t0 := time.Now()
		runtime.GC()
		gc += time.Since(t0)
	}
	b.ReportMetric(float64(gc.Microseconds())/1000/float64(b.N), "gc-ms/op")
	b.ReportMetric(float64(samples[0].Value.Uint64())/(1<<20), "scan-MiB")
	b.ReportMetric(float64(samples[1].Value.Uint64())/1e6, "Mobjects")
	runtime.KeepAlive(m)
}
