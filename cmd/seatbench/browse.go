package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// browse reads seat maps of random shows: stale reads (served by any
// replica) and linearizable ones (confirmed by the group's leader), half the
// duration each by default. A quarter of every show's seats are held or
// booked first, so the maps are not all FREE.
type browse struct {
	shows []string
}

func (b *browse) mainCall() string { return "seatmap_stale" }

func (b *browse) setup(ctx context.Context, e *env) error {
	b.shows = make([]string, e.cfg.shows)
	for i := range b.shows {
		b.shows[i] = e.showID("b", i)
	}
	if err := e.createShows(ctx, b.shows, e.cfg.seats); err != nil {
		return err
	}
	return e.parallel(ctx, len(b.shows), func(ctx context.Context, i int, a api) error {
		return occupy(ctx, e, a, b.shows[i], e.cfg.seats/4, fmt.Sprintf("%s-setup-%d", e.cfg.prefix, i))
	})
}

// occupy holds n seats of a show from its first seat on, ten per hold, and
// confirms every other hold.
func occupy(ctx context.Context, e *env, a api, show string, n int, client string) error {
	hold, confirm := e.stats.call("setup_hold"), e.stats.call("setup_confirm")
	for k, seat := 0, 0; seat < n; k++ {
		var ids []string
		for ; len(ids) < 10 && seat < n; seat++ {
			ids = append(ids, seatID(seat/rowSeats, seat%rowSeats))
		}
		// One fan per hold: a client may have only a few live holds per show.
		fan := fmt.Sprintf("%s-%d", client, k)
		req := &ledgerpb.HoldRequest{ShowId: show, SeatIds: ids, ClientId: fan, RequestId: fmt.Sprintf("h%d", k), TtlSeconds: 1800}
		var resp *ledgerpb.HoldResponse
		if err := hold.run(ctx, func(ctx context.Context) (err error) { resp, err = a.Hold(ctx, req); return err }); err != nil {
			return fmt.Errorf("hold %v of %s: %w", ids, show, err)
		}
		if k%2 == 1 {
			creq := &ledgerpb.ConfirmRequest{ShowId: show, HoldId: resp.HoldId, HoldToken: resp.HoldToken, PaymentRef: "p", ClientId: fan, RequestId: fmt.Sprintf("c%d", k)}
			if err := confirm.run(ctx, func(ctx context.Context) error { _, err := a.Confirm(ctx, creq); return err }); err != nil {
				return fmt.Errorf("confirm %s: %w", resp.HoldId, err)
			}
		}
	}
	return nil
}

func (b *browse) run(ctx context.Context, e *env) time.Duration {
	var phases []ledgerpb.Consistency
	switch e.cfg.read {
	case "stale":
		phases = []ledgerpb.Consistency{ledgerpb.Consistency_STALE}
	case "linearizable":
		phases = []ledgerpb.Consistency{ledgerpb.Consistency_LINEARIZABLE}
	default:
		phases = []ledgerpb.Consistency{ledgerpb.Consistency_STALE, ledgerpb.Consistency_LINEARIZABLE}
	}
	var total time.Duration
	for _, c := range phases {
		name := "seatmap_lin"
		if c == ledgerpb.Consistency_STALE {
			name = "seatmap_stale"
		}
		read := func(w *worker) func(context.Context, string, ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
			return w.api.SeatMap
		}
		if e.cfg.seatStates {
			name = strings.Replace(name, "seatmap", "seatstates", 1)
			read = func(w *worker) func(context.Context, string, ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
				return w.api.SeatStates
			}
		}
		call := e.stats.call(name)
		d := e.runWorkers(ctx, e.cfg.clients, e.cfg.duration/time.Duration(len(phases)), func(ctx context.Context, w *worker) {
			for !w.stopped() {
				show := b.shows[w.rng.IntN(len(b.shows))]
				call.run(ctx, func(ctx context.Context) error { _, err := read(w)(ctx, show, c); return err })
			}
		})
		call.window.Store(int64(d))
		total += d
	}
	return total
}

func (b *browse) check(ctx context.Context, e *env) {
	for _, c := range e.stats.summarize(time.Second) {
		errs := uint64(0)
		for _, n := range c.Errors {
			errs += n
		}
		e.addCheck(c.Name+"_errors", errs == 0, "%d of %d reads failed", errs, c.Attempts)
	}
}

// parallel calls fn for 0..n-1 with setupClients concurrent calls and
// returns the first error.
func (e *env) parallel(ctx context.Context, n int, fn func(ctx context.Context, i int, a api) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	var wg sync.WaitGroup
	for k := range min(setupClients, n) {
		a := e.apis[k%len(e.apis)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				mu.Lock()
				failed := first != nil
				mu.Unlock()
				if i >= n || failed {
					return
				}
				if err := fn(ctx, i, a); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return first
}
