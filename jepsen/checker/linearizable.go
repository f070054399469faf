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

// linearize checks the show with porcupine within budget and, if it finds
// no linearization, explains where the longest one stops and writes the
// visualization to opt.OutDir.
func (sm *showModel) linearize(budget time.Duration, opt Options, faults []history.Fault, rep *reporter) ShowResult {
	res := ShowResult{Show: sm.name, Ops: len(sm.ops), Result: "ok"}
	if len(sm.ops) == 0 {
		return res
	}
	if budget <= 0 {
		res.Result = "unknown"
		rep.undecided(CheckLinearizable, "show %s: not checked, the time budget was spent (%d ops)", sm.name, len(sm.ops))
		return res
	}
	start := time.Now()
	defer func() { res.ElapsedMs = float64(time.Since(start).Microseconds()) / 1000 }()
	model, ops := sm.porcupineModel(), sm.operations()
	sm.quiet = true
	verdict := porcupine.CheckOperationsTimeout(model, ops, budget)
	sm.quiet = false
	switch verdict {
	case porcupine.Ok:
		return res
	case porcupine.Unknown:
		res.Result = "unknown"
		rep.undecided(CheckLinearizable, "show %s: no verdict within %s (%d ops)", sm.name, budget.Round(time.Millisecond), len(ops))
		return res
	}
	res.Result = "illegal"
	sm.quiet = true
	verdict, info := porcupine.CheckOperationsVerbose(model, ops, budget)
	sm.quiet = false
	ids, msg := []int(nil), "no linearization exists"
	if verdict == porcupine.Illegal {
		ids, msg = sm.explain(info)
	}
	if opt.OutDir != "" {
		path, err := sm.visualize(model, info, opt.OutDir, faults)
		if err != nil {
			rep.warnf("show %s: visualization: %v", sm.name, err)
		} else {
			res.HTML = path
			msg += "; see " + path
		}
	}
	rep.violation(CheckLinearizable, sm.name, ids, "%s", msg)
	return res
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
		fmt.Fprintf(&b, "hold(%s, ttl %dms)", strings.Join(l.Seats, " "), o.ttl)
	case history.KindConfirm:
		fmt.Fprintf(&b, "confirm(%s, %q)", l.HoldID, l.PaymentRef)
	case history.KindRelease:
		fmt.Fprintf(&b, "release(%s)", l.HoldID)
	case history.KindRead:
		b.WriteString("read()")
	case history.KindGetHold:
		fmt.Fprintf(&b, "gethold(%s)", l.HoldID)
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
		case h.st == hCancelled || (h.st == hHeld && h.hi <= s.clock && !h.mayConfirm):
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
		if h.mayConfirm || h.mayCancel {
			st += "?"
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
