package main

import (
	"context"
	"strconv"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// uniform spreads holds over many shows so that seat supply does not limit
// the run: each worker holds a random run of 1-4 adjacent seats of a random
// show (TTL 5 min), then confirms half of its holds, releases a fifth and
// leaves the rest held. Each hold is a new fan with its own client id, which
// its confirm or release reuses, as on a booking site: the ledger keeps
// state per client (live holds per show, request records), and a few fixed
// ids would hide its cost. --fixed-clients sends every hold of a worker
// under the worker's one id instead.
type uniform struct {
	shows []string
}

// uniformTTLSeconds is the hold TTL of the uniform workload.
const uniformTTLSeconds = 300

func (u *uniform) mainCall() string { return "hold" }

func (u *uniform) setup(ctx context.Context, e *env) error {
	u.shows = make([]string, e.cfg.shows)
	for i := range u.shows {
		u.shows[i] = e.showID("u", i)
	}
	return e.createShows(ctx, u.shows, e.cfg.seats)
}

func (u *uniform) run(ctx context.Context, e *env) time.Duration {
	hold, confirm, release := e.stats.call("hold"), e.stats.call("confirm"), e.stats.call("release")
	seats := e.cfg.seats
	return e.runWorkers(ctx, e.cfg.clients, e.cfg.duration, func(ctx context.Context, w *worker) {
		for fans := uint64(1); !w.stopped(); fans++ {
			fan := fanID(w.client, fans, e.cfg.fixedClients)
			req := &ledgerpb.HoldRequest{ShowId: u.shows[w.rng.IntN(len(u.shows))], ClientId: fan,
				RequestId: w.requestID(), TtlSeconds: uniformTTLSeconds}
			req.SeatIds = randomRun(w, seats, 1+w.rng.IntN(4))
			var resp *ledgerpb.HoldResponse
			err := hold.run(ctx, func(ctx context.Context) (err error) {
				resp, err = w.api.Hold(ctx, req)
				return err
			})
			if err != nil {
				continue
			}
			switch p := w.rng.IntN(10); {
			case p < 5:
				creq := &ledgerpb.ConfirmRequest{ShowId: req.ShowId, HoldId: resp.HoldId, HoldToken: resp.HoldToken, PaymentRef: "pay-" + resp.HoldId,
					ClientId: fan, RequestId: w.requestID()}
				confirm.run(ctx, func(ctx context.Context) error { _, err := w.api.Confirm(ctx, creq); return err })
			case p < 7:
				rreq := &ledgerpb.ReleaseRequest{ShowId: req.ShowId, HoldId: resp.HoldId, HoldToken: resp.HoldToken, ClientId: fan, RequestId: w.requestID()}
				release.run(ctx, func(ctx context.Context) error { _, err := w.api.Release(ctx, rreq); return err })
			}
		}
	})
}

// fanID is the client id of a worker's n-th fan (n from 1): the worker's
// client id with the fan's number, or, when fixed, the worker's id itself.
// Worker ids are "<prefix>-c<worker>", so no two fans of a run share an id.
func fanID(worker string, n uint64, fixed bool) string {
	if fixed {
		return worker
	}
	return worker + "-f" + strconv.FormatUint(n, 36)
}

// randomRun picks n adjacent seats of one row of a show with seats seats in
// rows of rowSeats (a shorter last row is fine).
func randomRun(w *worker, seats, n int) []string {
	rows := (seats + rowSeats - 1) / rowSeats
	r := w.rng.IntN(rows)
	width := min(rowSeats, seats-r*rowSeats)
	n = min(n, width)
	first := w.rng.IntN(width - n + 1)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = seatID(r, first+i)
	}
	return ids
}

func (u *uniform) check(ctx context.Context, e *env) {
	for _, c := range e.stats.summarize(time.Second) {
		if c.Name == "hold" {
			errs := uint64(0)
			for _, n := range c.Errors {
				errs += n
			}
			e.addCheck("hold_errors", errs == 0, "%d of %d holds failed with an error other than SEATS_TAKEN", errs, c.Attempts)
		}
	}
}
