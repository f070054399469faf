package checker

import (
	"sort"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
)

// TimeoutDefault is porcupine's total time budget when Options.Timeout is 0.
const TimeoutDefault = 20 * time.Second

// Options tune Check.
type Options struct {
	// Timeout is porcupine's total time budget over all shows; 0 means
	// TimeoutDefault. Shows are checked smallest first, each getting an
	// equal share of what is left, so time a small show does not use goes
	// to the larger ones. A show whose share runs out is "unknown".
	Timeout time.Duration
	// OutDir receives linearizability-<show>.html, porcupine's
	// visualization, for each show that is not linearizable; "" writes none.
	OutDir string
}

// Check runs every check on h. It never fails: what it cannot decide is
// reported as unknown, what it cannot read as a warning.
func Check(h *history.History, opt Options) *Report {
	if opt.Timeout <= 0 {
		opt.Timeout = TimeoutDefault
	}
	rep := newReporter()
	checkRooms(h, rep) // room.go
	h = withoutRooms(h)
	lops := logicalOps(h, rep)
	lops = append(lops, queueOps(lops, rep)...)
	sort.SliceStable(lops, func(a, b int) bool { return lops[a].Call < lops[b].Call })
	owner := map[string]string{}
	for _, l := range lops {
		if l.Kind == history.KindHold && l.Outcome == history.OK && l.OutHoldID != "" {
			owner[l.OutHoldID] = l.Show
		}
	}
	layouts := map[string]*history.Layout{}
	for i := range h.Layouts {
		layouts[h.Layouts[i].Show] = &h.Layouts[i]
	}
	names, ops := byShow(lops)
	models := make([]*showModel, len(names))
	hints := map[*showModel]int64{}
	for i, name := range names {
		models[i] = buildShow(name, ops[name], owner, h.Final, layouts[name], rep)
		checkRealTime(name, ops[name], rep)
		r := models[i].replay(ops[name], rep)
		if r.unknown != "" {
			rep.undecided(CheckOrdering, "show %s: revision replay: %s", name, r.unknown)
		}
		hints[models[i]] = r.stuck
		so := newShowOps(name, ops[name])
		checkS1History(so, rep)
		checkS3Reads(so, rep)
		if h.Final != nil {
			checkFinal(so, h, layouts[name], rep)
		}
	}
	if h.Final != nil {
		for _, name := range finalOnlyShows(h.Final, ops) {
			so := newShowOps(name, nil)
			checkFinal(so, h, layouts[name], rep)
		}
		checkDigests(h.Final, rep)
	} else {
		for _, c := range []string{CheckS2, CheckS6} {
			rep.skipped[c] = "the history has no final reads"
		}
		rep.notes[CheckS1] = "history only: no final reads"
		rep.notes[CheckS4] = "history only: no final reads"
	}
	rep.r.Shows = linearizeAll(models, hints, h.Faults, opt, rep)
	rep.r.Summary = summarize(h)
	return rep.finish()
}

// finalOnlyShows are shows the final reads have but no op touched.
func finalOnlyShows(f *history.Final, ops map[string][]*lop) []string {
	var out []string
	for s := range f.Seats {
		if _, ok := ops[s]; !ok {
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// linearizeAll runs porcupine over the shows, smallest first, sharing the
// time budget; results come back in show name order.
func linearizeAll(models []*showModel, hints map[*showModel]int64, faults []history.Fault, opt Options, rep *reporter) []ShowResult {
	order := append([]*showModel(nil), models...)
	sort.SliceStable(order, func(i, j int) bool { return len(order[i].ops) < len(order[j].ops) })
	deadline := time.Now().Add(opt.Timeout)
	out := make([]ShowResult, 0, len(order))
	for i, sm := range order {
		share := time.Until(deadline) / time.Duration(len(order)-i)
		out = append(out, sm.linearize(share, hints[sm], opt, faults, rep))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Show < out[j].Show })
	return out
}
