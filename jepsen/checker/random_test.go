package checker

// This test proves on generated histories that the checker accepts what a
// correct server produces and rejects single wrong answers. A small
// sequential simulator of the seat semantics (independent of model.go)
// applies ops at hidden linearization points; each op gets a random
// call/return interval around its point, some ops become info (applied or
// not), some are re-sent. Every such history must pass every check. Then one
// output at a time is mutated, but only where the mutation is certainly
// illegal, and the check meant to catch it must report a violation.

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/jepsen/history"
)

type simHold struct {
	id, client string
	seats      []string
	exp        int64
	state      string // HELD, CONFIRMED, CANCELLED
	ref        string
}

type simSeat struct{ state, hold string }

// sim is the sequential reference: one show, one raft group.
type sim struct {
	clock int64
	rev   uint64
	owner map[string]string // seat -> the hold that last took it
	holds map[string]*simHold
	seats []string
}

func newSim(nseats int) *sim {
	s := &sim{clock: 1000, rev: 1, owner: map[string]string{}, holds: map[string]*simHold{}}
	for i := 1; i <= nseats; i++ {
		s.seats = append(s.seats, fmt.Sprintf("A%d", i))
	}
	return s
}

func (s *sim) seat(x string) simSeat {
	h := s.holds[s.owner[x]]
	switch {
	case h == nil:
		return simSeat{"FREE", ""}
	case h.state == "CONFIRMED":
		return simSeat{"BOOKED", h.id}
	case h.state == "HELD" && s.clock < h.exp:
		return simSeat{"HELD", h.id}
	}
	return simSeat{"FREE", ""}
}

func (s *sim) snapshot() map[string]simSeat {
	m := map[string]simSeat{}
	for _, x := range s.seats {
		m[x] = s.seat(x)
	}
	return m
}

func (s *sim) hold(client string, seats []string, ttl int64) (id string, taken []string, exp int64) {
	for _, x := range seats {
		if s.seat(x).state != "FREE" {
			taken = append(taken, x)
		}
	}
	if len(taken) > 0 {
		return "", taken, 0
	}
	id = fmt.Sprintf("h1-%d-%d", s.rev, len(s.holds))
	s.holds[id] = &simHold{id: id, client: client, seats: seats, exp: s.clock + ttl, state: "HELD"}
	for _, x := range seats {
		s.owner[x] = id
	}
	return id, nil, s.clock + ttl
}

// closed returns the rejection confirm and release share, "" if live.
func (s *sim) closed(client, id string) (*simHold, string) {
	h := s.holds[id]
	switch {
	case h == nil:
		return nil, "HOLD_NOT_FOUND"
	case h.client != client:
		return nil, "NOT_HOLD_OWNER"
	case h.state == "HELD" && s.clock >= h.exp:
		return nil, "HOLD_EXPIRED"
	}
	return h, ""
}

func (s *sim) confirm(client, id, ref string) string {
	h, why := s.closed(client, id)
	switch {
	case why == "HOLD_NOT_FOUND":
		return "HOLD_GONE"
	case why != "":
		return why
	case h.state == "CONFIRMED" && h.ref == ref:
		return ""
	case h.state == "CONFIRMED":
		return "HOLD_CONFIRMED"
	case h.state == "CANCELLED":
		return "HOLD_CANCELLED"
	}
	h.state, h.ref = "CONFIRMED", ref
	return ""
}

func (s *sim) release(client, id string) string {
	h, why := s.closed(client, id)
	switch {
	case why != "":
		return why
	case h.state == "CONFIRMED":
		return "HOLD_CONFIRMED"
	}
	h.state = "CANCELLED"
	return ""
}

func (s *sim) getHold(id string) (string, int64, bool) {
	h := s.holds[id]
	if h == nil {
		return "", 0, false
	}
	st := h.state
	if st == "HELD" && s.clock >= h.exp {
		st = "EXPIRED"
	}
	return "HOLD_STATE_" + st, h.exp, true
}

// gen generates a history and, per op ID, the seats' truth at its point.
type gen struct {
	r        *rand.Rand
	s        *sim
	h        *history.History
	truth    map[int]map[string]simSeat
	lastRet  []int64
	known    []knownHold // acknowledged holds, for confirms and releases
	batch    bool        // the last entry was a client write: the next may share it
	batchRet int64       // when the op that opened the last entry returned
	slots    int         // slots so far
	deferred []deferred  // info writes the server applies later
	infoPct  int
}

type knownHold struct {
	id      string
	process int
	ret     int64
}

// genConfig shapes generated histories.
type genConfig struct {
	ops, procs, seats int
	infoPct           int // percent of writes that end info (half of them applied)
}

var genSmall = genConfig{ops: 120, procs: 4, seats: 8, infoPct: 10}

func generate(seed int64, cfg genConfig) (*history.History, map[int]map[string]simSeat) {
	g := &gen{r: rand.New(rand.NewSource(seed)), s: newSim(cfg.seats), h: &history.History{Seed: seed},
		truth: map[int]map[string]simSeat{}, lastRet: make([]int64, cfg.procs), infoPct: cfg.infoPct}
	for k := int64(1); len(g.h.Ops) < cfg.ops; k++ {
		g.slot(k * 100)
	}
	g.final()
	return g.h, g.truth
}

// entry opens a new raft entry for write op, or joins the last one if that
// one's op had not returned when op was called (group commit).
func (g *gen) entry(op *history.Op) {
	if g.batch && op.Call < g.batchRet && g.r.Intn(4) == 0 {
		return
	}
	g.s.rev++
	g.s.clock += int64(g.r.Intn(300))
	g.batch, g.batchRet = true, op.Return
}

func (g *gen) slot(t int64) {
	g.slots++
	g.runDeferred()
	if g.r.Intn(8) == 0 { // a leader Expire entry: time passes
		g.s.rev++
		g.s.clock += int64(g.r.Intn(400))
		g.batch = false
	}
	var idle []int
	for p, r := range g.lastRet {
		if r < t {
			idle = append(idle, p)
		}
	}
	if len(idle) == 0 {
		return
	}
	p := idle[g.r.Intn(len(idle))]
	op := history.Op{ID: len(g.h.Ops), Process: p, Node: "n1", Show: show1, ClientID: fmt.Sprintf("c%d", p),
		RequestID: fmt.Sprintf("r%d", len(g.h.Ops)), Call: g.lastRet[p] + 1 + g.r.Int63n(t-g.lastRet[p]), Return: t + 1 + g.r.Int63n(250)}
	g.lastRet[p] = op.Return
	if g.resend(&op) {
		return
	}
	switch n := g.r.Intn(100); {
	case n < 35:
		g.hold(&op)
	case n < 50:
		g.confirmRelease(&op, history.KindConfirm)
	case n < 60:
		g.confirmRelease(&op, history.KindRelease)
	case n < 85:
		g.read(&op)
	default:
		g.getHold(&op)
	}
	g.truth[op.ID] = g.s.snapshot()
	g.h.Ops = append(g.h.Ops, op)
}

// Fates of a write: applied now, applied some slots later (an info op the
// server still applied after the client gave up), or never.
const (
	applyNever = iota
	applyNow
	applyLater
)

// fate decides when a write takes effect. Some writes become info (applied
// now, later or never), a few fail before the log.
func (g *gen) fate(op *history.Op) int {
	switch n := g.r.Intn(100); {
	case n < g.infoPct/3:
		op.Outcome, op.Reason, op.Return = history.Info, "OUTCOME_UNKNOWN", 0
		return applyNever
	case n < g.infoPct*2/3:
		op.Outcome, op.Reason, op.Return = history.Info, "DEADLINE_EXCEEDED", 0
		return applyLater
	case n < g.infoPct:
		g.entry(op)
		op.Outcome, op.Reason, op.Return = history.Info, "DEADLINE_EXCEEDED", 0
		return applyNow
	case n < g.infoPct+3:
		op.Outcome, op.Reason = history.Fail, "NOT_LEADER"
		return applyNever
	}
	g.entry(op)
	return applyNow
}

// later applies fn in its own entry a few slots from now.
func (g *gen) later(fn func()) {
	g.deferred = append(g.deferred, deferred{due: g.slots + 1 + g.r.Intn(20), fn: fn})
}

type deferred struct {
	due int
	fn  func()
}

// runDeferred applies the deferred writes that are due.
func (g *gen) runDeferred() {
	var keep []deferred
	for _, d := range g.deferred {
		if d.due > g.slots {
			keep = append(keep, d)
			continue
		}
		g.s.rev++
		g.s.clock += int64(g.r.Intn(300))
		g.batch = false
		d.fn()
	}
	g.deferred = keep
}

// stamp records the answer's revision and clock unless the op is info.
func (g *gen) stamp(op *history.Op, reason string) {
	if op.Outcome == history.Info {
		return
	}
	op.Outcome, op.Reason = history.OK, reason
	if reason != "" {
		op.Outcome = history.Fail
	}
	op.Revision, op.AppliedAtMs = g.s.rev, g.s.clock
}

func (g *gen) hold(op *history.Op) {
	op.Kind = history.KindHold
	perm := g.r.Perm(len(g.s.seats))[:1+g.r.Intn(3)]
	for _, i := range perm {
		op.Seats = append(op.Seats, g.s.seats[i])
	}
	op.TTLms = 500 + g.r.Int63n(2500)
	switch g.fate(op) {
	case applyNever:
		return
	case applyLater:
		client, seats, ttl := op.ClientID, op.Seats, op.TTLms
		g.later(func() { g.s.hold(client, seats, ttl) })
		return
	}
	id, taken, exp := g.s.hold(op.ClientID, op.Seats, op.TTLms)
	if op.Outcome == history.Info {
		return
	}
	if id == "" {
		g.stamp(op, "SEATS_TAKEN")
		op.Taken = taken
		return
	}
	g.stamp(op, "")
	op.OutHoldID, op.ExpiresAtMs, op.HoldState = id, exp, "HOLD_STATE_HELD"
	g.known = append(g.known, knownHold{id: id, process: op.Process, ret: op.Return})
}

// pick returns a hold the process learned of before call; mostly its own.
func (g *gen) pick(p int, call int64) (knownHold, bool) {
	var own, other []knownHold
	for _, k := range g.known {
		switch {
		case k.ret >= call:
		case k.process == p:
			own = append(own, k)
		default:
			other = append(other, k)
		}
	}
	if len(other) > 0 && (len(own) == 0 || g.r.Intn(10) == 0) {
		return other[g.r.Intn(len(other))], true
	}
	if len(own) == 0 {
		return knownHold{}, false
	}
	return own[len(own)-1-g.r.Intn(min(len(own), 3))], true
}

func (g *gen) confirmRelease(op *history.Op, kind history.Kind) {
	k, ok := g.pick(op.Process, op.Call)
	if !ok {
		g.read(op)
		return
	}
	op.Kind, op.HoldID = kind, k.id
	if kind == history.KindConfirm {
		op.PaymentRef = fmt.Sprintf("pay-%d", g.r.Intn(2))
	}
	switch g.fate(op) {
	case applyNever:
		return
	case applyLater:
		client, id, ref := op.ClientID, op.HoldID, op.PaymentRef
		g.later(func() {
			if kind == history.KindConfirm {
				g.s.confirm(client, id, ref)
			} else {
				g.s.release(client, id)
			}
		})
		return
	}
	var why string
	if kind == history.KindConfirm {
		why = g.s.confirm(op.ClientID, op.HoldID, op.PaymentRef)
	} else {
		why = g.s.release(op.ClientID, op.HoldID)
	}
	g.stamp(op, why)
	if op.Outcome == history.OK {
		op.HoldState, _, _ = g.s.getHold(op.HoldID)
	}
}

func (g *gen) read(op *history.Op) {
	op.Kind, op.Outcome = history.KindRead, history.OK
	g.batch = false
	if g.r.Intn(30) == 0 {
		op.Outcome, op.Reason, op.Return = history.Info, "DEADLINE_EXCEEDED", 0
		return
	}
	op.Revision, op.AppliedAtMs = g.s.rev, g.s.clock
	op.SeatStates = map[string]string{}
	for _, x := range g.s.seats {
		op.SeatStates[x] = g.s.seat(x).state
	}
}

func (g *gen) getHold(op *history.Op) {
	k, ok := g.pick(op.Process, op.Call)
	if !ok {
		g.read(op)
		return
	}
	op.Kind, op.HoldID = history.KindGetHold, k.id
	g.batch = false
	op.Revision, op.AppliedAtMs = g.s.rev, g.s.clock
	st, exp, _ := g.s.getHold(k.id)
	op.Outcome, op.HoldState, op.ExpiresAtMs = history.OK, st, exp
}

// resend re-sends one of the process's answered writes, answered the same.
func (g *gen) resend(op *history.Op) bool {
	if g.r.Intn(15) != 0 {
		return false
	}
	for i := len(g.h.Ops) - 1; i >= 0; i-- {
		o := g.h.Ops[i]
		if o.Process != op.Process || o.Resend || !mutating(o.Kind) || !answered(&o) || o.Return >= op.Call {
			continue
		}
		again := o
		again.ID, again.Call, again.Return = op.ID, op.Call, op.Return
		again.Resend, again.Of, again.Replayed = true, o.ID, true
		g.truth[again.ID] = g.s.snapshot()
		g.h.Ops = append(g.h.Ops, again)
		return true
	}
	return false
}

func (g *gen) final() {
	f := &history.Final{Seats: map[string]map[string]string{show1: {}}, Holds: map[string]history.FinalHold{},
		Digests: map[uint32]map[string]string{1: {"n1": "x", "n2": "x", "n3": "x"}}, Applied: map[uint32]uint64{1: g.s.rev},
		ReadAtMs: g.s.clock}
	for _, x := range g.s.seats {
		f.Seats[show1][x] = g.s.seat(x).state
	}
	for _, k := range g.known {
		h := g.s.holds[k.id]
		st, _, _ := g.s.getHold(k.id)
		f.Holds[k.id] = history.FinalHold{Show: show1, Seats: h.seats, State: st, ExpiresAtMs: h.exp, PaymentRef: h.ref}
	}
	g.h.Final = f
}

func TestRandomHistories(t *testing.T) {
	const seeds = 40
	applied := map[string]int{}
	for seed := int64(1); seed <= seeds; seed++ {
		h, truth := generate(seed, genSmall)
		r := Check(h, Options{Timeout: 10e9})
		if !r.Valid {
			var b strings.Builder
			r.WriteText(&b)
			t.Fatalf("seed %d: generated history is %s, want valid:\n%s", seed, r.Result, b.String())
		}
		for _, m := range mutations {
			mh := cloneHistory(h)
			if !m.apply(mh, truth) {
				continue
			}
			applied[m.name]++
			r := Check(mh, Options{Timeout: 10e9})
			for _, c := range m.caughtBy {
				if status(r, c) != StatusViolated {
					var b strings.Builder
					r.WriteText(&b)
					t.Errorf("seed %d, mutation %q: check %s = %s, want violated:\n%s", seed, m.name, c, status(r, c), b.String())
				}
			}
		}
	}
	for _, m := range mutations {
		if applied[m.name] < 3 {
			t.Errorf("mutation %q applied to %d histories; the generator no longer exercises it", m.name, applied[m.name])
		}
	}
	t.Logf("mutations applied: %v", applied)
}

func cloneHistory(h *history.History) *history.History {
	c := &history.History{Seed: h.Seed, Ops: make([]history.Op, len(h.Ops)), Faults: h.Faults}
	for i, op := range h.Ops {
		op.Seats = slices.Clone(op.Seats)
		if op.SeatStates != nil {
			m := map[string]string{}
			for k, v := range op.SeatStates {
				m[k] = v
			}
			op.SeatStates = m
		}
		c.Ops[i] = op
	}
	f := *h.Final
	f.Holds = map[string]history.FinalHold{}
	for k, v := range h.Final.Holds {
		f.Holds[k] = v
	}
	c.Final = &f
	return c
}

type mutation struct {
	name     string
	caughtBy []string
	// apply mutates h where the result is certainly illegal, or reports
	// that no op of h fits.
	apply func(h *history.History, truth map[int]map[string]simSeat) bool
}

var mutations = []mutation{
	{"read misses a live acknowledged hold", []string{CheckLinearizable, CheckS3}, mutReadFree},
	{"read books a seat no confirm could", []string{CheckLinearizable, CheckOrdering}, mutReadBooked},
	{"hold granted over a booking", []string{CheckLinearizable, CheckS1}, mutHoldOverBooking},
	{"seats taken answered as granted", []string{CheckLinearizable, CheckS1}, mutTakenGranted},
	{"expired hold confirmed", []string{CheckLinearizable, CheckOrdering}, mutConfirmExpired},
	{"stale read revision", []string{CheckOrdering}, mutStaleRevision},
	{"resend answered with another hold", []string{CheckS4}, mutResend},
	{"confirmed hold lost at the end", []string{CheckS2}, mutLostConfirm},
}

// namedBy reports whether any op of kind names hold id.
func namedBy(h *history.History, id string, kind history.Kind) bool {
	for _, op := range h.Ops {
		if op.Kind == kind && op.HoldID == id {
			return true
		}
	}
	return false
}

// holdOp returns the first acknowledged hold op that made id.
func holdOp(h *history.History, id string) *history.Op {
	for i := range h.Ops {
		if op := &h.Ops[i]; op.Kind == history.KindHold && op.Outcome == history.OK && op.OutHoldID == id && !op.Resend {
			return op
		}
	}
	return nil
}

// A seat HELD by an acknowledged, never-released hold, read FREE before
// its expiry.
func mutReadFree(h *history.History, truth map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.KindRead || r.Outcome != history.OK {
			continue
		}
		for _, x := range sortedSeats(r.SeatStates) {
			st := truth[r.ID][x]
			hop := holdOp(h, st.hold)
			if st.state != "HELD" || hop == nil || namedBy(h, st.hold, history.KindRelease) || r.Revision < hop.Revision {
				continue
			}
			r.SeatStates[x] = "FREE"
			return true
		}
	}
	return false
}

// A FREE seat read BOOKED where no confirm of a hold of it was called
// before the read returned.
func mutReadBooked(h *history.History, truth map[int]map[string]simSeat) bool {
	seatsOf := map[string][]string{}
	for _, op := range h.Ops {
		if op.Kind == history.KindHold && op.OutHoldID != "" {
			seatsOf[op.OutHoldID] = op.Seats
		}
	}
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.KindRead || r.Outcome != history.OK {
			continue
		}
		confirmed := map[string]bool{}
		for _, c := range h.Ops {
			if c.Kind == history.KindConfirm && c.Call < r.Return {
				for _, x := range seatsOf[c.HoldID] {
					confirmed[x] = true
				}
			}
		}
		for _, x := range sortedSeats(r.SeatStates) {
			if r.SeatStates[x] == "FREE" && !confirmed[x] && !heldByInfo(h, x) {
				r.SeatStates[x] = "BOOKED"
				return true
			}
		}
	}
	return false
}

// heldByInfo reports whether an info hold asked for seat x: its hold id is
// unknown, so a confirm could not name it, but stay on the safe side.
func heldByInfo(h *history.History, x string) bool {
	for _, op := range h.Ops {
		if op.Kind == history.KindHold && op.Outcome == history.Info && slices.Contains(op.Seats, x) {
			return true
		}
	}
	return false
}

// An acknowledged hold that also claims a seat BOOKED by a confirm that
// returned before the hold was called.
func mutHoldOverBooking(h *history.History, truth map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		k := &h.Ops[i]
		if k.Kind != history.KindHold || k.Outcome != history.OK || k.Resend {
			continue
		}
		for _, c := range h.Ops {
			if c.Kind != history.KindConfirm || c.Outcome != history.OK || c.Return >= k.Call {
				continue
			}
			b := holdOp(h, c.HoldID)
			if b == nil {
				continue
			}
			for _, x := range b.Seats {
				if !slices.Contains(k.Seats, x) && truth[k.ID][x].state == "BOOKED" {
					k.Seats = append(k.Seats, x)
					return true
				}
			}
		}
	}
	return false
}

// A SEATS_TAKEN hold turned into a grant where a seat it asked for was held
// by an acknowledged, never-released hold.
func mutTakenGranted(h *history.History, truth map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		k := &h.Ops[i]
		if k.Kind != history.KindHold || k.Reason != "SEATS_TAKEN" || k.Resend {
			continue
		}
		for _, x := range k.Seats {
			st := truth[k.ID][x]
			hop := holdOp(h, st.hold)
			if st.state != "HELD" || hop == nil || namedBy(h, st.hold, history.KindRelease) {
				continue
			}
			k.Outcome, k.Reason, k.Taken = history.OK, "", nil
			k.OutHoldID, k.ExpiresAtMs = fmt.Sprintf("mut-%d", k.ID), k.AppliedAtMs+k.TTLms
			return true
		}
	}
	return false
}

// A confirm answered HOLD_EXPIRED turned into a success.
func mutConfirmExpired(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		c := &h.Ops[i]
		if c.Kind == history.KindConfirm && c.Reason == "HOLD_EXPIRED" && !c.Resend {
			c.Outcome, c.Reason, c.HoldState = history.OK, "", "HOLD_STATE_CONFIRMED"
			return true
		}
	}
	return false
}

// A read whose revision is older than a write that returned before it.
func mutStaleRevision(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.KindRead || r.Outcome != history.OK {
			continue
		}
		for _, w := range h.Ops {
			if mutating(w.Kind) && w.Outcome != history.Info && w.Revision >= 2 && w.Return < r.Call && w.Revision <= r.Revision {
				r.Revision = w.Revision - 1
				return true
			}
		}
	}
	return false
}

// A resend of an acknowledged hold answered with another hold id.
func mutResend(h *history.History, _ map[int]map[string]simSeat) bool {
	for _, op := range h.Ops {
		if op.Kind != history.KindHold || op.Outcome != history.OK || op.Resend {
			continue
		}
		again := op
		again.ID, again.Resend, again.Of, again.Replayed = len(h.Ops), true, op.ID, true
		again.Call, again.Return = h.Ops[len(h.Ops)-1].Call+1000, h.Ops[len(h.Ops)-1].Call+2000
		again.OutHoldID = op.OutHoldID + "x"
		h.Ops = append(h.Ops, again)
		return true
	}
	return false
}

// An acknowledged confirm whose hold ends HELD in the final reads.
func mutLostConfirm(h *history.History, _ map[int]map[string]simSeat) bool {
	for _, op := range h.Ops {
		if op.Kind == history.KindConfirm && op.Outcome == history.OK {
			fh := h.Final.Holds[op.HoldID]
			fh.State = "HOLD_STATE_EXPIRED"
			h.Final.Holds[op.HoldID] = fh
			return true
		}
	}
	return false
}

func sortedSeats(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int {
		if seatLess(a, b) {
			return -1
		}
		if seatLess(b, a) {
			return 1
		}
		return 0
	})
	return out
}
