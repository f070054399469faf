package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/client"
)

// Retry pacing for 503 / UNAVAILABLE answers, and the bound on one call
// with its retries.
const (
	retryBackoffMin = 5 * time.Millisecond
	retryBackoffMax = 200 * time.Millisecond
	callTimeout     = 10 * time.Second
)

// callStats counts one kind of call (hold, confirm, ...).
type callStats struct {
	name      string
	attempts  atomic.Uint64 // calls made (retries of one call count once)
	ok        atomic.Uint64
	conflicts atomic.Uint64 // SEATS_TAKEN
	retries   atomic.Uint64 // 503/UNAVAILABLE answers retried with the same request id
	hist      histogram     // latency per call, retries included
	// window, when set, is the time this call was loaded (ns), for rates
	// of a workload that runs in phases; else the whole run counts.
	window atomic.Int64

	mu struct {
		sync.Mutex
		errs map[string]uint64 // reason -> count
	}
}

// stats holds every call's counters, in the order the calls were first used.
type stats struct {
	mu struct {
		sync.Mutex
		calls []*callStats
	}
}

func (s *stats) call(name string) *callStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.mu.calls {
		if c.name == name {
			return c
		}
	}
	c := &callStats{name: name}
	c.mu.errs = map[string]uint64{}
	s.mu.calls = append(s.mu.calls, c)
	return c
}

func (s *stats) calls() []*callStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.mu.calls)
}

// observe records one finished call: success, conflict, or an error by
// reason. A reason in expect counts as success (a rejection the workload
// wants, such as confirming an expired hold), and then a nil err counts as
// the error UNEXPECTED_OK.
func (c *callStats) observe(lat time.Duration, err error, expect ...string) {
	c.attempts.Add(1)
	c.hist.record(lat)
	reason := reasonOf(err)
	switch {
	case len(expect) > 0 && slices.Contains(expect, reason):
		c.ok.Add(1)
	case len(expect) > 0 && err == nil:
		c.fail("UNEXPECTED_OK")
	case err == nil:
		c.ok.Add(1)
	case reason == "SEATS_TAKEN":
		c.conflicts.Add(1)
	default:
		c.fail(reason)
	}
}

func (c *callStats) fail(reason string) {
	c.mu.Lock()
	c.mu.errs[reason]++
	c.mu.Unlock()
}

func (c *callStats) errors() map[string]uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.mu.errs)
}

// run makes one call with exactly-once retries: fn must resend the same
// request (same client_id and request_id) every time, so a retry after an
// unknown outcome returns the first answer instead of acting twice. It
// retries 503/UNAVAILABLE and transport errors until callTimeout. Every
// attempt states the first one's send time, as a client should.
func (c *callStats) run(ctx context.Context, fn func(ctx context.Context) error, expect ...string) error {
	start := time.Now()
	ctx = client.WithFirstSent(ctx, start)
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	backoff := retryBackoffMin
	for {
		err := fn(ctx)
		if err == nil || !retryable(err) || ctx.Err() != nil {
			c.observe(time.Since(start), err, expect...)
			return err
		}
		c.retries.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, retryBackoffMax)
	}
}

// progress prints one line per second with each call's rates and interval
// latencies until stop is closed.
func (s *stats) progress(w io.Writer, start time.Time, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	prev := map[string]*callSnap{}
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			var parts []string
			for _, c := range s.calls() {
				cur := c.snap()
				p := prev[c.name]
				prev[c.name] = cur
				if p == nil {
					p = &callSnap{hist: &histSnapshot{}}
				}
				d := cur.minus(p)
				if d.attempts == 0 {
					continue
				}
				parts = append(parts, fmt.Sprintf("%s %d/s ok %d cf %d err %d p50 %s p99 %s",
					c.name, d.attempts, d.ok, d.conflicts, d.errs, ms(d.hist.quantile(0.5)), ms(d.hist.quantile(0.99))))
			}
			fmt.Fprintf(w, "[%4.0fs] %s\n", now.Sub(start).Seconds(), strings.Join(parts, " | "))
		}
	}
}

// callSnap is a copy of a call's counters.
type callSnap struct {
	attempts, ok, conflicts, errs uint64
	hist                          *histSnapshot
}

func (c *callStats) snap() *callSnap {
	s := &callSnap{attempts: c.attempts.Load(), ok: c.ok.Load(), conflicts: c.conflicts.Load(), hist: c.hist.snapshot()}
	for _, n := range c.errors() {
		s.errs += n
	}
	return s
}

func (s *callSnap) minus(p *callSnap) *callSnap {
	return &callSnap{attempts: s.attempts - p.attempts, ok: s.ok - p.ok, conflicts: s.conflicts - p.conflicts,
		errs: s.errs - p.errs, hist: s.hist.minus(p.hist)}
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
}

// CallSummary is one call's totals in the JSON summary.
type CallSummary struct {
	Name         string            `json:"name"`
	Attempts     uint64            `json:"attempts"`
	OK           uint64            `json:"ok"`
	Conflicts    uint64            `json:"conflicts"`
	Errors       map[string]uint64 `json:"errors"`
	Retries      uint64            `json:"retries_503"`
	AttemptsPerS float64           `json:"attempts_per_s"`
	OKPerS       float64           `json:"ok_per_s"`
	LatencyMs    Latency           `json:"latency_ms"`
}

// Latency is a call's latency distribution in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// summarize turns the counters into summaries over elapsed.
func (s *stats) summarize(elapsed time.Duration) []CallSummary {
	var out []CallSummary
	for _, c := range s.calls() {
		h := c.hist.snapshot()
		cs := CallSummary{Name: c.name, Attempts: c.attempts.Load(), OK: c.ok.Load(), Conflicts: c.conflicts.Load(),
			Errors: c.errors(), Retries: c.retries.Load(),
			LatencyMs: Latency{P50: msf(h.quantile(0.5)), P90: msf(h.quantile(0.9)), P99: msf(h.quantile(0.99)),
				P999: msf(h.quantile(0.999)), Max: msf(time.Duration(h.max) * time.Microsecond)}}
		sec := elapsed.Seconds()
		if w := c.window.Load(); w > 0 {
			sec = time.Duration(w).Seconds()
		}
		if sec > 0 {
			cs.AttemptsPerS, cs.OKPerS = float64(cs.Attempts)/sec, float64(cs.OK)/sec
		}
		out = append(out, cs)
	}
	return out
}

// printCalls writes the summary table.
func printCalls(w io.Writer, calls []CallSummary) {
	fmt.Fprintf(w, "%-18s %9s %9s %9s %9s %7s %10s %10s %8s %8s %8s %8s %8s\n",
		"call", "attempts", "ok", "conflicts", "errors", "retries", "attempt/s", "ok/s", "p50ms", "p90ms", "p99ms", "p99.9ms", "maxms")
	for _, c := range calls {
		var errs uint64
		for _, n := range c.Errors {
			errs += n
		}
		fmt.Fprintf(w, "%-18s %9d %9d %9d %9d %7d %10.0f %10.0f %8.2f %8.2f %8.2f %8.2f %8.2f\n",
			c.Name, c.Attempts, c.OK, c.Conflicts, errs, c.Retries, c.AttemptsPerS, c.OKPerS,
			c.LatencyMs.P50, c.LatencyMs.P90, c.LatencyMs.P99, c.LatencyMs.P999, c.LatencyMs.Max)
		for _, r := range slices.Sorted(maps.Keys(c.Errors)) {
			fmt.Fprintf(w, "%-18s   error %s: %d\n", "", r, c.Errors[r])
		}
	}
}

// loadAvg reads the 1-minute load average, to show whether the machine was
// shared during a run.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}
