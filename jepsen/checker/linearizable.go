package checker

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/seatledger/seatledger/jepsen/history"
)

// porcupineModel is the show's model as porcupine wants it. Info ops apply
// for certain where porcupine linearizes them (model.go says why that is
// enough).
func (sm *showModel) porcupineModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return sm.init() },
		Step: func(st, in, _ any) (bool, any) {
			next, _ := sm.step(st.(*state), in.(*mop), false)
			if next == nil {
				return false, st
			}
			return true, next
		},
		Equal:             func(a, b any) bool { return a.(*state).equal(b.(*state)) },
		Hash:              func(st any) uint64 { return st.(*state).hash() },
		DescribeOperation: func(in, _ any) string { return sm.describeOp(in.(*mop)) },
		DescribeState:     func(st any) string { return sm.describeState(st.(*state)) },
		DescribeOperationMetadata: func(md any) string {
			if md == nil {
				return ""
			}
			return fmt.Sprintf("history ops %v", md)
		},
	}
}

// operations are the show's model ops as porcupine operations; info ops
// never return.
func (sm *showModel) operations() []porcupine.Operation {
	out := make([]porcupine.Operation, len(sm.ops))
	for i, m := range sm.ops {
		out[i] = porcupine.Operation{ClientId: m.process, Input: m, Call: m.call, Return: m.ret, Metadata: m.l.ids}
	}
	return out
}

// linearize checks the show with porcupine within budget. hint, if not 0,
// is a time by which the revision replay saw the history go wrong: a prefix
// cut there is tried first, as it refutes faster than the whole show. If no
// verdict comes within the budget, prefixes are tried: a prefix that is not
// linearizable refutes the whole (prefix says why), while a linearizable
// prefix proves nothing. A refutation is explained and, with opt.OutDir,
// visualized.
func (sm *showModel) linearize(budget time.Duration, hint int64, opt Options, faults []history.Fault, rep *reporter) (res ShowResult) {
	res = ShowResult{Show: sm.name, Ops: len(sm.ops), Result: "ok"}
	if len(sm.ops) == 0 {
		return res
	}
	if budget <= 0 {
		res.Result = "unknown"
		rep.undecided(CheckLinearizable, "show %s: not checked, the time budget was spent (%d ops)", sm.name, len(sm.ops))
		return res
	}
	start := time.Now()
	deadline := start.Add(budget)
	defer func() { res.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000 }()
	if hint != 0 {
		// The replay already found a violation: porcupine only confirms it,
		// and refutes a prefix ending there faster than the whole show.
		if sm.refute(sm.prefix(hint), budget*3/4, opt, faults, rep, &res) {
			return res
		}
	}
	verdict := sm.refuteOrPass(sm, time.Until(deadline)*3/4, opt, faults, rep, &res)
	if verdict != porcupine.Unknown {
		return res
	}
	cuts := sm.cuts()
	for i, t := range cuts {
		if sm.refute(sm.prefix(t), time.Until(deadline)/time.Duration(len(cuts)-i), opt, faults, rep, &res) {
			return res
		}
	}
	res.Result = "unknown"
	rep.undecided(CheckLinearizable, "show %s: no verdict within %s (%d ops, %d of them info)",
		sm.name, budget.Round(time.Millisecond), len(sm.ops), len(sm.ops)-int(sm.definite))
	return res
}

// refute checks p, a prefix of the show, and reports whether it is not
// linearizable (then it is reported as the show's violation).
func (sm *showModel) refute(p *showModel, timeout time.Duration, opt Options, faults []history.Fault, rep *reporter, res *ShowResult) bool {
	if len(p.ops) == 0 || timeout <= 0 {
		return false
	}
	return sm.refuteOrPass(p, timeout, opt, faults, rep, res) == porcupine.Illegal && p != sm
}

// refuteOrPass runs porcupine on p (the show or a prefix of it). Illegal
// is reported as the show's violation; Ok is the show's verdict only when p
// is the whole show.
func (sm *showModel) refuteOrPass(p *showModel, timeout time.Duration, opt Options, faults []history.Fault, rep *reporter, res *ShowResult) porcupine.CheckResult {
	if timeout <= 0 {
		return porcupine.Unknown
	}
	model, ops := p.porcupineModel(), p.operations()
	start := time.Now()
	p.quiet = true
	verdict := porcupine.CheckOperationsTimeout(model, ops, timeout)
	p.quiet = false
	if verdict != porcupine.Illegal {
		return verdict
	}
	// Again, keeping what a visualization and an explanation need: that
	// costs about twice as much as a plain check, and is only needed now.
	p.quiet = true
	again, info := porcupine.CheckOperationsVerbose(model, ops, max(timeout-time.Since(start), time.Since(start)*2))
	p.quiet = false
	res.Result = "illegal"
	ids, msg := []int(nil), "no linearization exists (porcupine gave no partial linearization in time)"
	if again == porcupine.Illegal {
		ids, msg = p.explain(info)
	}
	if p != sm {
		msg = fmt.Sprintf("the ops called by time %d (%d of %d) are already not linearizable; %s", p.end-1, len(p.ops), len(sm.ops), msg)
	}
	if opt.OutDir != "" && again == porcupine.Illegal {
		path, err := p.visualize(model, info, opt.OutDir, faults)
		if err != nil {
			rep.warnf("show %s: visualization: %v", sm.name, err)
		} else {
			res.HTML = path
			msg += "; see " + path
		}
	}
	rep.violation(CheckLinearizable, sm.name, ids, "%s", msg)
	return verdict
}

// cuts are times to cut prefixes at when the whole show has no verdict: the
// returns of the 1/8th, 1/4th and half of its definite ops.
func (sm *showModel) cuts() []int64 {
	var rets []int64
	for _, m := range sm.ops {
		if m.outcome != history.Info {
			rets = append(rets, m.ret)
		}
	}
	sort.Slice(rets, func(i, j int) bool { return rets[i] < rets[j] })
	var out []int64
	for _, d := range []int{8, 4, 2} {
		if i := len(rets) / d; i > 0 && (len(out) == 0 || rets[i] > out[len(out)-1]) {
			out = append(out, rets[i])
		}
	}
	return out
}

// prefix is the show cut at time t: the ops called by t, those still
// running at t turned into info ops (a read or a rejection still running
// is dropped: without its answer it has no effect and says nothing). Any
// linearization of the whole show gives one of the prefix, so a prefix
// that is not linearizable refutes the show.
func (sm *showModel) prefix(t int64) *showModel {
	p := *sm
	p.ops, p.definite, p.end = nil, 0, t+1
	for _, m := range sm.ops {
		switch {
		case m.call > t:
			continue
		case m.outcome == history.Info || m.ret > t:
			if m.outcome == history.Fail || m.kind == history.KindRead || m.kind == history.KindGetHold {
				continue
			}
			c := *m
			c.outcome, c.ret, c.clock, c.pos = history.Info, p.end, 0, 0
			m = &c
		default:
			p.definite++
		}
		p.ops = append(p.ops, m)
	}
	return &p
}

// explain replays porcupine's longest partial linearization and names the
// first op, by call time, that the model rejects after it.
func (sm *showModel) explain(info porcupine.LinearizationInfo) ([]int, string) {
	parts := info.PartialLinearizations()
	if len(parts) == 0 || len(parts[0]) == 0 {
		return nil, "no linearization exists"
	}
	var longest []int
	for _, p := range parts[0] {
		if len(p) > len(longest) {
			longest = p
		}
	}
	s := sm.init()
	done := make([]bool, len(sm.ops))
	for _, i := range longest {
		next, _ := sm.step(s, sm.ops[i], false)
		if next == nil {
			break
		}
		s, done[i] = next, true
	}
	rest := make([]int, 0, len(sm.ops)-len(longest))
	for i := range sm.ops {
		if !done[i] {
			rest = append(rest, i)
		}
	}
	sort.SliceStable(rest, func(a, b int) bool { return sm.ops[rest[a]].call < sm.ops[rest[b]].call })
	for _, i := range rest {
		if sm.ops[i].outcome == history.Info {
			continue // it can always come last
		}
		if _, why := sm.step(s, sm.ops[i], false); why != "" {
			o := sm.ops[i]
			return o.l.ids, fmt.Sprintf("no linearization: the longest linearizable prefix has %d of %d ops, after which op %d (%s) is impossible: %s",
				len(longest), len(sm.ops), o.l.ID, sm.describeOp(o), why)
		}
	}
	return nil, fmt.Sprintf("no linearization: the longest linearizable prefix has %d of %d ops", len(longest), len(sm.ops))
}

// visualize writes porcupine's HTML for the show, with the faults marked.
func (sm *showModel) visualize(model porcupine.Model, info porcupine.LinearizationInfo, dir string, faults []history.Fault) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	var notes []porcupine.Annotation
	for _, f := range faults {
		notes = append(notes, porcupine.Annotation{Tag: "nemesis", Start: f.At, Description: f.Kind, Details: f.Nodes})
	}
	info.AddAnnotations(notes)
	path := filepath.Join(dir, "linearizability-"+fileSafe(sm.name)+".html")
	return path, porcupine.VisualizePath(model, info, path)
}

// fileSafe keeps show ids ([A-Za-z0-9._:-]) usable as file names.
func fileSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ':' || r == '\\' || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// describeOp renders an op for messages and the visualization.
func (sm *showModel) describeOp(o *mop) string {
	var b strings.Builder
	l := o.l
	switch o.kind {
	case history.KindHold:
		if o.count > 0 {
			fmt.Fprintf(&b, "hold(best %d%s, ttl %dms)", o.count, categoryWords(o.category), o.ttl)
		} else {
			fmt.Fprintf(&b, "hold(%s, ttl %dms)", strings.Join(l.Seats, " "), o.ttl)
		}
	case history.KindConfirm:
		fmt.Fprintf(&b, "confirm(%s, %q)", l.HoldID, l.PaymentRef)
	case history.KindRelease:
		fmt.Fprintf(&b, "release(%s)", l.HoldID)
	case history.KindRead:
		b.WriteString("read()")
	case history.KindGetHold:
		fmt.Fprintf(&b, "gethold(%s)", l.HoldID)
	case history.KindExtend:
		fmt.Fprintf(&b, "extend(%s, ttl %dms)", l.HoldID, o.ttl)
	case history.KindRefund:
		fmt.Fprintf(&b, "refund(%s)", l.HoldID)
	}
	b.WriteString(" → ")
	switch o.outcome {
	case history.Info:
		b.WriteString("info")
		if l.Reason != "" {
			b.WriteString(" " + l.Reason)
		}
		return b.String()
	case history.Fail:
		b.WriteString(l.Reason)
		if len(l.Taken) > 0 {
			fmt.Fprintf(&b, " %s", strings.Join(l.Taken, " "))
		}
	default:
		b.WriteString("ok")
		switch o.kind {
		case history.KindHold:
			fmt.Fprintf(&b, " %s exp %d", l.OutHoldID, l.ExpiresAtMs)
			if o.count > 0 {
				fmt.Fprintf(&b, " seats %s", strings.Join(l.OutSeats, " "))
			}
		case history.KindExtend:
			fmt.Fprintf(&b, " exp %d", l.ExpiresAtMs)
		case history.KindGetHold:
			fmt.Fprintf(&b, " %s", o.state)
		case history.KindRead:
			b.WriteString(" " + sm.describeView(o.view))
		}
	}
	if l.Replayed {
		b.WriteString(" (replayed)")
	}
	fmt.Fprintf(&b, " @r%d t%d", l.Revision, l.AppliedAtMs)
	return b.String()
}

// describeView lists a read's non-free seats.
func (sm *showModel) describeView(v []uint8) string {
	var held, booked []string
	for x, st := range v {
		switch st {
		case seatHeld:
			held = append(held, sm.seats[x])
		case seatBooked:
			booked = append(booked, sm.seats[x])
		}
	}
	if len(held)+len(booked) == 0 {
		return "all free"
	}
	return fmt.Sprintf("held[%s] booked[%s]", strings.Join(held, " "), strings.Join(booked, " "))
}

// describeState lists the holds that still own seats, and how many ended.
func (sm *showModel) describeState(s *state) string {
	var b strings.Builder
	fmt.Fprintf(&b, "r%d t%d", s.pos/2, s.clock)
	ended := 0
	for i := range sm.slots {
		h := s.holds.get(i)
		switch {
		case h.st == hNone:
			continue
		case h.st == hCancelled || h.st == hRefunded || (h.st == hHeld && h.hi <= s.clock && !h.mayConfirm):
			ended++
			continue
		}
		st := "HELD"
		switch {
		case h.st == hConfirmed:
			st = "BOOKED"
		case h.lo == h.hi:
			st = fmt.Sprintf("HELD until %d", h.lo)
		case h.hi == math.MaxInt64:
			st = fmt.Sprintf("HELD until >= %d", h.lo)
		default:
			st = fmt.Sprintf("HELD until [%d, %d]", h.lo, h.hi)
		}
		if h.mayConfirm || h.mayCancel || h.mayRefund {
			st += "?"
		}
		if sm.slots[i].wild {
			st += fmt.Sprintf(" (best %d%s, seats unknown)", sm.slots[i].count, categoryWords(sm.slots[i].category))
		}
		var seats []string
		for _, x := range sm.slots[i].seats {
			if s.seats.get(int(x)).owner == int32(i)+1 {
				seats = append(seats, sm.seats[x])
			}
		}
		fmt.Fprintf(&b, " | %s %s %s", sm.slots[i].id, st, strings.Join(seats, " "))
	}
	if ended > 0 {
		fmt.Fprintf(&b, " | %d ended", ended)
	}
	return b.String()
}
