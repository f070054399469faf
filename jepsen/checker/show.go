package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/seatledger/seatledger/jepsen/history"
)

// holdTTLDefaultMs mirrors fsm.HoldTTLDefaultMs: the TTL of a hold (or an
// extend) that asks for none. The checker speaks only the public API, so it
// is restated, like holdLifetimeMaxMs (fsm.HoldLifetimeMaxMs): no extend
// moves a hold's expiry past its creation + this.
const (
	holdTTLDefaultMs  = 5 * 60 * 1000
	holdLifetimeMaxMs = 45 * 60 * 1000
)

// Seat states as the model and reads see them; seatUnread means a read did
// not report the seat.
const (
	seatUnread uint8 = iota
	seatFree
	seatHeld
	seatBooked
)

var seatNames = [...]string{"-", "FREE", "HELD", "BOOKED"}

// slotForeign is the target of an op naming a hold of another show: the
// state machine answers HOLD_NOT_FOUND.
const slotForeign int32 = -1

// mop is one logical op as the model sees it, with names turned into
// indices. It is the porcupine input; the output is folded into it.
type mop struct {
	l       *lop
	kind    history.Kind
	outcome history.Outcome
	reason  string // normReason of the answer
	process int    // dense per show, for porcupine's ClientId
	call    int64
	ret     int64

	seats []int32 // hold: the seats granted (OK) or asked for
	taken []int32 // hold SEATS_TAKEN: the seats reported taken
	// count and category: a best-available hold's request (count 0 for a
	// hold of named seats).
	count    int
	category string
	ttl      int64 // hold, extend
	lo0      int64 // info extend: the least expiry it sets, from the clock when it was called
	slot     int32 // hold: the hold it made; others: the hold named
	ref      int32 // confirm: payment ref index
	state    string
	exp      int64   // hold, gethold, extend: expires_at reported, 0 if none
	view     []uint8 // read: seat index -> seatFree/Held/Booked, seatUnread if absent
	clock    int64   // AppliedAtMs, 0 if unknown
	pos      uint64  // 2*revision for writes, 2*revision+1 for reads; 0 if unknown
}

// slot is a hold the model knows: one per acknowledged or info hold.
type slot struct {
	id     string
	client string
	seats  []int32
	ttl    int64
	info   bool  // made by an info hold: id unknown, expiry known within bounds
	exp    int64 // the acknowledged expiry; 0 if unknown
	lo0    int64 // info: the least expiry, from the clock when it was called
	// created is the log clock the hold was made at (acknowledged), 0 if
	// unknown: extends cannot move its expiry past created + the lifetime cap.
	created int64
	// wild: an info best-available hold. Its seats are unknown: it may hold
	// any count seats of its category (or of any, when category is ""), so
	// it may explain a seat seen HELD or taken but never certainly owns one.
	wild     bool
	count    int
	category string
	op       *mop
}

// showModel is everything the model needs about one show.
type showModel struct {
	name      string
	seats     []string
	seatIdx   map[string]int32
	slots     []slot
	slotIdx   map[string]int32
	refs      []string
	refIdx    map[string]int32
	ops       []*mop  // modeled ops, in call order
	definite  int32   // ops in ops that are not info
	infoSlots []int32 // slots made by info holds
	wildSlots []int32 // slots made by info best-available holds
	end       int64   // a time after every call and return: info ops return then
	// layout: the show's layout is known; seatCat[x] is seat x's category
	// ("" for a seat not in it). Without a layout, real[x] says seat x
	// certainly exists (a read or an OK hold reported it): only those count
	// as free seats for SOLD_OUT.
	layout  bool
	seatCat []string
	real    []bool
	// quiet skips formatting rejections while porcupine searches; only the
	// goroutine checking the show touches it.
	quiet bool
}

// buildShow turns a show's logical ops into model ops. owner maps every
// acknowledged hold id of the history to its show.
// layout is the show's layout, nil if the history has none.
func buildShow(name string, ops []*lop, owner map[string]string, final *history.Final, layout *history.Layout, rep *reporter) *showModel {
	sm := &showModel{name: name, seatIdx: map[string]int32{}, slotIdx: map[string]int32{}, refIdx: map[string]int32{}}
	sm.indexSeats(ops, final, layout)
	procs := map[int]int{}
	clocks := newClockIndex(ops)
	for _, l := range ops {
		sm.end = max(sm.end, l.Call+1, l.Return+1)
		if l.Kind == history.KindHold && (l.Outcome == history.OK || l.Outcome == history.Info) && !l.echo {
			sm.addSlot(l, clocks, rep)
		}
	}
	for _, l := range ops {
		m := sm.toMop(l, owner, clocks, rep)
		if m == nil {
			continue
		}
		if _, ok := procs[l.Process]; !ok {
			procs[l.Process] = len(procs)
		}
		m.process = procs[l.Process]
		sm.ops = append(sm.ops, m)
	}
	sm.dropFutile(clocks)
	for _, m := range sm.ops {
		if m.outcome != history.Info {
			sm.definite++
		}
	}
	return sm
}

// dropFutile removes info ops that could not have taken effect wherever
// they were applied, judged from what had certainly happened when they were
// called: a hold of a seat already booked (and never refunded), a confirm,
// release or extend of a hold already confirmed, released, refunded or
// expired, a refund of a hold already released or refunded, or any op on
// another client's hold. Each info op doubles porcupine's search where it
// is pending; these cannot change any state, so dropping them is free.
func (sm *showModel) dropFutile(clocks clockIndex) {
	const never = math.MaxInt64
	n := len(sm.slots)
	confirmed := make([]int64, n) // return of the first OK confirm
	ended := make([]int64, n)     // ... of the first OK release or refund
	refundable := make([]bool, n) // an OK or info refund names it
	expMax := make([]int64, n)    // the latest expiry OK extends reported; never if an info extend exists
	for i := range sm.slots {
		confirmed[i], ended[i], expMax[i] = never, never, sm.slots[i].exp
		if expMax[i] == 0 {
			expMax[i] = never
		}
	}
	for _, m := range sm.ops {
		if m.slot < 0 || m.kind == history.KindHold {
			continue
		}
		switch {
		case m.kind == history.KindRefund && m.outcome != history.Fail:
			refundable[m.slot] = true
		case m.kind == history.KindExtend && m.outcome == history.Info:
			expMax[m.slot] = never
		case m.kind == history.KindExtend && m.outcome == history.OK && expMax[m.slot] != never:
			expMax[m.slot] = max(expMax[m.slot], m.exp)
		}
		if m.outcome != history.OK {
			continue
		}
		switch m.kind {
		case history.KindConfirm:
			confirmed[m.slot] = min(confirmed[m.slot], m.ret)
		case history.KindRelease, history.KindRefund:
			ended[m.slot] = min(ended[m.slot], m.ret)
		}
	}
	booked := make([]int64, len(sm.seats)) // when a seat was certainly booked for good
	for i := range booked {
		booked[i] = never
	}
	for i, sl := range sm.slots {
		for _, x := range sl.seats {
			if !refundable[i] {
				booked[x] = min(booked[x], confirmed[i])
			}
		}
	}
	futile := func(m *mop) bool {
		switch {
		case m.outcome != history.Info:
			return false
		case m.kind == history.KindHold:
			return slices.ContainsFunc(m.seats, func(x int32) bool { return booked[x] < m.call })
		case m.slot < 0 || !sm.ownerOK(m):
			return true
		case m.kind == history.KindRefund:
			return ended[m.slot] < m.call
		}
		return min(confirmed[m.slot], ended[m.slot]) < m.call || expMax[m.slot] <= clocks.before(m.call)
	}
	sm.ops = slices.DeleteFunc(sm.ops, futile)
}

// indexSeats numbers every seat name the layout or the history mentions
// for the show, and notes which seats certainly exist and their categories.
func (sm *showModel) indexSeats(ops []*lop, final *history.Final, layout *history.Layout) {
	set := map[string]bool{} // seat -> certainly exists
	mention := func(seats []string, real bool) {
		for _, s := range seats {
			set[s] = set[s] || real
		}
	}
	for _, l := range ops {
		mention(l.Seats, false) // a hold may name a seat the show lacks (UNKNOWN_SEAT)
		mention(l.Taken, true)
		mention(l.OutSeats, true)
		for s := range l.SeatStates {
			set[s] = true
		}
	}
	if final != nil {
		for s := range final.Seats[sm.name] {
			set[s] = true
		}
		for _, fh := range final.Holds {
			if fh.Show == sm.name {
				mention(fh.Seats, true)
			}
		}
	}
	if layout != nil {
		sm.layout = true
		for s := range layout.Seats {
			set[s] = true
		}
	}
	for s := range set {
		sm.seats = append(sm.seats, s)
	}
	sort.Slice(sm.seats, func(i, j int) bool { return seatLess(sm.seats[i], sm.seats[j]) })
	sm.seatCat, sm.real = make([]string, len(sm.seats)), make([]bool, len(sm.seats))
	for i, s := range sm.seats {
		sm.seatIdx[s] = int32(i)
		sm.real[i] = set[s]
		if layout != nil {
			sm.seatCat[i] = layout.Seats[s]
		}
	}
}

// seatLess orders seat ids by row, then number: A2 before A10.
func seatLess(a, b string) bool {
	ra, na := splitSeat(a)
	rb, nb := splitSeat(b)
	if ra != rb {
		return ra < rb
	}
	if na != nb {
		return na < nb
	}
	return a < b
}

func splitSeat(s string) (string, int) {
	i := strings.IndexAny(s, "0123456789")
	if i < 0 {
		return s, 0
	}
	n, err := strconv.Atoi(s[i:])
	if err != nil {
		return s, 0
	}
	return s[:i], n
}

func (sm *showModel) seatList(names []string) []int32 {
	out := make([]int32, len(names))
	for i, s := range names {
		out[i] = sm.seatIdx[s]
	}
	return out
}

func (sm *showModel) addSlot(l *lop, clocks clockIndex, rep *reporter) {
	id := l.OutHoldID
	if l.Outcome == history.Info || id == "" {
		id = fmt.Sprintf("info-%d", l.ID)
	}
	if prev, ok := sm.slotIdx[id]; ok {
		rep.violation("S4", sm.name, []int{sm.slots[prev].op.l.ID, l.ID}, "hold id %s was returned to two requests (ops %d and %d)",
			id, sm.slots[prev].op.l.ID, l.ID)
		return
	}
	ttl := ttlOf(l.TTLms)
	s := slot{id: id, client: l.ClientID, ttl: ttl, info: l.Outcome == history.Info,
		lo0: clocks.before(l.Call) + ttl, count: l.Count, category: l.Category}
	switch {
	case s.info && l.Count > 0:
		s.wild = true
	case s.info:
		s.seats = sm.seatList(l.Seats)
	default:
		s.seats = sm.seatList(l.GrantedSeats())
		s.exp, s.created = l.ExpiresAtMs, l.AppliedAtMs
		if s.exp == 0 && l.AppliedAtMs != 0 {
			s.exp = l.AppliedAtMs + ttl
		}
	}
	sm.slotIdx[id] = int32(len(sm.slots))
	if s.info {
		sm.infoSlots = append(sm.infoSlots, int32(len(sm.slots)))
	}
	if s.wild {
		sm.wildSlots = append(sm.wildSlots, int32(len(sm.slots)))
	}
	sm.slots = append(sm.slots, s)
}

func (sm *showModel) refOf(ref string) int32 {
	if i, ok := sm.refIdx[ref]; ok {
		return i
	}
	sm.refIdx[ref] = int32(len(sm.refs))
	sm.refs = append(sm.refs, ref)
	return int32(len(sm.refs) - 1)
}

// ttlOf is the TTL a hold or extend asking for ttl gets.
func ttlOf(ttl int64) int64 {
	if ttl <= 0 {
		return holdTTLDefaultMs
	}
	return ttl
}

// modeledFail are the rejections the model checks, per kind; other Fail
// answers are definite no-ops that constrain nothing (TOO_MANY_HOLDS,
// HOLD_TOKEN_INVALID, UNKNOWN_SEAT, the gateway's, ...). A refund answered
// HOLD_CANCELLED or HOLD_CONFIRMED is modeled only to be refused: a refund
// of a released hold answers HOLD_NOT_CONFIRMED, of a refunded one OK.
var modeledFail = map[history.Kind]map[string]bool{
	history.KindHold: {"SEATS_TAKEN": true, "SOLD_OUT": true, "QUEUED": true},
	history.KindConfirm: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindRelease: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindExtend: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindRefund: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_NOT_CONFIRMED": true, "HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindGetHold: {"HOLD_NOT_FOUND": true},
}

// toMop returns the model op for l, or nil when the model has nothing to
// check or apply for it.
func (sm *showModel) toMop(l *lop, owner map[string]string, clocks clockIndex, rep *reporter) *mop {
	if l.echo {
		return nil // checked by S4 only
	}
	m := &mop{l: l, kind: l.Kind, outcome: l.Outcome, reason: normReason(l.Reason), call: l.Call, ret: l.Return,
		clock: l.AppliedAtMs, slot: slotForeign}
	switch l.Outcome {
	case history.Info:
		if l.Kind == history.KindRead || l.Kind == history.KindGetHold {
			return nil // no output and no effect
		}
		m.ret = sm.end
	case history.Fail:
		if !modeledFail[l.Kind][m.reason] {
			return nil
		}
	}
	if l.Revision != 0 {
		m.pos = 2 * l.Revision
		if l.Kind == history.KindRead || l.Kind == history.KindGetHold {
			m.pos++
		}
	}
	switch l.Kind {
	case history.KindHold:
		return sm.holdMop(m, l)
	case history.KindConfirm, history.KindRelease, history.KindGetHold, history.KindExtend, history.KindRefund:
		i, ok := sm.slotIdx[l.HoldID]
		switch {
		case ok && !sm.slots[i].info:
			m.slot = i
		case owner[l.HoldID] != "" && owner[l.HoldID] != sm.name:
			if l.Outcome == history.Info {
				return nil // can only fail
			}
		default:
			rep.warnf("op %d (%s) names hold %q, which no acknowledged hold of show %s returned: not modeled", l.ID, l.Kind, l.HoldID, sm.name)
			return nil
		}
		m.ref = sm.refOf(l.PaymentRef)
		m.state = normHoldState(l.HoldState)
		m.exp = l.ExpiresAtMs
		if l.Kind == history.KindExtend {
			m.ttl = ttlOf(l.TTLms)
			m.lo0 = clocks.before(l.Call) + m.ttl
		}
		return m
	case history.KindRead:
		m.view = make([]uint8, len(sm.seats))
		for s, st := range l.SeatStates {
			v := parseSeatState(st)
			if v == seatUnread {
				rep.warnf("op %d reads seat %s as %q, which is no seat state", l.ID, s, st)
			}
			m.view[sm.seatIdx[s]] = v
		}
		return m
	}
	return nil
}

func (sm *showModel) holdMop(m *mop, l *lop) *mop {
	m.seats = sm.seatList(l.Seats)
	if l.Outcome == history.OK {
		m.seats = sm.seatList(l.GrantedSeats())
	}
	m.taken = sm.seatList(l.Taken)
	m.count, m.category = l.Count, l.Category
	m.exp = l.ExpiresAtMs
	m.ttl = ttlOf(l.TTLms)
	if l.Outcome == history.Fail {
		return m
	}
	id := l.OutHoldID
	if l.Outcome == history.Info || id == "" {
		id = fmt.Sprintf("info-%d", l.ID)
	}
	i, ok := sm.slotIdx[id]
	if !ok || sm.slots[i].op != nil {
		return nil // a second op with the same hold id: reported under S4
	}
	m.slot = i
	sm.slots[i].op = m
	return m
}

func parseSeatState(s string) uint8 {
	switch strings.TrimPrefix(s, "SEAT_STATE_") {
	case "FREE":
		return seatFree
	case "HELD":
		return seatHeld
	case "BOOKED":
		return seatBooked
	}
	return seatUnread
}

// normHoldState accepts HOLD_STATE_HELD or HELD and returns HELD.
func normHoldState(s string) string { return strings.TrimPrefix(s, "HOLD_STATE_") }

// clockIndex answers: what is the latest log clock of an op of the show
// that returned before time t? The log clock of anything called at t is at
// least that.
type clockIndex struct {
	ret   []int64  // return times of definite ops with a clock, ascending
	clock []int64  // clock[i]: the latest clock among the first i+1 of them
	rev   []uint64 // rev[i]: the latest revision among them
}

func newClockIndex(ops []*lop) clockIndex {
	var def []*lop
	for _, l := range ops {
		if l.Outcome != history.Info && l.AppliedAtMs != 0 {
			def = append(def, l)
		}
	}
	sort.Slice(def, func(i, j int) bool { return def[i].Return < def[j].Return })
	ci := clockIndex{ret: make([]int64, len(def)), clock: make([]int64, len(def)), rev: make([]uint64, len(def))}
	var mx int64
	var mr uint64
	for i, l := range def {
		mx, mr = max(mx, l.AppliedAtMs), max(mr, l.Revision)
		ci.ret[i], ci.clock[i], ci.rev[i] = l.Return, mx, mr
	}
	return ci
}

// revBefore is like before for revisions.
func (ci clockIndex) revBefore(t int64) uint64 {
	n := sort.Search(len(ci.ret), func(i int) bool { return ci.ret[i] >= t })
	if n == 0 {
		return 0
	}
	return ci.rev[n-1]
}

func (ci clockIndex) before(t int64) int64 {
	n := sort.Search(len(ci.ret), func(i int) bool { return ci.ret[i] >= t })
	if n == 0 {
		return 0
	}
	return ci.clock[n-1]
}
