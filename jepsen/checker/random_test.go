package checker

// This test proves on generated histories that the checker accepts what a
// correct server produces and rejects single wrong answers. A small
// sequential simulator of the seat semantics (independent of model.go)
// applies ops at hidden linearization points: holds of named seats and
// best available (some of a category; the simulator grants any free seats,
// not the best ones), confirm, release, extend, refund, reads, and the
// per-client limit on live holds, and the waiting queue (a best-available
// hold that asks to wait joins the line; at the start of each step the
// queue offers free seats to the waiters in line order; waiters read their
// entry, adopt the offered hold, or leave). Each op gets a random call/return
// interval around its point, some ops become info (applied now, later or
// never), some are re-sent. Every such history must pass every check. Then
// one output at a time is mutated, or one wrong answer inserted, but only
// where the result is certainly illegal, and the check meant to catch it
// must report a violation.

import (
	"flag"
	"fmt"
	"maps"
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
	state      string // HELD, CONFIRMED, CANCELLED, REFUNDED
	ref        string
}

// simHoldsMax is the simulator's per-client limit on live holds: lower
// than the server's so that small histories reach it.
const simHoldsMax = 3

type simSeat struct{ state, hold string }

// sim is the sequential reference: one show, one raft group.
type sim struct {
	clock int64
	rev   uint64
	owner map[string]string // seat -> the hold that last took it
	holds map[string]*simHold
	seats []string
	cat   map[string]string // seat -> category: the first third vip, the rest std
	line  []*simEntry       // the queue's entries in join order
	offer int               // offers made so far (numbers their hold ids)
}

// simEntry is a queue entry: WAITING, OFFERED (hold) or LEFT.
type simEntry struct {
	id, client, category string
	count                int
	state, hold          string
}

// join puts client in line, or answers its waiting entry.
func (s *sim) join(client string, count int, category string) string {
	for _, e := range s.line {
		if e.client == client && e.state == "WAITING" {
			return e.id
		}
	}
	e := &simEntry{id: fmt.Sprintf("q1-%d-%d", s.rev, len(s.line)), client: client, count: count, category: category, state: "WAITING"}
	s.line = append(s.line, e)
	return e.id
}

// offerFree offers free seats to the waiters in line order, as the end of
// an entry that freed seats does; a waiter that does not fit is skipped.
// Each offer is a hold in the waiter's name for the claim window, its id
// naming the current revision as fsm's do.
func (s *sim) offerFree() {
	for _, e := range s.line {
		if e.state != "WAITING" {
			continue
		}
		var free []string
		for _, x := range s.seats {
			if s.seat(x).state == "FREE" && (e.category == "" || s.cat[x] == e.category) {
				free = append(free, x)
			}
		}
		if len(free) < e.count {
			continue
		}
		id := fmt.Sprintf("h1-%d-%d", s.rev, 4096+s.offer)
		s.offer++
		seats := free[:e.count]
		s.holds[id] = &simHold{id: id, client: e.client, seats: seats, exp: s.clock + queueClaimWindowMs, state: "HELD"}
		for _, x := range seats {
			s.owner[x] = id
		}
		e.state, e.hold = "OFFERED", id
	}
}

func (s *sim) entry(id string) *simEntry {
	for _, e := range s.line {
		if e.id == id {
			return e
		}
	}
	return nil
}

// leave takes a waiting entry out of line; leaving again succeeds again,
// and an offered entry cannot leave.
func (s *sim) leave(client, id string) string {
	e := s.entry(id)
	switch {
	case e == nil || e.state == "OFFERED":
		return "NOT_QUEUED"
	case e.client != client:
		return "NOT_HOLD_OWNER"
	}
	e.state = "LEFT"
	return ""
}

func newSim(nseats int) *sim {
	s := &sim{clock: 1000, rev: 1, owner: map[string]string{}, holds: map[string]*simHold{}, cat: map[string]string{}}
	for i := 1; i <= nseats; i++ {
		x := fmt.Sprintf("A%d", i)
		s.seats = append(s.seats, x)
		s.cat[x] = "std"
		if i <= nseats/3 {
			s.cat[x] = "vip"
		}
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

// hold takes the named seats, answering TOO_MANY_HOLDS or SEATS_TAKEN
// (with the taken seats) in the server's order.
func (s *sim) hold(client string, seats []string, ttl int64) (id string, taken []string, exp int64, why string) {
	if s.live(client) >= simHoldsMax {
		return "", nil, 0, "TOO_MANY_HOLDS"
	}
	for _, x := range seats {
		if s.seat(x).state != "FREE" {
			taken = append(taken, x)
		}
	}
	if len(taken) > 0 {
		return "", taken, 0, "SEATS_TAKEN"
	}
	id, exp = s.grant(client, seats, ttl)
	return id, nil, exp, ""
}

// best takes count free seats of category ("" = any), any of them: the
// checker does not judge the choice.
func (s *sim) best(r *rand.Rand, client string, count int, category string, ttl int64, wait bool) (id string, seats []string, exp int64, why string) {
	var free []string
	for _, x := range s.seats {
		if s.seat(x).state == "FREE" && (category == "" || s.cat[x] == category) {
			free = append(free, x)
		}
	}
	switch {
	case len(free) < count && wait:
		return s.join(client, count, category), nil, 0, "QUEUED"
	case len(free) < count:
		return "", nil, 0, "SOLD_OUT"
	case s.live(client) >= simHoldsMax:
		return "", nil, 0, "TOO_MANY_HOLDS"
	}
	for _, i := range r.Perm(len(free))[:count] {
		seats = append(seats, free[i])
	}
	id, exp = s.grant(client, seats, ttl)
	return id, seats, exp, ""
}

func (s *sim) grant(client string, seats []string, ttl int64) (string, int64) {
	id := fmt.Sprintf("h1-%d-%d", s.rev, len(s.holds))
	s.holds[id] = &simHold{id: id, client: client, seats: seats, exp: s.clock + ttl, state: "HELD"}
	for _, x := range seats {
		s.owner[x] = id
	}
	return id, s.clock + ttl
}

// live counts client's live holds.
func (s *sim) live(client string) int {
	n := 0
	for _, h := range s.holds {
		if h.client == client && h.state == "HELD" && s.clock < h.exp {
			n++
		}
	}
	return n
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
	case h.state == "CONFIRMED" || h.state == "REFUNDED":
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
	case h.state == "CONFIRMED" || h.state == "REFUNDED":
		return "HOLD_CONFIRMED"
	}
	h.state = "CANCELLED"
	return ""
}

// extend moves a live hold's expiry to max(old, clock + ttl).
func (s *sim) extend(client, id string, ttl int64) (int64, string) {
	h, why := s.closed(client, id)
	switch {
	case why != "":
		return 0, why
	case h.state == "CONFIRMED" || h.state == "REFUNDED":
		return 0, "HOLD_CONFIRMED"
	case h.state == "CANCELLED":
		return 0, "HOLD_CANCELLED"
	}
	h.exp = max(h.exp, s.clock+ttl)
	return h.exp, ""
}

// refund turns a booking into a refunded one; its seats read FREE.
func (s *sim) refund(client, id string) string {
	h, why := s.closed(client, id)
	switch {
	case why != "":
		return why
	case h.state == "HELD" || h.state == "CANCELLED":
		return "HOLD_NOT_CONFIRMED"
	}
	h.state = "REFUNDED"
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
	known    []knownHold  // acknowledged holds, for confirms, releases and extends
	entries  []knownEntry // queue entries the processes learned of
	booked   []knownHold  // acknowledged confirms' holds, for refunds
	batch    bool         // the last entry was a client write: the next may share it
	batchRet int64        // when the op that opened the last entry returned
	slots    int          // slots so far
	deferred []deferred   // info writes the server applies later
	infoPct  int
}

type knownEntry struct {
	id      string
	process int
	ret     int64
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
	g.s.offerFree() // at the end of the last entry, before anything reads it
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
	case n < 48:
		g.act(&op, history.KindConfirm)
	case n < 55:
		g.act(&op, history.KindRelease)
	case n < 63:
		g.act(&op, history.KindExtend)
	case n < 70:
		g.act(&op, history.KindRefund)
	case n < 82:
		g.queue(&op)
	case n < 88:
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
	op.TTLms = 500 + g.r.Int63n(2500)
	if g.r.Intn(5) < 2 {
		g.holdBest(op)
		return
	}
	perm := g.r.Perm(len(g.s.seats))[:1+g.r.Intn(3)]
	for _, i := range perm {
		op.Seats = append(op.Seats, g.s.seats[i])
	}
	switch g.fate(op) {
	case applyNever:
		return
	case applyLater:
		client, seats, ttl := op.ClientID, op.Seats, op.TTLms
		g.later(func() { g.s.hold(client, seats, ttl) })
		return
	}
	id, taken, exp, why := g.s.hold(op.ClientID, op.Seats, op.TTLms)
	if op.Outcome == history.Info {
		return
	}
	g.stamp(op, why)
	if why != "" {
		op.Taken = taken
		return
	}
	op.OutHoldID, op.ExpiresAtMs, op.HoldState = id, exp, "HOLD_STATE_HELD"
	g.known = append(g.known, knownHold{id: id, process: op.Process, ret: op.Return})
}

// holdBest asks for 1 or 2 best available seats, of a category or not.
func (g *gen) holdBest(op *history.Op) {
	op.Count, op.Category = 1+g.r.Intn(2), []string{"", "vip", "std"}[g.r.Intn(3)]
	op.Wait = g.r.Intn(2) == 0
	switch g.fate(op) {
	case applyNever:
		return
	case applyLater:
		client, count, category, ttl, wait := op.ClientID, op.Count, op.Category, op.TTLms, op.Wait
		g.later(func() { g.s.best(g.r, client, count, category, ttl, wait) })
		return
	}
	id, seats, exp, why := g.s.best(g.r, op.ClientID, op.Count, op.Category, op.TTLms, op.Wait)
	if op.Outcome == history.Info {
		return
	}
	g.stamp(op, why)
	if why == "QUEUED" {
		op.QueueEntryID, op.QueueToken = id, "qt-"+id
		g.entries = append(g.entries, knownEntry{id: id, process: op.Process, ret: op.Return})
	}
	if why == "" {
		op.OutHoldID, op.OutSeats, op.ExpiresAtMs, op.HoldState = id, seats, exp, "HOLD_STATE_HELD"
		g.known = append(g.known, knownHold{id: id, process: op.Process, ret: op.Return})
	}
}

// pick returns a hold the process learned of before call; mostly its own.
// A refund picks mostly among the bookings.
func (g *gen) pick(p int, call int64, kind history.Kind) (knownHold, bool) {
	var own, other []knownHold
	from := g.known
	if kind == history.KindRefund && g.r.Intn(4) != 0 {
		from = g.booked
	}
	for _, k := range from {
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

// act confirms, releases, extends or refunds a hold the process knows.
func (g *gen) act(op *history.Op, kind history.Kind) {
	k, ok := g.pick(op.Process, op.Call, kind)
	if !ok {
		g.read(op)
		return
	}
	op.Kind, op.HoldID = kind, k.id
	switch kind {
	case history.KindConfirm:
		op.PaymentRef = fmt.Sprintf("pay-%d", g.r.Intn(2))
	case history.KindExtend:
		op.TTLms = 500 + g.r.Int63n(2500)
	}
	switch g.fate(op) {
	case applyNever:
		return
	case applyLater:
		o := *op
		g.later(func() { g.apply(&o) })
		return
	}
	exp, why := g.apply(op)
	g.stamp(op, why)
	if op.Outcome != history.OK {
		return
	}
	op.HoldState, _, _ = g.s.getHold(op.HoldID)
	switch kind {
	case history.KindExtend:
		op.HoldState, op.ExpiresAtMs = "", exp
	case history.KindConfirm:
		g.booked = append(g.booked, knownHold{id: op.HoldID, process: op.Process, ret: op.Return})
	}
}

// apply runs a confirm, release, extend or refund on the simulator.
func (g *gen) apply(op *history.Op) (exp int64, why string) {
	switch op.Kind {
	case history.KindConfirm:
		return 0, g.s.confirm(op.ClientID, op.HoldID, op.PaymentRef)
	case history.KindRelease:
		return 0, g.s.release(op.ClientID, op.HoldID)
	case history.KindExtend:
		return g.s.extend(op.ClientID, op.HoldID, op.TTLms)
	}
	return 0, g.s.refund(op.ClientID, op.HoldID)
}

// queue reads an entry the process learned of (adopting an offered hold)
// or, one time in five, leaves it.
func (g *gen) queue(op *history.Op) {
	var own []knownEntry
	for _, e := range g.entries {
		if e.process == op.Process && e.ret < op.Call {
			own = append(own, e)
		}
	}
	if len(own) == 0 {
		g.read(op)
		return
	}
	e := g.s.entry(own[g.r.Intn(len(own))].id)
	op.QueueEntryID, op.QueueToken = e.id, "qt-"+e.id
	if g.r.Intn(5) == 0 {
		op.Kind = history.KindLeave
		g.entry(op)
		g.stamp(op, g.s.leave(op.ClientID, e.id))
		return
	}
	op.Kind, op.Outcome, op.ClientID, op.RequestID = history.KindQueueEntry, history.OK, "", ""
	g.batch = false
	op.Revision, op.AppliedAtMs = g.s.rev, g.s.clock
	op.QueueState, op.Count, op.Category = e.state, e.count, e.category
	if e.state != "OFFERED" {
		return
	}
	h := g.s.holds[e.hold]
	op.OutHoldID, op.OutToken, op.OutSeats = h.id, "ht-"+h.id, slices.Clone(h.seats)
	op.HoldState, _, _ = g.s.getHold(h.id)
	op.ExpiresAtMs = h.exp
	if !slices.ContainsFunc(g.known, func(k knownHold) bool { return k.id == h.id }) {
		g.known = append(g.known, knownHold{id: h.id, process: op.Process, ret: op.Return})
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
	k, ok := g.pick(op.Process, op.Call, history.KindGetHold)
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
	g.h.Layouts = []history.Layout{{Show: show1, Seats: g.s.cat}}
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

// randomSeeds is how many histories TestRandomHistories generates; raise it
// (go test -run TestRandomHistories -args -random-seeds=2000) to hunt for
// false alarms after changing the model.
var randomSeeds = flag.Int("random-seeds", 40, "histories TestRandomHistories generates")

func TestRandomHistories(t *testing.T) {
	seeds := int64(*randomSeeds)
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
	c := &history.History{Seed: h.Seed, Ops: make([]history.Op, len(h.Ops)), Faults: h.Faults, Layouts: h.Layouts}
	for i, op := range h.Ops {
		op.Seats = slices.Clone(op.Seats)
		op.OutSeats = slices.Clone(op.OutSeats)
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
	f.Seats = map[string]map[string]string{}
	for show, seats := range h.Final.Seats {
		f.Seats[show] = maps.Clone(seats)
	}
	f.Applied = maps.Clone(h.Final.Applied)
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
	{"best available granted a held seat", []string{CheckLinearizable, CheckS1}, mutBestHeldSeat},
	{"sold out while seats were free", []string{CheckLinearizable}, mutSoldOutFree},
	{"refunded seat granted before the refund", []string{CheckLinearizable, CheckS1}, mutRefundLate},
	{"booking refunded without a refund", []string{CheckS2}, mutLostNoRefund},
	{"read misses a hold kept by its extension", []string{CheckLinearizable, CheckS3}, mutReadExtended},
	{"unconfirmed hold refunded", []string{CheckLinearizable}, mutRefundUnconfirmed},
	{"extend reports a wrong expiry", []string{CheckLinearizable}, mutExtendWrong},
	{"queued while seats were free", []string{CheckLinearizable}, mutQueuedFree},
	{"offer read grants a taken seat", []string{CheckLinearizable, CheckS1}, mutOfferOverTaken},
	{"offer read while its seats were taken", []string{CheckLinearizable, CheckS1}, mutOfferFabricated},
	{"entry read offered after it was left", []string{CheckOrdering}, mutOfferAfterLeave},
}

// takenThrough returns a seat certainly taken from before t until the log
// clock reached clock: booked for good (an OK confirm of an acknowledged
// hold of it returned before t, and no refund of it was ever sent), or
// held by an acknowledged hold that returned before t, expires after
// clock, and no release or refund names. It skips the seats in not.
func takenThrough(h *history.History, t, clock int64, not []string) (string, bool) {
	for _, k := range h.Ops {
		if k.Kind != history.KindHold || k.Outcome != history.OK || k.Resend || k.Return >= t || k.ExpiresAtMs <= clock || mayEnd(h, k.OutHoldID) {
			continue
		}
		for _, x := range k.GrantedSeats() {
			if !slices.Contains(not, x) {
				return x, true
			}
		}
	}
	for _, c := range h.Ops {
		if c.Kind != history.KindConfirm || c.Outcome != history.OK || c.Return >= t || namedBy(h, c.HoldID, history.KindRefund) {
			continue
		}
		b := holdOp(h, c.HoldID)
		if b == nil {
			continue
		}
		for _, x := range b.GrantedSeats() {
			if !slices.Contains(not, x) {
				return x, true
			}
		}
	}
	return "", false
}

// offerAfter is a time the offer that read o saw certainly came after: the
// latest call of a join naming its entry or of a read that found it
// WAITING before o returned. ok is false when no join names it.
func offerAfter(h *history.History, o *history.Op) (t int64, ok bool) {
	for _, op := range h.Ops {
		switch {
		case op.QueueEntryID != o.QueueEntryID:
		case op.Kind == history.KindHold && op.Reason == "QUEUED":
			t, ok = max(t, op.Call), true
		case op.Kind == history.KindQueueEntry && op.QueueState == "WAITING" && op.Call < o.Return:
			t = max(t, op.Call)
		}
	}
	return t, ok
}

// entryFate reports whether entry id was ever read OFFERED, or left.
func entryFate(h *history.History, id string) (offered, left bool) {
	for _, op := range h.Ops {
		if op.QueueEntryID != id || op.Outcome != history.OK {
			continue
		}
		offered = offered || op.Kind == history.KindQueueEntry && op.QueueState == "OFFERED"
		left = left || op.Kind == history.KindLeave || op.QueueState == "LEFT"
	}
	return offered, left
}

// An entry's first OFFERED read names, in place of one of its seats, a
// seat taken from before the offer could have been made until after.
func mutOfferOverTaken(h *history.History, _ map[int]map[string]simSeat) bool {
	seen := map[string]bool{}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Kind != history.KindQueueEntry || o.QueueState != "OFFERED" || seen[o.QueueEntryID] {
			continue
		}
		seen[o.QueueEntryID] = true
		t, ok := offerAfter(h, o)
		if !ok {
			continue
		}
		// The offer was made at the log clock its expiry names.
		if x, ok := takenThrough(h, t, o.ExpiresAtMs-queueClaimWindowMs, o.OutSeats); ok {
			o.OutSeats[0] = x
			return true
		}
	}
	return false
}

// An OFFERED read, inserted right after a join whose entry was never
// offered nor left, of an offer made at the join's revision that holds a
// seat taken from before the join was called until after it applied.
func mutOfferFabricated(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		j := h.Ops[i]
		if j.Kind != history.KindHold || j.Reason != "QUEUED" || j.Resend || j.Revision == 0 {
			continue
		}
		if offered, left := entryFate(h, j.QueueEntryID); offered || left {
			continue
		}
		x, ok := takenThrough(h, j.Call, j.AppliedAtMs, nil)
		if !ok {
			continue
		}
		seats := []string{x}
		for _, s := range sortedSeats(h.Final.Seats[show1]) {
			if len(seats) < j.Count && s != x {
				seats = append(seats, s)
			}
		}
		h.Ops = append(h.Ops, history.Op{ID: len(h.Ops), Process: j.Process, Node: "n1", Kind: history.KindQueueEntry, Show: show1,
			Call: j.Return + 1, Return: j.Return + 2, QueueEntryID: j.QueueEntryID, QueueToken: j.QueueToken, Outcome: history.OK,
			QueueState: "OFFERED", Count: j.Count, Category: j.Category, OutHoldID: fmt.Sprintf("h1-%d-%d", j.Revision, 9000+j.ID),
			OutToken: "mut", OutSeats: seats, HoldState: "HOLD_STATE_HELD", ExpiresAtMs: j.AppliedAtMs + queueClaimWindowMs,
			Revision: j.Revision, AppliedAtMs: j.AppliedAtMs})
		return true
	}
	return false
}

// An OFFERED read inserted after a leave of the entry succeeded: a left
// entry is never offered.
func mutOfferAfterLeave(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		l := h.Ops[i]
		if l.Kind != history.KindLeave || l.Outcome != history.OK {
			continue
		}
		id := fmt.Sprintf("h1-%d-%d", l.Revision+1, 9000+l.ID)
		h.Ops = append(h.Ops, history.Op{ID: len(h.Ops), Process: l.Process, Node: "n1", Kind: history.KindQueueEntry, Show: show1,
			Call: l.Return + 1, Return: l.Return + 2, QueueEntryID: l.QueueEntryID, QueueToken: l.QueueToken, Outcome: history.OK,
			QueueState: "OFFERED", Count: 1, OutHoldID: id, OutToken: "mut", OutSeats: []string{"A1"}, HoldState: "HOLD_STATE_HELD"})
		return true
	}
	return false
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

// mayEnd reports whether a release or refund names hold id: the checker
// may count it as ended as early as such an op was sent.
func mayEnd(h *history.History, id string) bool {
	return namedBy(h, id, history.KindRelease) || namedBy(h, id, history.KindRefund)
}

// infoNamed reports whether an info op of kind names hold id: whether it
// took effect, and when, the checker cannot know.
func infoNamed(h *history.History, id string, kind history.Kind) bool {
	for _, op := range h.Ops {
		if op.Kind == kind && op.HoldID == id && op.Outcome == history.Info {
			return true
		}
	}
	return false
}

// calledAfter reports whether an answered op of revision rev was called
// after t: an op inserted at rev+1 (doubled) that returns at t would then
// come after it in real time but before it in the log.
func calledAfter(h *history.History, rev uint64, t int64) bool {
	for _, op := range h.Ops {
		if op.Revision == rev && op.Outcome != history.Info && op.Call > t {
			return true
		}
	}
	return false
}

// doubleRevisions makes room for an op between any two revisions.
// Offered holds' ids name their revision, so they are renamed to match.
func doubleRevisions(h *history.History) {
	rename := func(id string) string {
		var rev, pos int
		if n, _ := fmt.Sscanf(id, "h1-%d-%d", &rev, &pos); n == 2 && pos >= 4096 {
			return fmt.Sprintf("h1-%d-%d", 2*rev, pos)
		}
		return id
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		op.Revision *= 2
		if op.Kind != history.KindHold {
			op.OutHoldID = rename(op.OutHoldID)
		}
		op.HoldID = rename(op.HoldID)
	}
	holds := map[string]history.FinalHold{}
	for id, fh := range h.Final.Holds {
		holds[rename(id)] = fh
	}
	h.Final.Holds = holds
	for g := range h.Final.Applied {
		h.Final.Applied[g] *= 2
	}
}

// resent reports whether some op re-sends op id.
func resent(h *history.History, id int) bool {
	for _, op := range h.Ops {
		if op.Resend && op.Of == id {
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
			if st.state != "HELD" || hop == nil || mayEnd(h, st.hold) || infoNamed(h, st.hold, history.KindExtend) || r.Revision < hop.Revision {
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
			seatsOf[op.OutHoldID] = op.GrantedSeats()
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
		if k.Kind != history.KindHold || k.Outcome != history.OK || k.Resend || k.Count > 0 {
			continue
		}
		for _, c := range h.Ops {
			if c.Kind != history.KindConfirm || c.Outcome != history.OK || c.Return >= k.Call || namedBy(h, c.HoldID, history.KindRefund) {
				continue
			}
			b := holdOp(h, c.HoldID)
			if b == nil {
				continue
			}
			for _, x := range b.GrantedSeats() {
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
			if st.state != "HELD" || hop == nil || mayEnd(h, st.hold) || infoNamed(h, st.hold, history.KindExtend) {
				continue
			}
			k.Outcome, k.Reason, k.Taken = history.OK, "", nil
			k.OutHoldID, k.ExpiresAtMs = fmt.Sprintf("mut-%d", k.ID), k.AppliedAtMs+k.TTLms
			return true
		}
	}
	return false
}

// A confirm answered HOLD_EXPIRED turned into a success, where no info
// extend may have kept the hold live and no info confirm may have confirmed
// it already (with the same payment ref a confirm succeeds again).
func mutConfirmExpired(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		c := &h.Ops[i]
		if c.Kind == history.KindConfirm && c.Reason == "HOLD_EXPIRED" && !c.Resend &&
			!infoNamed(h, c.HoldID, history.KindExtend) && !infoNamed(h, c.HoldID, history.KindConfirm) {
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

// A best-available grant that swaps one of its seats for a seat of its
// category then HELD by an acknowledged hold nothing could have ended.
func mutBestHeldSeat(h *history.History, truth map[int]map[string]simSeat) bool {
	cat := h.Layouts[0].Seats
	for i := range h.Ops {
		k := &h.Ops[i]
		if k.Kind != history.KindHold || k.Outcome != history.OK || k.Count == 0 || k.Resend {
			continue
		}
		for _, x := range sortedSeats(cat) {
			st := truth[k.ID][x]
			if st.state != "HELD" || st.hold == k.OutHoldID || holdOp(h, st.hold) == nil || slices.Contains(k.OutSeats, x) ||
				(k.Category != "" && cat[x] != k.Category) || mayEnd(h, st.hold) || infoNamed(h, st.hold, history.KindExtend) {
				continue
			}
			k.OutSeats[0] = x
			return true
		}
	}
	return false
}

// A SOLD_OUT answer inserted right after a read (between its revision and
// the next) that saw enough seats of the category free, none of which an
// info hold may have taken in between.
func mutSoldOutFree(h *history.History, _ map[int]map[string]simSeat) bool {
	return freeRefused(h, "SOLD_OUT")
}

// The same refusal as a queue join (with no entry named, so that no unseen
// offer could explain it): the server queues exactly where it would answer
// SOLD_OUT.
func mutQueuedFree(h *history.History, _ map[int]map[string]simSeat) bool {
	return freeRefused(h, "QUEUED")
}

// freeRefused inserts a best-available hold refused with reason after a
// read that saw enough seats free.
func freeRefused(h *history.History, reason string) bool {
	cat := h.Layouts[0].Seats
	infoSeats := map[string]bool{}
	wild := map[string]int{} // category -> seats info best-available holds may hold
	for _, op := range h.Ops {
		// Info holds, and queue entries (whose offers may be unseen).
		if op.Kind == history.KindHold && (op.Outcome == history.Info || op.Reason == "QUEUED") {
			wild[op.Category] += op.Count
			for _, x := range op.Seats {
				infoSeats[x] = true
			}
		}
	}
	for i := range h.Ops {
		r := h.Ops[i]
		if r.Kind != history.KindRead || r.Outcome != history.OK || calledAfter(h, r.Revision, r.Return) {
			continue
		}
		for _, category := range []string{"", "vip", "std"} {
			free := 0
			for x, st := range r.SeatStates {
				if st == "FREE" && !infoSeats[x] && (category == "" || cat[x] == category) {
					free++
				}
			}
			for c, n := range wild {
				if c == "" || category == "" || c == category {
					free -= n
				}
			}
			if free < 1 {
				continue
			}
			doubleRevisions(h)
			h.Ops = append(h.Ops, history.Op{ID: len(h.Ops), Process: 99, Node: "n1", Kind: history.KindHold, Show: show1,
				ClientID: "c99", RequestID: "mut", Call: r.Call, Return: r.Return, Count: free, Category: category, TTLms: 1000,
				Outcome: history.Fail, Reason: reason, Wait: reason == "QUEUED", Revision: 2*r.Revision + 1, AppliedAtMs: r.AppliedAtMs})
			return true
		}
	}
	return false
}

// A booking's refund moved to just after a hold that was granted one of the
// booking's seats once it was refunded; no other refund of it may have
// applied before that hold, and an acknowledged confirm made it (S1 knows
// only those as bookings).
func mutRefundLate(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		f := &h.Ops[i]
		confirmed := slices.ContainsFunc(h.Ops, func(c history.Op) bool {
			return c.Kind == history.KindConfirm && c.HoldID == f.HoldID && c.Outcome == history.OK
		})
		if f.Kind != history.KindRefund || f.Outcome != history.OK || f.Resend || resent(h, f.ID) || !confirmed {
			continue
		}
		b := holdOp(h, f.HoldID)
		if b == nil {
			continue
		}
		for _, k := range h.Ops {
			if k.Kind != history.KindHold || k.Outcome != history.OK || k.Revision <= f.Revision ||
				calledAfter(h, k.Revision, k.Return) || !overlap(k.GrantedSeats(), b.GrantedSeats()) || refundedBy(h, f, k.Revision) {
				continue
			}
			doubleRevisions(h)
			f.Revision, f.AppliedAtMs, f.Call, f.Return = 2*k.Revision+1, k.AppliedAtMs, k.Call, k.Return
			return true
		}
	}
	return false
}

// refundedBy reports whether a refund other than f of f's hold may have
// applied by revision rev.
func refundedBy(h *history.History, f *history.Op, rev uint64) bool {
	return slices.ContainsFunc(h.Ops, func(o history.Op) bool {
		return o.Kind == history.KindRefund && o.HoldID == f.HoldID && o.ID != f.ID &&
			(o.Outcome == history.Info || o.Outcome == history.OK && o.Revision <= rev)
	})
}

func overlap(a, b []string) bool {
	return slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
}

// A booking no refund named that ends REFUNDED, its seats free.
func mutLostNoRefund(h *history.History, _ map[int]map[string]simSeat) bool {
	for _, op := range h.Ops {
		fh, ok := h.Final.Holds[op.HoldID]
		if op.Kind != history.KindConfirm || op.Outcome != history.OK || !ok || fh.State != "HOLD_STATE_CONFIRMED" || namedBy(h, op.HoldID, history.KindRefund) {
			continue
		}
		fh.State = "HOLD_STATE_REFUNDED"
		h.Final.Holds[op.HoldID] = fh
		for _, x := range fh.Seats {
			h.Final.Seats[show1][x] = "FREE"
		}
		return true
	}
	return false
}

// A seat read FREE after its hold's first expiry but before the expiry an
// acknowledged extend gave it.
func mutReadExtended(h *history.History, truth map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		r := &h.Ops[i]
		if r.Kind != history.KindRead || r.Outcome != history.OK {
			continue
		}
		for _, x := range sortedSeats(r.SeatStates) {
			st := truth[r.ID][x]
			hop := holdOp(h, st.hold)
			if st.state != "HELD" || hop == nil || r.AppliedAtMs < hop.ExpiresAtMs || mayEnd(h, st.hold) || infoNamed(h, st.hold, history.KindExtend) {
				continue
			}
			r.SeatStates[x] = "FREE"
			return true
		}
	}
	return false
}

// A refund answered HOLD_NOT_CONFIRMED turned into a success, where no
// confirm of the hold could have come first.
func mutRefundUnconfirmed(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		f := &h.Ops[i]
		if f.Kind != history.KindRefund || f.Reason != "HOLD_NOT_CONFIRMED" || f.Resend {
			continue
		}
		confirmable := slices.ContainsFunc(h.Ops, func(c history.Op) bool {
			return c.Kind == history.KindConfirm && c.HoldID == f.HoldID && c.Outcome != history.Fail && c.Call < f.Return
		})
		if confirmable {
			continue
		}
		f.Outcome, f.Reason, f.HoldState = history.OK, "", "HOLD_STATE_REFUNDED"
		return true
	}
	return false
}

// An acknowledged extend reporting an expiry 1 ms off, where the hold's
// expiry before it is certain.
func mutExtendWrong(h *history.History, _ map[int]map[string]simSeat) bool {
	for i := range h.Ops {
		e := &h.Ops[i]
		if e.Kind != history.KindExtend || e.Outcome != history.OK || e.Resend || infoNamed(h, e.HoldID, history.KindExtend) {
			continue
		}
		shared := slices.ContainsFunc(h.Ops, func(o history.Op) bool {
			return o.Kind == history.KindExtend && o.HoldID == e.HoldID && o.ID != e.ID && o.Revision == e.Revision
		})
		if !shared {
			e.ExpiresAtMs++
			return true
		}
	}
	return false
}
