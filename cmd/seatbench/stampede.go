package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// stampede is release morning for one show: every fan reads the seat map
// (at most every 50 ms: the whole map once, then its states only), holds the
// two adjacent free seats nearest the centre (one seat when no pair is
// left), and, once it wins, confirms and stops. The run ends when the show
// is sold out. At the end it checks that exactly every seat is booked, each
// by one winner.
//
// How a fan goes on after a conflict is --fans: a map fan reads the map
// again (waiting out the 50 ms) and picks from what it read, as a person
// clicking seats on a page does; a skip fan marks the seats the conflict
// named as taken and holds the next best ones at once, reading again only
// when the 50 ms allow.
type stampede struct {
	show string
	// wl: --watchers SSE watchers of the show (nil: none), which watch
	// the stampede and cost the nodes what a full house of live seat
	// maps costs.
	wl *watchers

	mu struct {
		sync.Mutex
		winners [][]string // seats of each confirmed hold
		unknown int        // confirms whose outcome stayed unknown
	}
	held, booked       atomic.Int64
	soldOut, allBooked atomic.Int64 // ns after the start; 0 = not yet
	start              time.Time
}

// The fans of a stampede (--fans): fansBoth runs the stampede twice, once
// with each.
const (
	fansMap  = "map"
	fansSkip = "skip"
	fansBoth = "both"
)

// stampedeReadEvery is the least time between two seat-map reads of a fan.
const stampedeReadEvery = 50 * time.Millisecond

func (s *stampede) mainCall() string { return "hold" }

func (s *stampede) setup(ctx context.Context, e *env) error {
	s.show = e.showID("stampede", 0)
	if err := e.createShows(ctx, []string{s.show}, e.cfg.seats); err != nil {
		return err
	}
	if e.cfg.watchers == 0 {
		return nil
	}
	if e.tls != nil || e.cluster == nil {
		return fmt.Errorf("--watchers speaks plain HTTP to a local cluster: drop --tls and --endpoints")
	}
	s.wl = &watchers{show: s.show}
	return s.wl.connect(ctx, e, e.cfg.watchers)
}

func (s *stampede) run(ctx context.Context, e *env) time.Duration {
	s.start = time.Now()
	return e.runWorkers(ctx, e.cfg.clients, e.cfg.duration, func(ctx context.Context, w *worker) {
		s.client(ctx, e, w)
	})
}

// client is one fan, from its first read until it wins or the run stops.
func (s *stampede) client(ctx context.Context, e *env, w *worker) {
	holdCall := e.stats.call("hold")
	skip := e.cfg.fans == fansSkip
	var sm *ledgerpb.SeatMap
	var h *hall
	var taken []bool // by seat index: named taken by a conflict since the last read (skip fans)
	var lastRead time.Time
	stale := true // the view is known to be behind: read when allowed
	for !w.stopped() {
		// A map fan reads before every hold; a skip fan only once 50 ms
		// have passed, and holds the next best seats meanwhile.
		if wait := stampedeReadEvery - time.Since(lastRead); stale && (sm == nil || wait <= 0 || !skip) {
			time.Sleep(max(0, wait))
			lastRead = time.Now()
			var err error
			if sm, err = s.read(ctx, e, w, sm); err != nil {
				sm = nil
				continue
			}
			if h == nil || len(h.ids) != len(sm.Seats) {
				h, taken = newHall(sm), make([]bool, len(sm.Seats))
			}
			clear(taken)
			stale = false
			if sm.Free == 0 && sm.Held == 0 {
				return // sold out
			}
		}
		seats := h.pickCentre(sm, taken, w.rng)
		if seats == nil {
			// Nothing free as far as we know: wait for the next read.
			stale = true
			time.Sleep(max(0, stampedeReadEvery-time.Since(lastRead)))
			continue
		}
		req := &ledgerpb.HoldRequest{ShowId: s.show, SeatIds: seats, ClientId: w.client, RequestId: w.requestID()}
		var resp *ledgerpb.HoldResponse
		err := holdCall.run(ctx, func(ctx context.Context) (err error) {
			resp, err = w.api.Hold(ctx, req)
			return err
		})
		if err == nil {
			s.won(ctx, e, w, resp)
			return
		}
		stale = true
		if skip && reasonOf(err) == "SEATS_TAKEN" {
			for _, id := range takenOf(err) {
				if i, ok := h.index[id]; ok {
					taken[i] = true
				}
			}
		}
	}
}

// read returns the show's seat map: the whole map when the fan has none
// yet, else sm with the states of a states-only read (a show's layout never
// changes).
func (s *stampede) read(ctx context.Context, e *env, w *worker, sm *ledgerpb.SeatMap) (*ledgerpb.SeatMap, error) {
	err := e.stats.call("seatmap_stale").run(ctx, func(ctx context.Context) (err error) {
		if sm == nil {
			sm, err = w.api.SeatMap(ctx, s.show, ledgerpb.Consistency_STALE)
			return err
		}
		st, err := w.api.SeatStates(ctx, s.show, ledgerpb.Consistency_STALE)
		if err == nil {
			err = applySeatStates(sm, st)
		}
		return err
	})
	return sm, err
}

// applySeatStates sets the states of sm's seats from a states-only read.
func applySeatStates(sm, st *ledgerpb.SeatMap) error {
	if len(st.SeatStates) != len(sm.Seats) {
		return &apiError{Reason: "BAD_SEAT_STATES", Msg: fmt.Sprintf("%d seat states for %d seats", len(st.SeatStates), len(sm.Seats))}
	}
	for i := range sm.Seats {
		sm.Seats[i].State = fsm.SeatStateOfLetter(st.SeatStates[i])
	}
	sm.Free, sm.Held, sm.Booked, sm.Revision = st.Free, st.Held, st.Booked, st.Revision
	return nil
}

// won records a winning hold and confirms it.
func (s *stampede) won(ctx context.Context, e *env, w *worker, resp *ledgerpb.HoldResponse) {
	total := int64(e.cfg.seats)
	if s.held.Add(int64(len(resp.SeatIds))) == total {
		s.soldOut.Store(int64(time.Since(s.start)))
	}
	req := &ledgerpb.ConfirmRequest{ShowId: s.show, HoldId: resp.HoldId, HoldToken: resp.HoldToken, PaymentRef: "pay-" + resp.HoldId,
		ClientId: w.client, RequestId: w.requestID()}
	var cresp *ledgerpb.ConfirmResponse
	err := e.stats.call("confirm").run(ctx, func(ctx context.Context) (err error) {
		cresp, err = w.api.Confirm(ctx, req)
		return err
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.mu.unknown++
		return
	}
	s.mu.winners = append(s.mu.winners, cresp.SeatIds)
	if s.booked.Add(int64(len(cresp.SeatIds))) == total {
		s.allBooked.Store(int64(time.Since(s.start)))
	}
}

// hall is a show's seat geometry, computed once per client from its first
// full seat map (a layout never changes), so that choosing seats on every
// attempt walks arrays instead of building maps: the load generator shares
// the machine with the nodes, and pickCentre was a fifth of its CPU.
type hall struct {
	ids    []string
	row    []float64
	num    []float64 // seat number
	right  []int     // index of the next seat in the same row, -1 if none
	cr, cn float64   // the hall's centre
	index  map[string]int
}

func newHall(sm *ledgerpb.SeatMap) *hall {
	h := &hall{index: make(map[string]int, len(sm.Seats))}
	rows := map[string]int{}
	at := map[[2]int]int{} // row, number -> seat index
	width := 0
	for i, st := range sm.Seats {
		r, ok := rows[st.Row]
		if !ok {
			r = len(rows)
			rows[st.Row] = r
		}
		width = max(width, int(st.Number))
		h.ids = append(h.ids, st.SeatId)
		h.row = append(h.row, float64(r))
		h.num = append(h.num, float64(st.Number))
		h.index[st.SeatId] = i
		at[[2]int{r, int(st.Number)}] = i
	}
	h.right = make([]int, len(sm.Seats))
	for i := range h.right {
		h.right[i] = -1
		if j, ok := at[[2]int{int(h.row[i]), int(h.num[i]) + 1}]; ok {
			h.right[i] = j
		}
	}
	h.cr, h.cn = float64(len(rows)-1)/2, float64(width+1)/2
	return h
}

// pickCentre returns the free adjacent pair nearest the centre of the hall,
// or the nearest single free seat when no pair is left; ties go to a random
// one of the nearest. Seats marked in taken (by index) are treated as not
// free.
func (h *hall) pickCentre(sm *ledgerpb.SeatMap, taken []bool, rng *rand.Rand) []string {
	free := func(i int) bool { return i >= 0 && !taken[i] && sm.Seats[i].State == ledgerpb.SeatState_FREE }
	best := -1
	bestD, ties := -1.0, 0
	consider := func(i int, centre float64) {
		d := (h.row[i]-h.cr)*(h.row[i]-h.cr) + (centre-h.cn)*(centre-h.cn)
		switch {
		case bestD < 0 || d < bestD:
			best, bestD, ties = i, d, 1
		case d == bestD:
			ties++
			if rng.IntN(ties) == 0 {
				best = i
			}
		}
	}
	for i := range h.ids {
		if free(i) && free(h.right[i]) {
			consider(i, h.num[i]+0.5)
		}
	}
	if best >= 0 {
		return []string{h.ids[best], h.ids[h.right[best]]}
	}
	for i := range h.ids {
		if free(i) {
			consider(i, h.num[i])
		}
	}
	if best >= 0 {
		return []string{h.ids[best]}
	}
	return nil
}

func (s *stampede) check(ctx context.Context, e *env) {
	if s.wl != nil {
		r := s.wl.results()
		e.extra["watchers_connected"], e.extra["watcher_events_delivered"] = r.Connected, r.Delivered
		e.extra["watcher_resets"], e.extra["watcher_reconnects"] = r.Resets, r.Redials
		e.addCheck("watchers connected", r.Connected == uint64(e.cfg.watchers), "%d of %d", r.Connected, e.cfg.watchers)
	}
	total := e.cfg.seats
	s.mu.Lock()
	winners, unknown := s.mu.winners, s.mu.unknown
	s.mu.Unlock()
	e.extra["winners"] = len(winners)
	if ns := s.soldOut.Load(); ns > 0 {
		e.extra["sold_out_s"] = fmt.Sprintf("%.3f", time.Duration(ns).Seconds())
	} else {
		e.extra["sold_out_s"] = "not sold out"
	}
	if ns := s.allBooked.Load(); ns > 0 {
		e.extra["all_booked_s"] = fmt.Sprintf("%.3f", time.Duration(ns).Seconds())
	}
	granted := map[string]int{}
	for _, seats := range winners {
		for _, id := range seats {
			granted[id]++
		}
	}
	doubles := 0
	for _, n := range granted {
		if n > 1 {
			doubles++
		}
	}
	e.addCheck("no_double_grants", doubles == 0, "%d seats went to more than one confirmed hold", doubles)
	var sm *ledgerpb.SeatMap
	err := e.stats.call("final_read").run(ctx, func(ctx context.Context) (err error) {
		sm, err = e.apis[0].SeatMap(ctx, s.show, ledgerpb.Consistency_LINEARIZABLE)
		return err
	})
	if err != nil {
		e.addCheck("sold_out", false, "final linearizable seat map: %v", err)
		return
	}
	var booked []string
	for _, st := range sm.Seats {
		if st.State == ledgerpb.SeatState_BOOKED {
			booked = append(booked, st.SeatId)
		}
	}
	e.addCheck("exactly_all_booked", int(sm.Booked) == total && sm.Held == 0 && sm.Free == 0,
		"booked %d, held %d, free %d of %d seats", sm.Booked, sm.Held, sm.Free, total)
	grantedIDs := make([]string, 0, len(granted))
	for id := range granted {
		grantedIDs = append(grantedIDs, id)
	}
	slices.Sort(booked)
	slices.Sort(grantedIDs)
	e.addCheck("booked_are_winners", slices.Equal(booked, grantedIDs) && unknown == 0,
		"%d seats booked in the ledger, %d confirmed to winners, %d confirms with unknown outcome", len(booked), len(grantedIDs), unknown)
}
