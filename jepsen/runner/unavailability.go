package runner

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
)

// FaultWindow is one fault's measured unavailability: the longest time,
// from the fault until the next fault began, that one show had writes
// waiting for an answer and none of its writes was answered (Gap), which
// show that was, and when that wait began.
type FaultWindow struct {
	Kind  string
	Nodes string
	At    time.Duration
	Gap   time.Duration
	Show  string        // the show that waited longest ("" when none waited)
	From  time.Duration // when its wait began (since the run's start)
}

// faultsThatStop are the fault kinds after which writes may pause.
var faultsThatStop = map[string]bool{
	NemPartitionOne: true, NemPartitionLeader: true, NemPartitionHalf: true, NemPartitionRing: true,
	NemKillOne: true, NemKillLeader: true, NemKillMinority: true, NemKillAll: true, NemPauseLeader: true,
}

// answered reports whether a write got an answer from the state machine:
// applied, or rejected by it (a conflict is the ledger working).
func answered(op history.Op) bool {
	if !isWrite(op.Kind) {
		return false
	}
	switch op.Outcome {
	case history.OK:
		return true
	case history.Fail:
		return op.Reason != "" && op.Reason != "UNAVAILABLE" && op.Reason != "NOT_LEADER"
	}
	return false
}

// span is a half-open stretch of run time, in ns since the start.
type span struct{ from, to int64 }

// showWrites is one show's write traffic: when writes were in flight
// (merged, sorted) and when one was answered (sorted).
type showWrites struct {
	waiting []span
	answers []int64
}

// Unavailability measures, for each fault that can stop writes, how long
// the service kept a show's clients waiting: the longest stretch, between
// the fault and the next fault, in which writes of one show were in flight
// and none of that show's writes was answered. Only time with a write in
// flight counts: a show nobody writes to is idle, not unavailable. (The
// measure before this one took the longest gap between a busy show's
// answered writes; a show stops being busy 6 s after it starts, so a gap
// ran on to whatever wrote to it next — often the cleanup after the run —
// and a healthy cluster read as ~50 s unavailable.) It needs nothing but
// the history, so `seatjepsen check` prints it for old runs too.
func Unavailability(h *history.History) []FaultWindow {
	byShow := writesByShow(h.Ops)
	shows := make([]string, 0, len(byShow))
	for s := range byShow {
		shows = append(shows, s)
	}
	sort.Strings(shows)
	end := historyEnd(h)
	var out []FaultWindow
	for i, f := range h.Faults {
		if !faultsThatStop[f.Kind] {
			continue
		}
		w := FaultWindow{Kind: f.Kind, Nodes: f.Nodes, At: time.Duration(f.At)}
		horizon := nextFaultAt(h.Faults[i+1:], end)
		for _, show := range shows {
			gap, from := longestWait(byShow[show], f.At, horizon)
			if gap > int64(w.Gap) {
				w.Gap, w.Show, w.From = time.Duration(gap), show, time.Duration(from)
			}
		}
		out = append(out, w)
	}
	return out
}

// writesByShow collects every show's write traffic. An op of unknown
// outcome has no return: its client gave up on it opDeadline after its call.
func writesByShow(ops []history.Op) map[string]*showWrites {
	raw := map[string][]span{}
	out := map[string]*showWrites{}
	for _, op := range ops {
		if !isWrite(op.Kind) {
			continue
		}
		if out[op.Show] == nil {
			out[op.Show] = &showWrites{}
		}
		ret := op.Return
		if op.Outcome == history.Info || ret < op.Call {
			ret = op.Call + int64(opDeadline)
		}
		raw[op.Show] = append(raw[op.Show], span{op.Call, ret})
		if answered(op) {
			out[op.Show].answers = append(out[op.Show].answers, op.Return)
		}
	}
	for show, w := range out {
		w.waiting = mergeSpans(raw[show])
		slices.Sort(w.answers)
	}
	return out
}

// mergeSpans sorts spans and joins the overlapping ones.
func mergeSpans(ss []span) []span {
	sort.Slice(ss, func(i, j int) bool { return ss[i].from < ss[j].from })
	var out []span
	for _, s := range ss {
		if n := len(out); n > 0 && s.from <= out[n-1].to {
			out[n-1].to = max(out[n-1].to, s.to)
			continue
		}
		out = append(out, s)
	}
	return out
}

// longestWait is the longest time within [from, to) between two answers
// (or from and the first answer, or the last answer and to) during which w
// had a write in flight, and when that time began.
func longestWait(w *showWrites, from, to int64) (gap, began int64) {
	prev := from
	cut := func(next int64) {
		if d, start := covered(w.waiting, prev, next); d > gap {
			gap, began = d, start
		}
		prev = next
	}
	for _, t := range w.answers {
		if t <= from {
			continue
		}
		if t >= to {
			break
		}
		cut(t)
	}
	cut(to)
	return gap, began
}

// covered is how much of [from, to) the sorted, disjoint spans cover, and
// where the first covered instant is.
func covered(spans []span, from, to int64) (total, first int64) {
	first = -1
	i := sort.Search(len(spans), func(i int) bool { return spans[i].to > from })
	for ; i < len(spans) && spans[i].from < to; i++ {
		lo, hi := max(spans[i].from, from), min(spans[i].to, to)
		if hi <= lo {
			continue
		}
		if first < 0 {
			first = lo
		}
		total += hi - lo
	}
	return total, max(first, from)
}

// nextFaultAt is when the first injected fault among later begins (heals
// and other records are not faults), or end.
func nextFaultAt(later []history.Fault, end int64) int64 {
	for _, f := range later {
		if slices.Contains(AllNemeses, f.Kind) {
			return f.At
		}
	}
	return end
}

// historyEnd is the last instant the history knows of.
func historyEnd(h *history.History) int64 {
	var end int64
	for _, op := range h.Ops {
		end = max(end, op.Call+int64(opDeadline), op.Return)
	}
	for _, f := range h.Faults {
		end = max(end, f.At)
	}
	return end
}

// GapSummary is the p50/p99/max of the fault windows' gaps.
func GapSummary(ws []FaultWindow) string {
	if len(ws) == 0 {
		return "no faults that stop writes"
	}
	gaps := make([]time.Duration, len(ws))
	for i, w := range ws {
		gaps[i] = w.Gap
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	q := func(p float64) time.Duration { return gaps[min(len(gaps)-1, int(p*float64(len(gaps))))] }
	return fmt.Sprintf("unavailability over %d faults: p50 %v, p99 %v, max %v", len(gaps),
		q(0.5).Round(time.Millisecond), q(0.99).Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
}
