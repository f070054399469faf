package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// waitingroom is a premiere's waiting room (issue 18): --joins fans join
// one show's room in a burst, --clients at a time; then, for --duration,
// the room admits at --admit-rate while seatbench samples how many it has
// admitted, and a sample of fans follow their entries and read the seat
// map once admitted. It reports joins per second, the admission rate
// against the set rate, the p99 time from admission (the ledger's time) to
// a seat map in hand, and the rank correlation between arrival order and
// place within each arrival window (near 0 when places are random).
type waitingroom struct {
	show  string
	fans  []roomFan
	order atomic.Int64 // join answers so far: a fan's arrival order

	mu struct {
		sync.Mutex
		samples    []roomSample    // admitted by time
		toSeatMap  []time.Duration // admission -> seat map in hand
		placesSeen map[uint64]string
	}
	ttl      time.Duration
	burst    time.Duration
	measured time.Duration
}

// roomFan is one fan's join.
type roomFan struct {
	entry, token string
	arrival      int64 // 1-based order of its join's answer
	window       int64 // its arrival window (joined_at in s)
	place        uint64
}

type roomSample struct {
	at       time.Time
	admitted uint64
}

// roomFollowersMax bounds the fans that follow their entries during the
// measurement; roomSampleMax those whose places are read for the
// correlation.
const (
	roomFollowersMax = 300
	roomSampleMax    = 3000
)

func (r *waitingroom) mainCall() string { return "join" }

func (r *waitingroom) setup(ctx context.Context, e *env) error {
	r.show = e.showID("room", 0)
	if err := e.createShows(ctx, []string{r.show}, e.cfg.seats); err != nil {
		return err
	}
	st, err := e.apis[0].SetWaitingRoom(ctx, &ledgerpb.SetWaitingRoomRequest{ShowId: r.show, Open: true,
		AdmitPerSecond: uint32(e.cfg.admitRate)})
	if err != nil {
		return fmt.Errorf("open the waiting room: %w", err)
	}
	r.ttl = time.Duration(st.AdmissionTtlSeconds) * time.Second
	r.fans = make([]roomFan, e.cfg.joins)
	r.mu.placesSeen = map[uint64]string{}
	return nil
}

func (r *waitingroom) run(ctx context.Context, e *env) time.Duration {
	var next atomic.Int64
	r.burst = e.runWorkers(ctx, e.cfg.clients, durationMax, func(ctx context.Context, w *worker) {
		r.join(ctx, e, w, &next)
	})
	fmt.Fprintf(e.out, "%d joins in %.2f s\n", r.order.Load(), r.burst.Seconds())
	time.Sleep(1500 * time.Millisecond) // the last window closes: places are final
	r.readPlaces(ctx, e)
	start := time.Now()
	var killed sync.WaitGroup
	if e.cfg.killLeader {
		killed.Go(func() { r.killLeader(ctx, e, start.Add(e.cfg.duration/2)) })
	}
	r.measured = e.runWorkers(ctx, 1+roomFollowersMax, e.cfg.duration, func(ctx context.Context, w *worker) {
		if w.id == 0 {
			r.sampleAdmitted(ctx, e, w)
			return
		}
		r.follow(ctx, e, w, start)
	})
	killed.Wait()
	return r.burst
}

// join joins fans until every one of --joins has.
func (r *waitingroom) join(ctx context.Context, e *env, w *worker, next *atomic.Int64) {
	call := e.stats.call("join")
	for !w.stopped() {
		i := int(next.Add(1)) - 1
		if i >= len(r.fans) {
			return
		}
		req := &ledgerpb.JoinWaitingRoomRequest{ShowId: r.show, ClientId: fmt.Sprintf("%s-fan%d", e.cfg.prefix, i), RequestId: "join"}
		var resp *ledgerpb.WaitingRoomEntry
		if call.run(ctx, func(ctx context.Context) (err error) {
			resp, err = w.api.JoinWaitingRoom(ctx, req)
			return err
		}) != nil {
			continue
		}
		r.fans[i] = roomFan{entry: resp.EntryId, token: resp.EntryToken, arrival: r.order.Add(1), window: resp.JoinedAt.AsTime().Unix()}
	}
}

// readPlaces reads the final places of a random sample of fans.
func (r *waitingroom) readPlaces(ctx context.Context, e *env) {
	call := e.stats.call("read_entry")
	idx := rand.Perm(len(r.fans))[:min(roomSampleMax, len(r.fans))]
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for n, i := range idx {
		f := &r.fans[i]
		if f.entry == "" {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var resp *ledgerpb.WaitingRoomEntry
			err := call.run(ctx, func(ctx context.Context) (err error) {
				resp, err = e.apis[n%len(e.apis)].GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: r.show, EntryId: f.entry, EntryToken: f.token})
				return err
			})
			if err == nil && resp.Place > 0 {
				f.place = resp.Place
				r.mu.Lock()
				if o, dup := r.mu.placesSeen[resp.Place]; dup && o != f.entry {
					r.mu.placesSeen[0] = "duplicate place"
				}
				r.mu.placesSeen[resp.Place] = f.entry
				r.mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

// sampleAdmitted reads the room's admitted count every 250 ms.
func (r *waitingroom) sampleAdmitted(ctx context.Context, e *env, w *worker) {
	call := e.stats.call("room_status")
	for !w.stopped() {
		var st *ledgerpb.WaitingRoomStatus
		if call.run(ctx, func(ctx context.Context) (err error) {
			st, err = w.api.GetWaitingRoom(ctx, r.show)
			return err
		}) == nil {
			r.mu.Lock()
			r.mu.samples = append(r.mu.samples, roomSample{at: time.Now(), admitted: st.Admitted})
			r.mu.Unlock()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// follow is one sampled fan whose place comes up during the measurement:
// it sleeps until about its turn, polls its entry every 50 ms, and reads
// the seat map once admitted.
func (r *waitingroom) follow(ctx context.Context, e *env, w *worker, start time.Time) {
	rate := float64(e.cfg.admitRate)
	first := r.firstSample()
	// Fans whose turn comes 2 s .. duration-3 s into the measurement.
	lo := first + uint64(2*rate)
	hi := first + uint64((e.cfg.duration.Seconds()-3)*rate)
	var f *roomFan
	for i := w.id - 1; i < len(r.fans); i += roomFollowersMax {
		if p := r.fans[i].place; p > lo && p <= hi {
			f = &r.fans[i]
			break
		}
	}
	if f == nil {
		return
	}
	turn := start.Add(time.Duration(float64(f.place-first)/rate*float64(time.Second)) - time.Second)
	time.Sleep(time.Until(turn))
	call := e.stats.call("follow_entry")
	for !w.stopped() {
		var resp *ledgerpb.WaitingRoomEntry
		if call.run(ctx, func(ctx context.Context) (err error) {
			resp, err = w.api.GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: r.show, EntryId: f.entry, EntryToken: f.token})
			return err
		}) == nil && resp.State == "ADMITTED" {
			if e.stats.call("seat_map").run(ctx, func(ctx context.Context) error {
				_, err := w.api.SeatMap(ctx, r.show, ledgerpb.Consistency_STALE)
				return err
			}) == nil {
				admittedAt := resp.AdmissionExpiresAt.AsTime().Add(-r.ttl)
				r.mu.Lock()
				r.mu.toSeatMap = append(r.mu.toSeatMap, time.Since(admittedAt))
				r.mu.Unlock()
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// firstSample is the admitted count when the measurement began.
func (r *waitingroom) firstSample() uint64 {
	for {
		r.mu.Lock()
		n := len(r.mu.samples)
		var a uint64
		if n > 0 {
			a = r.mu.samples[0].admitted
		}
		r.mu.Unlock()
		if n > 0 {
			return a
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func (r *waitingroom) check(ctx context.Context, e *env) {
	joined := r.order.Load()
	jps := float64(joined) / r.burst.Seconds()
	e.extra["joins"] = joined
	e.extra["joins_per_s"] = fmt.Sprintf("%.0f", jps)
	e.addCheck("joins_per_s", jps >= 10000, "%.0f joins/s (target >= 10,000)", jps)
	e.addCheck("all_joined", joined == int64(len(r.fans)), "%d of %d fans joined", joined, len(r.fans))
	r.mu.Lock()
	samples, lat, places := r.mu.samples, r.mu.toSeatMap, r.mu.placesSeen
	r.mu.Unlock()
	_, dup := places[0]
	e.addCheck("places_unique", !dup, "%d sampled places", len(places))
	if len(samples) >= 2 {
		a, b := samples[0], samples[len(samples)-1]
		rate := float64(b.admitted-a.admitted) / b.at.Sub(a.at).Seconds()
		dev := (rate - float64(e.cfg.admitRate)) / float64(e.cfg.admitRate)
		e.extra["admission_rate_per_s"] = fmt.Sprintf("%.2f", rate)
		e.extra["admission_rate_deviation"] = fmt.Sprintf("%+.2f%%", 100*dev)
		e.addCheck("admission_rate", dev >= -0.05 && dev <= 0.05, "%.2f/s over %.1f s against %d/s set (%+.2f%%)",
			rate, b.at.Sub(a.at).Seconds(), e.cfg.admitRate, 100*dev)
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		e.extra["admission_to_seat_map_p50_ms"] = ms(lat[len(lat)/2])
		e.extra["admission_to_seat_map_p99_ms"] = ms(lat[min(len(lat)-1, len(lat)*99/100)])
		e.extra["followers"] = len(lat)
	}
	rho, n := r.windowCorrelation()
	e.extra["arrival_place_spearman"] = fmt.Sprintf("%.3f", rho)
	e.addCheck("arrival_order_not_place", rho > -0.2 && rho < 0.2, "Spearman rho %.3f over %d sampled fans, within windows", rho, n)
}

// windowCorrelation is the Spearman rank correlation between arrival
// order and place within each arrival window, weighted by the window's
// sampled fans.
func (r *waitingroom) windowCorrelation() (float64, int) {
	byWindow := map[int64][]roomFan{}
	for _, f := range r.fans {
		if f.place > 0 {
			byWindow[f.window] = append(byWindow[f.window], f)
		}
	}
	sum, n := 0.0, 0
	for _, fs := range byWindow {
		if len(fs) < 10 {
			continue
		}
		sum += spearman(fs) * float64(len(fs))
		n += len(fs)
	}
	if n == 0 {
		return 0, 0
	}
	return sum / float64(n), n
}

// spearman ranks fans by arrival and by place (both distinct) and
// correlates the ranks.
func spearman(fs []roomFan) float64 {
	k := len(fs)
	byArrival := slices.SortedFunc(slices.Values(fs), func(a, b roomFan) int { return cmp.Compare(a.arrival, b.arrival) })
	rank := map[string]int{}
	for i, f := range byArrival {
		rank[f.entry] = i
	}
	byPlace := slices.SortedFunc(slices.Values(fs), func(a, b roomFan) int { return cmp.Compare(a.place, b.place) })
	d2 := 0.0
	for i, f := range byPlace {
		d := float64(rank[f.entry] - i)
		d2 += d * d
	}
	return 1 - 6*d2/(float64(k)*(float64(k)*float64(k)-1))
}
