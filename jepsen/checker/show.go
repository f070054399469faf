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

// holdTTLDefaultMs mirrors fsm.HoldTTLDefaultMs: the TTL of a hold that
// asks for none. The checker speaks only the public API, so it is restated.
const holdTTLDefaultMs = 5 * 60 * 1000

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

	seats []int32 // hold: the seats asked for
	taken []int32 // hold SEATS_TAKEN: the seats reported taken
	ttl   int64
	slot  int32 // hold: the hold it made; confirm/release/gethold: the hold named
	ref   int32 // confirm: payment ref index
	state string
	exp   int64   // hold, gethold: expires_at reported, 0 if none
	view  []uint8 // read: seat index -> seatFree/Held/Booked, seatUnread if absent
	clock int64   // AppliedAtMs, 0 if unknown
	pos   uint64  // 2*revision for writes, 2*revision+1 for reads; 0 if unknown
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
	op     *mop
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
	end       int64   // a time after every call and return: info ops return then
	// quiet skips formatting rejections while porcupine searches; only the
	// goroutine checking the show touches it.
	quiet bool
}

// buildShow turns a show's logical ops into model ops. owner maps every
// acknowledged hold id of the history to its show.
func buildShow(name string, ops []*lop, owner map[string]string, final *history.Final, rep *reporter) *showModel {
	sm := &showModel{name: name, seatIdx: map[string]int32{}, slotIdx: map[string]int32{}, refIdx: map[string]int32{}}
	sm.indexSeats(ops, final)
	procs := map[int]int{}
	clocks := newClockIndex(ops)
	for _, l := range ops {
		sm.end = max(sm.end, l.Call+1, l.Return+1)
		if l.Kind == history.KindHold && (l.Outcome == history.OK || l.Outcome == history.Info) && !l.echo {
			sm.addSlot(l, clocks, rep)
		}
	}
	for _, l := range ops {
		m := sm.toMop(l, owner, rep)
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
// called: a hold of a seat already booked, a confirm or release of a hold
// already confirmed, released or expired, or of another client's hold. Each
// info op doubles porcupine's search where it is pending; these cannot
// change any state, so dropping them is free.
func (sm *showModel) dropFutile(clocks clockIndex) {
	const never = math.MaxInt64
	confirmed := make([]int64, len(sm.slots)) // return of the first OK confirm
	closed := make([]int64, len(sm.slots))    // ... of the first OK confirm or release
	for i := range sm.slots {
		confirmed[i], closed[i] = never, never
	}
	for _, m := range sm.ops {
		if m.outcome == history.OK && m.slot >= 0 && (m.kind == history.KindConfirm || m.kind == history.KindRelease) {
			closed[m.slot] = min(closed[m.slot], m.ret)
			if m.kind == history.KindConfirm {
				confirmed[m.slot] = min(confirmed[m.slot], m.ret)
			}
		}
	}
	booked := make([]int64, len(sm.seats)) // when a seat was certainly booked
	for i := range booked {
		booked[i] = never
	}
	for i, sl := range sm.slots {
		for _, x := range sl.seats {
			booked[x] = min(booked[x], confirmed[i])
		}
	}
	futile := func(m *mop) bool {
		switch {
		case m.outcome != history.Info:
			return false
		case m.kind == history.KindHold:
			return slices.ContainsFunc(m.seats, func(x int32) bool { return booked[x] < m.call })
		case m.slot < 0:
			return true
		}
		sl := sm.slots[m.slot]
		return !sm.ownerOK(m) || closed[m.slot] < m.call || (sl.exp != 0 && sl.exp <= clocks.before(m.call))
	}
	sm.ops = slices.DeleteFunc(sm.ops, futile)
}

// indexSeats numbers every seat name the history mentions for the show.
func (sm *showModel) indexSeats(ops []*lop, final *history.Final) {
	set := map[string]bool{}
	for _, l := range ops {
		for _, s := range l.Seats {
			set[s] = true
		}
		for _, s := range l.Taken {
			set[s] = true
		}
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
				for _, s := range fh.Seats {
					set[s] = true
				}
			}
		}
	}
	for s := range set {
		sm.seats = append(sm.seats, s)
	}
	sort.Slice(sm.seats, func(i, j int) bool { return seatLess(sm.seats[i], sm.seats[j]) })
	for i, s := range sm.seats {
		sm.seatIdx[s] = int32(i)
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
	ttl := l.TTLms
	if ttl <= 0 {
		ttl = holdTTLDefaultMs
	}
	s := slot{id: id, client: l.ClientID, seats: sm.seatList(l.Seats), ttl: ttl, info: l.Outcome == history.Info,
		lo0: clocks.before(l.Call) + ttl}
	if !s.info {
		s.exp = l.ExpiresAtMs
		if s.exp == 0 && l.AppliedAtMs != 0 {
			s.exp = l.AppliedAtMs + ttl
		}
	}
	sm.slotIdx[id] = int32(len(sm.slots))
	if s.info {
		sm.infoSlots = append(sm.infoSlots, int32(len(sm.slots)))
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

// modeledFail are the rejections the model checks, per kind; other Fail
// answers are definite no-ops that constrain nothing.
var modeledFail = map[history.Kind]map[string]bool{
	history.KindHold: {"SEATS_TAKEN": true},
	history.KindConfirm: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindRelease: {"HOLD_NOT_FOUND": true, "NOT_HOLD_OWNER": true, "HOLD_EXPIRED": true,
		"HOLD_CANCELLED": true, "HOLD_CONFIRMED": true},
	history.KindGetHold: {"HOLD_NOT_FOUND": true},
}

// toMop returns the model op for l, or nil when the model has nothing to
// check or apply for it.
func (sm *showModel) toMop(l *lop, owner map[string]string, rep *reporter) *mop {
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
	case history.KindConfirm, history.KindRelease, history.KindGetHold:
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
	m.taken = sm.seatList(l.Taken)
	m.exp = l.ExpiresAtMs
	m.ttl = l.TTLms
	if m.ttl <= 0 {
		m.ttl = holdTTLDefaultMs
	}
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
