package main

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// lifecycle drives every end of a hold with short TTLs: each hold is
// confirmed (40%), released (30%) or abandoned (30%). Once an abandoned
// hold's expiry has passed, its client tries to confirm it, which must fail
// with HOLD_EXPIRED (confirm_expired), and then holds the same seats again
// (rehold), which succeeds unless another client took them meanwhile. At the
// end, after the TTL has passed, no seat may be held and exactly the
// confirmed seats are booked.
type lifecycle struct {
	shows     []string
	confirmed atomic.Int64 // seats of acknowledged confirms
	unknown   atomic.Int64 // confirms that failed with an error: outcome not known
}

// expiredSlack is how long after a hold's expiry (client clock, same host as
// the leaders) its client treats it as surely expired by leader time.
const expiredSlack = 250 * time.Millisecond

// abandoned is a hold left to expire.
type abandoned struct {
	show    string
	hold    string
	token   string
	seats   []string
	expires time.Time
}

func (l *lifecycle) mainCall() string { return "hold" }

func (l *lifecycle) setup(ctx context.Context, e *env) error {
	l.shows = make([]string, e.cfg.shows)
	for i := range l.shows {
		l.shows[i] = e.showID("l", i)
	}
	return e.createShows(ctx, l.shows, e.cfg.seats)
}

func (l *lifecycle) run(ctx context.Context, e *env) time.Duration {
	return e.runWorkers(ctx, e.cfg.clients, e.cfg.duration, func(ctx context.Context, w *worker) {
		var left []abandoned
		for !w.stopped() {
			if len(left) > 0 && time.Now().After(left[0].expires.Add(expiredSlack)) {
				a := left[0]
				left = left[1:]
				if l.confirmExpired(ctx, e, w, a) {
					if ab, ok := l.holdAndEnd(ctx, e, w, "rehold", a.show, a.seats); ok {
						left = append(left, ab)
					}
				}
				continue
			}
			show := l.shows[w.rng.IntN(len(l.shows))]
			if ab, ok := l.holdAndEnd(ctx, e, w, "hold", show, randomRun(w, e.cfg.seats, 1+w.rng.IntN(4))); ok {
				left = append(left, ab)
			}
		}
	})
}

// confirmExpired confirms an abandoned hold after its expiry: the ledger
// must answer HOLD_EXPIRED.
func (l *lifecycle) confirmExpired(ctx context.Context, e *env, w *worker, a abandoned) bool {
	req := &ledgerpb.ConfirmRequest{ShowId: a.show, HoldId: a.hold, HoldToken: a.token, PaymentRef: "late-" + a.hold, ClientId: w.client, RequestId: w.requestID()}
	err := e.stats.call("confirm_expired").run(ctx, func(ctx context.Context) error {
		_, err := w.api.Confirm(ctx, req)
		return err
	}, "HOLD_EXPIRED")
	if err == nil {
		l.confirmed.Add(int64(len(a.seats))) // wrong, and counted as such; keep the books right
	}
	return reasonOf(err) == "HOLD_EXPIRED"
}

// holdAndEnd holds seats, then confirms, releases or abandons the hold. It
// returns the hold when abandoned.
func (l *lifecycle) holdAndEnd(ctx context.Context, e *env, w *worker, call, show string, seats []string) (abandoned, bool) {
	req := &ledgerpb.HoldRequest{ShowId: show, SeatIds: seats, ClientId: w.client, RequestId: w.requestID(),
		TtlSeconds: uint32(e.cfg.ttl / time.Second)}
	var resp *ledgerpb.HoldResponse
	if err := e.stats.call(call).run(ctx, func(ctx context.Context) (err error) { resp, err = w.api.Hold(ctx, req); return err }); err != nil {
		return abandoned{}, false
	}
	switch p := w.rng.IntN(10); {
	case p < 4:
		creq := &ledgerpb.ConfirmRequest{ShowId: show, HoldId: resp.HoldId, HoldToken: resp.HoldToken, PaymentRef: "pay-" + resp.HoldId, ClientId: w.client, RequestId: w.requestID()}
		err := e.stats.call("confirm").run(ctx, func(ctx context.Context) error { _, err := w.api.Confirm(ctx, creq); return err })
		switch {
		case err == nil:
			l.confirmed.Add(int64(len(seats)))
		case reasonOf(err) != "HOLD_EXPIRED":
			l.unknown.Add(1)
		}
	case p < 7:
		rreq := &ledgerpb.ReleaseRequest{ShowId: show, HoldId: resp.HoldId, HoldToken: resp.HoldToken, ClientId: w.client, RequestId: w.requestID()}
		e.stats.call("release").run(ctx, func(ctx context.Context) error { _, err := w.api.Release(ctx, rreq); return err })
	default:
		return abandoned{show: show, hold: resp.HoldId, token: resp.HoldToken, seats: seats, expires: resp.ExpiresAt.AsTime()}, true
	}
	return abandoned{}, false
}

func (l *lifecycle) check(ctx context.Context, e *env) {
	// Every hold left is due within the TTL; the leaders' expiry drivers
	// free them a tick later.
	select {
	case <-ctx.Done():
		return
	case <-time.After(e.cfg.ttl + time.Second):
	}
	var held, booked atomic.Int64
	err := e.parallel(ctx, len(l.shows), func(ctx context.Context, i int, a api) error {
		var sm *ledgerpb.SeatMap
		err := e.stats.call("final_read").run(ctx, func(ctx context.Context) (err error) {
			sm, err = a.SeatMap(ctx, l.shows[i], ledgerpb.Consistency_LINEARIZABLE)
			return err
		})
		if err == nil {
			held.Add(int64(sm.Held))
			booked.Add(int64(sm.Booked))
		}
		return err
	})
	if err != nil {
		e.addCheck("final_reads", false, "%v", err)
		return
	}
	e.addCheck("all_expired", held.Load() == 0, "%d seats still held %v after the TTL", held.Load(), e.cfg.ttl+time.Second)
	unknown := l.unknown.Load()
	e.addCheck("booked_equals_confirmed", booked.Load() == l.confirmed.Load() || unknown > 0,
		"%d seats booked, %d confirmed to clients (%d confirms with unknown outcome)", booked.Load(), l.confirmed.Load(), unknown)
}
