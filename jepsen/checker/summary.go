package checker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/seatledger/seatledger/jepsen/history"
)

// Summary describes the history: what was tried and how it went.
type Summary struct {
	Ops     int `json:"ops"`
	Shows   int `json:"shows"`
	Resends int `json:"resends"`
	Info    int `json:"info"` // ops with an indeterminate outcome
	// Outcomes counts ops by kind and outcome.
	Outcomes map[history.Kind]map[history.Outcome]int `json:"outcomes"`
	// BestAvailable counts the holds among Outcomes[hold] that asked for a
	// count of seats instead of naming them, by outcome; Category those of
	// them that asked for a category.
	BestAvailable map[history.Outcome]int `json:"best_available,omitempty"`
	Category      map[history.Outcome]int `json:"category,omitempty"`
	// Queue counts the waiting queue's traffic.
	Queue QueueSummary `json:"queue"`
	// Reasons counts Fail and Info ops by reason.
	Reasons map[string]int `json:"reasons,omitempty"`
	// Faults counts nemesis actions by kind.
	Faults map[string]int `json:"faults,omitempty"`
	// Latency is per kind, over OK ops.
	Latency    map[history.Kind]Latency `json:"latency"`
	DurationMs float64                  `json:"duration_ms"`
}

// QueueSummary counts queue joins (holds answered QUEUED), the states
// waiters read their entries in, the distinct offers they saw, and what
// became of the offered holds by their waiters' hands.
type QueueSummary struct {
	Waits     int            `json:"waits"` // best-available holds that asked to wait
	Joins     int            `json:"joins"`
	Reads     map[string]int `json:"reads,omitempty"` // OK queueentry ops by state
	Offers    int            `json:"offers"`
	Confirmed int            `json:"confirmed"` // offered holds confirmed OK
	Released  int            `json:"released"`  // offered holds released OK
}

// Latency is the distribution of OK ops' call-to-return times.
type Latency struct {
	Count int     `json:"count"`
	P50Ms float64 `json:"p50_ms"`
	P90Ms float64 `json:"p90_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

func summarize(h *history.History) Summary {
	s := Summary{Ops: len(h.Ops), Outcomes: map[history.Kind]map[history.Outcome]int{},
		BestAvailable: map[history.Outcome]int{}, Category: map[history.Outcome]int{},
		Reasons: map[string]int{}, Faults: map[string]int{}, Latency: map[history.Kind]Latency{}}
	s.Queue = summarizeQueue(h)
	shows := map[string]bool{}
	lat := map[history.Kind][]int64{}
	var end int64
	for i := range h.Ops {
		op := &h.Ops[i]
		shows[op.Show] = true
		if s.Outcomes[op.Kind] == nil {
			s.Outcomes[op.Kind] = map[history.Outcome]int{}
		}
		s.Outcomes[op.Kind][op.Outcome]++
		if op.Kind == history.KindHold && op.Count > 0 {
			s.BestAvailable[op.Outcome]++
			if op.Category != "" {
				s.Category[op.Outcome]++
			}
		}
		if op.Resend {
			s.Resends++
		}
		switch op.Outcome {
		case history.Info:
			s.Info++
			s.Reasons[reasonOr(op.Reason)]++
		case history.Fail:
			s.Reasons[reasonOr(op.Reason)]++
		case history.OK:
			lat[op.Kind] = append(lat[op.Kind], op.Return-op.Call)
		}
		end = max(end, op.Call, op.Return)
	}
	for _, f := range h.Faults {
		s.Faults[f.Kind]++
		end = max(end, f.At)
	}
	for k, ds := range lat {
		s.Latency[k] = latency(ds)
	}
	s.Shows = len(shows)
	s.DurationMs = float64(end) / 1e6
	return s
}

func summarizeQueue(h *history.History) QueueSummary {
	q := QueueSummary{Reads: map[string]int{}}
	offered := map[string]bool{} // offered hold ids
	for i := range h.Ops {
		op := &h.Ops[i]
		switch {
		case op.Kind == history.KindHold && op.Wait && !op.Resend:
			q.Waits++
			if op.Reason == "QUEUED" {
				q.Joins++
			}
		case op.Kind == history.KindQueueEntry && op.Outcome == history.OK:
			q.Reads[op.QueueState]++
			if op.QueueState == "OFFERED" && op.OutHoldID != "" && !offered[op.OutHoldID] {
				offered[op.OutHoldID] = true
				q.Offers++
			}
		}
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Outcome != history.OK || op.Resend || !offered[op.HoldID] {
			continue
		}
		switch op.Kind {
		case history.KindConfirm:
			q.Confirmed++
		case history.KindRelease:
			q.Released++
		}
	}
	return q
}

func reasonOr(r string) string {
	if r == "" {
		return "(none)"
	}
	return r
}

// latency returns the nearest-rank percentiles of ds (nanoseconds) in ms.
func latency(ds []int64) Latency {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	rank := func(p float64) float64 {
		i := int(p*float64(len(ds))+0.999999) - 1
		i = min(max(i, 0), len(ds)-1)
		return float64(ds[i]) / 1e6
	}
	return Latency{Count: len(ds), P50Ms: rank(0.50), P90Ms: rank(0.90), P99Ms: rank(0.99), MaxMs: float64(ds[len(ds)-1]) / 1e6}
}

func (s *Summary) writeText(b *strings.Builder) {
	fmt.Fprintf(b, "ops: %d over %d show(s) in %.1f s; %d info, %d resends\n", s.Ops, s.Shows, s.DurationMs/1000, s.Info, s.Resends)
	for _, k := range kinds {
		oc := s.Outcomes[k]
		if oc == nil {
			continue
		}
		fmt.Fprintf(b, "  %-8s ok %-6d fail %-6d info %-6d", k, oc[history.OK], oc[history.Fail], oc[history.Info])
		if l, ok := s.Latency[k]; ok {
			fmt.Fprintf(b, " latency ms p50 %.1f p90 %.1f p99 %.1f max %.1f", l.P50Ms, l.P90Ms, l.P99Ms, l.MaxMs)
		}
		b.WriteString("\n")
		if k == history.KindHold && len(s.BestAvailable) > 0 {
			fmt.Fprintf(b, "   of them best available: ok %d fail %d info %d; with a category: ok %d fail %d info %d\n",
				s.BestAvailable[history.OK], s.BestAvailable[history.Fail], s.BestAvailable[history.Info],
				s.Category[history.OK], s.Category[history.Fail], s.Category[history.Info])
		}
	}
	if q := s.Queue; q.Waits > 0 || len(q.Reads) > 0 {
		fmt.Fprintf(b, "  queue: %d holds asked to wait, %d joined; entries read %s; %d offers seen; their waiters confirmed them %d times and released them %d times (OK answers)\n",
			q.Waits, q.Joins, countList(q.Reads), q.Offers, q.Confirmed, q.Released)
	}
	if len(s.Reasons) > 0 {
		fmt.Fprintf(b, "  reasons: %s\n", countList(s.Reasons))
	}
	if len(s.Faults) > 0 {
		fmt.Fprintf(b, "faults: %s\n", countList(s.Faults))
	}
}

// countList prints a count map as "a 3, b 1" in key order.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
