package checker

import (
	"fmt"
	"math"
	"slices"

	"github.com/seatledger/seatledger/jepsen/history"
)

// The sequential model of one show. A state is immutable once built: step
// copies what it changes (vec shares the rest).
//
// Time: clock is a lower bound of the log clock at this point of the
// linearization. An op that reports its AppliedAtMs is evaluated at exactly
// that clock (which may not be below the state's); an info op happened at an
// unknown clock >= the state's.
//
// Expiry: a hold's expires_at lies in [lo, hi]. For an acknowledged hold
// lo == hi. An info hold was applied at an unknown clock c, no earlier than
// the clock of any op that returned before it was called (lo0 in its slot):
// lo = that + TTL, hi is unbounded. Observations narrow the bounds: a seat
// read HELD at c means c < expires_at <= c+TTL (it existed at c), a seat
// another hold took at c means expires_at <= c. When an observation has two
// explanations nothing is narrowed.
//
// Extend: an acknowledged extend reports the new expiry, which becomes the
// exact bound. An info extend, where porcupine applies it, moves the bounds
// to [max(lo, clock when it was called + TTL), hi + TTL] (it applied while
// the hold was live, so before hi), both capped at creation + the lifetime
// cap when the creation is known: again independent of where it is
// linearized.
//
// Refund: a booking refunded frees its seats like a release; the hold stays
// REFUNDED for good.
//
// Best available: an acknowledged best-available hold is a hold of the
// seats it was granted, which must number count, be of the category asked
// for, and be free where it is linearized. A SOLD_OUT answer needs fewer
// than count seats of the category free: it is refused when at least count
// of them certainly were (not possibly held or booked by any hold). An info
// best-available hold is a wildcard: its seats are unknown, so it may
// explain any seat of its category being HELD while it may be live, and
// count seats fewer being free for SOLD_OUT, but it never certainly holds a
// seat (a hold of that seat by another op stays possible). That loses
// precision, never soundness; the runner re-sends such holds after healing
// to learn their seats, so wildcards are rare.
//
// The bounds of an info hold deliberately do not depend on where porcupine
// linearizes it: then linearizing it before or after an op it commutes with
// reaches the same state, and porcupine's cache of (linearized ops, state)
// prunes the search. Bounds from the clock at its linearization point would
// be hardly tighter (that clock is lo0 at the earliest point) but make every
// position a new state; measured, that is the difference between
// milliseconds and minutes on histories with many info ops.
//
// May flags exist for the revision replay (ordering.go), which cannot place
// info ops: from the earliest revision an info op could have applied at, its
// effect is possible but not certain (an info extend widens hi instead).
// Porcupine places info ops itself and never sets them. mayRefund is set
// whatever the hold's state then, as the confirm it needs may come later; it
// only counts once the hold is, or may be, confirmed.

// Hold states in the model. An expired hold is hHeld with a passed expiry.
const (
	hNone uint8 = iota // not made yet
	hHeld
	hConfirmed
	hCancelled
	hRefunded
)

// refAny is a payment ref the model does not know (one of several).
const refAny int32 = -2

type holdCell struct {
	st         uint8
	mayConfirm bool
	mayCancel  bool
	mayRefund  bool
	ref        int32 // hConfirmed: the payment ref, or refAny
	mayRef     int32 // mayConfirm: the ref, or refAny
	lo, hi     int64 // expires_at bounds, inclusive
	// mayExt (replay only) is the longest TTL of the info extends that may
	// still apply: a later exact expiry stays open by that much above.
	mayExt int64
}

func (h holdCell) hashAt(i int) uint64 {
	if h == (holdCell{}) {
		return 0
	}
	b := uint64(h.st) | boolBit(h.mayConfirm, 9) | boolBit(h.mayCancel, 10) | boolBit(h.mayRefund, 11)
	x := mix(uint64(i)<<32 ^ b ^ uint64(uint32(h.ref))<<12)
	x = mix(x ^ uint64(h.lo) ^ uint64(uint32(h.mayRef))<<40)
	return mix(x ^ uint64(h.hi) ^ uint64(h.mayExt)<<20)
}

type seatCell struct {
	owner int32 // slot+1 of the hold that last took the seat; 0 = none
	may   bool  // replay only: an info hold may hold it
}

func (s seatCell) hashAt(i int) uint64 {
	if s == (seatCell{}) {
		return 0
	}
	return mix(uint64(i)<<33 ^ uint64(s.owner)<<1 ^ boolBit(s.may, 0) ^ 0x5eed)
}

func boolBit(b bool, n uint) uint64 {
	if b {
		return 1 << n
	}
	return 0
}

// state is a model state.
type state struct {
	clock int64
	pos   uint64
	seats vec[seatCell]
	holds vec[holdCell]
	done  int32 // definite (not info) ops applied
}

func (sm *showModel) init() *state {
	return &state{seats: newVec[seatCell](len(sm.seats)), holds: newVec[holdCell](len(sm.slots))}
}

func (s *state) hash() uint64 {
	return mix(uint64(s.clock) ^ mix(s.pos^uint64(s.done)<<48) ^ s.seats.hash ^ mix(s.holds.hash))
}

func (s *state) equal(o *state) bool {
	return s.clock == o.clock && s.pos == o.pos && s.done == o.done &&
		s.seats.equal(o.seats) && s.holds.equal(o.holds)
}

// step applies op o to s. It returns the next state, or nil and why the
// model rejects o there. replay selects how info ops apply: as certain
// effects (porcupine) or as possible ones (the revision replay).
//
// For porcupine an info op that cannot succeed where it is tried is
// rejected there unless every definite op is already linearized: failing
// has no effect, exactly like taking effect never, which porcupine always
// has as an option (an info op never returns, so it may come last). Without
// this rule porcupine would also try the no-op at every position in
// between, each a new search state.
func (sm *showModel) step(s *state, o *mop, replay bool) (*state, string) {
	w := *s
	if o.outcome == history.Info {
		switch {
		case replay:
			sm.mayApply(&w, o)
		case !sm.applyInfo(&w, o) && w.done < sm.definite:
			return nil, "an info op that cannot take effect here is tried last"
		}
		return &w, ""
	}
	w.done++
	if why := sm.advance(&w, o); why != "" {
		return nil, why
	}
	var why string
	switch o.kind {
	case history.KindHold:
		why = sm.hold(&w, o)
	case history.KindConfirm:
		why = sm.confirm(&w, o)
	case history.KindRelease:
		why = sm.release(&w, o)
	case history.KindRead:
		why = sm.read(&w, o)
	case history.KindGetHold:
		why = sm.getHold(&w, o)
	case history.KindExtend:
		why = sm.extend(&w, o)
	case history.KindRefund:
		why = sm.refund(&w, o)
	}
	if why != "" {
		return nil, why
	}
	sm.settle(&w)
	return &w, ""
}

// settle forgets the bounds of info holds that have certainly expired: no
// later observation can tell them apart, and states that differ only in
// them (the hold was linearized at another point) become equal for
// porcupine's cache.
func (sm *showModel) settle(w *state) {
	for _, i := range sm.infoSlots {
		h := w.holds.get(int(i))
		if h.st != hHeld || h.hi > w.clock || h == expiredInfo {
			continue
		}
		w.holds = w.holds.set(int(i), expiredInfo)
		for _, x := range sm.slots[i].seats {
			if c := w.seats.get(int(x)); c.owner == i+1 {
				c.owner = 0
				w.seats = w.seats.set(int(x), c)
			}
		}
	}
}

// expiredInfo is the one state of an info hold that certainly expired.
var expiredInfo = holdCell{st: hHeld, lo: math.MinInt64, hi: math.MinInt64, ref: refAny, mayRef: refAny}

// advance moves the state to o's revision and clock, which may not go back.
func (sm *showModel) advance(w *state, o *mop) string {
	if o.pos != 0 {
		if o.pos < w.pos {
			return sm.whyf("revision %d comes after revision %d", o.pos/2, w.pos/2)
		}
		w.pos = o.pos
	}
	if o.clock == 0 {
		return ""
	}
	if o.clock < w.clock {
		return sm.whyf("log clock %d comes after log clock %d", o.clock, w.clock)
	}
	w.clock = o.clock
	return ""
}

// at is the clock o is evaluated at: its own, or the state's lower bound.
func at(w *state, o *mop) (c int64, known bool) {
	if o.clock != 0 {
		return o.clock, true
	}
	return w.clock, false
}

// Explanations of an observation. When exactly one explains it, the state
// is narrowed to it; exTrue needs no narrowing.
const (
	exTrue = 1 << iota
	exLive
	exExpired
	exMayConfirm
	exMayCancel
	exMayRefund
)

// holdExpl returns how hold i may be in the wanted condition at o's clock:
// want is one of seatFree (expired, cancelled or refunded), seatHeld
// (live), seatBooked (confirmed with ref, or any ref if ref == refAny).
func holdExpl(w *state, o *mop, i int32, want uint8, ref int32) int {
	h := w.holds.get(int(i))
	c, known := at(w, o)
	ex := 0
	switch {
	case (h.st == hCancelled || h.st == hRefunded) && want == seatFree:
		ex |= exTrue
	case h.st == hConfirmed && want == seatBooked && (ref == refAny || h.ref == refAny || h.ref == ref):
		ex |= exTrue
	case h.st == hConfirmed && want == seatFree && h.mayRefund:
		ex |= exMayRefund
	case h.st == hHeld:
		switch want {
		case seatFree:
			if !known || h.lo <= c {
				ex |= exExpired
			}
			if h.mayCancel {
				ex |= exMayCancel
			}
			if h.mayConfirm && h.mayRefund {
				ex |= exMayRefund
			}
		case seatHeld:
			if h.hi > c {
				ex |= exLive
			}
		case seatBooked:
			if h.mayConfirm && (ref == refAny || h.mayRef == refAny || h.mayRef == ref) {
				ex |= exMayConfirm
			}
		}
	}
	return ex
}

// narrow applies the one explanation ex of an observation of hold i, if it
// is one; it reports whether there was any.
func (sm *showModel) narrow(w *state, o *mop, i int32, ex int) bool {
	if ex == 0 {
		return false
	}
	if ex&exTrue != 0 || ex&(ex-1) != 0 {
		return true
	}
	h := w.holds.get(int(i))
	c, known := at(w, o)
	switch ex {
	case exLive:
		h.lo = max(h.lo, c+1)
		if known && sm.slots[i].info {
			h.hi = min(h.hi, c+sm.slots[i].ttl) // it existed at c
		}
	case exExpired:
		if known {
			h.hi = min(h.hi, c)
		} else {
			w.clock = max(w.clock, h.lo) // it expired by a clock >= lo
		}
	case exMayConfirm:
		// mayRefund stays: a refund may still come after the confirm.
		h.st, h.ref = hConfirmed, h.mayRef
		h.mayConfirm, h.mayCancel = false, false
	case exMayCancel:
		w.holds = w.holds.set(int(i), h)
		sm.finish(w, i, hCancelled)
		return true
	case exMayRefund:
		w.holds = w.holds.set(int(i), h)
		sm.finish(w, i, hRefunded)
		return true
	}
	w.holds = w.holds.set(int(i), h)
	return true
}

// finish ends hold i in state st (hCancelled or hRefunded): its seats
// become free.
func (sm *showModel) finish(w *state, i int32, st uint8) {
	h := w.holds.get(int(i))
	h.st, h.mayConfirm, h.mayCancel, h.mayRefund = st, false, false, false
	w.holds = w.holds.set(int(i), h)
	for _, x := range sm.slots[i].seats {
		if c := w.seats.get(int(x)); c.owner == i+1 {
			c.owner = 0
			w.seats = w.seats.set(int(x), c)
		}
	}
}

// seat narrows the state so that seat x is in state want (seatFree,
// seatHeld, seatBooked) at o's clock, or returns why it cannot be.
func (sm *showModel) seat(w *state, o *mop, x int32, want uint8) string {
	c := w.seats.get(int(x))
	if c.owner == 0 {
		if want == seatFree || (want == seatHeld && (c.may || sm.wildHeld(w, o, x))) {
			return ""
		}
		return sm.whyf("seat %s is %s, not %s", sm.seats[x], "FREE", seatNames[want])
	}
	i := c.owner - 1
	ex := holdExpl(w, o, i, want, refAny)
	if want == seatHeld && (c.may || sm.wildHeld(w, o, x)) && holdExpl(w, o, i, seatFree, refAny) != 0 {
		ex |= exTrue // an info hold may have taken it once free
	}
	if sm.narrow(w, o, i, ex) {
		return ""
	}
	if sm.quiet {
		return rejected
	}
	return fmt.Sprintf("seat %s is %s by %s, not %s", sm.seats[x], sm.seatState(w, o, i), sm.slots[i].id, seatNames[want])
}

// seatState describes what hold i makes of its seats at o's clock.
func (sm *showModel) seatState(w *state, o *mop, i int32) string {
	h := w.holds.get(int(i))
	c, _ := at(w, o)
	switch {
	case h.st == hConfirmed:
		return "BOOKED"
	case h.st == hCancelled:
		return "FREE (released)"
	case h.st == hRefunded:
		return "FREE (refunded)"
	case h.hi <= c && h.lo == h.hi:
		return fmt.Sprintf("FREE (expired at %d)", h.hi)
	case h.hi <= c:
		return fmt.Sprintf("FREE (expired by %d)", h.hi)
	case h.lo > c:
		return fmt.Sprintf("HELD (until %d)", h.lo)
	}
	return fmt.Sprintf("HELD or FREE (expiry in [%d, %d])", h.lo, h.hi)
}

// take gives seats to hold i after checking each is free at o's clock.
func (sm *showModel) take(w *state, o *mop, i int32, seats []int32) string {
	for _, x := range seats {
		if why := sm.seat(w, o, x, seatFree); why != "" {
			return why
		}
		c := w.seats.get(int(x))
		c.owner = i + 1
		w.seats = w.seats.set(int(x), c)
	}
	return ""
}

func (sm *showModel) hold(w *state, o *mop) string {
	c, _ := at(w, o)
	switch {
	case o.outcome == history.Fail && (o.reason == "SOLD_OUT" || o.reason == "QUEUED"):
		return sm.soldOut(w, o)
	case o.outcome == history.Fail:
		return sm.seatsTaken(w, o)
	}
	if w.holds.get(int(o.slot)).st != hNone {
		return sm.whyf("hold %s is made twice", sm.slots[o.slot].id)
	}
	if why := sm.grantFits(o); why != "" {
		return why
	}
	if why := sm.take(w, o, o.slot, o.seats); why != "" {
		return "hold granted although " + why
	}
	exp := sm.slots[o.slot].exp
	h := holdCell{st: hHeld, lo: exp, hi: exp, ref: refAny, mayRef: refAny}
	if exp == 0 { // an acknowledged hold without a clock or expiry
		h.lo, h.hi = c+o.ttl, math.MaxInt64
	}
	w.holds = w.holds.set(int(o.slot), h)
	return ""
}

// grantFits checks what a best-available grant must be whatever the state:
// count distinct seats of the show, of the category asked for.
func (sm *showModel) grantFits(o *mop) string {
	if o.count == 0 {
		return ""
	}
	if len(o.seats) != o.count {
		return sm.whyf("best available asked for %d seats and was granted %d", o.count, len(o.seats))
	}
	for k, x := range o.seats {
		switch {
		case slices.Contains(o.seats[:k], x):
			return sm.whyf("best available granted seat %s twice", sm.seats[x])
		case sm.layout && sm.seatCat[x] == "":
			return sm.whyf("best available granted seat %s, which the show does not have", sm.seats[x])
		case sm.layout && o.category != "" && sm.seatCat[x] != o.category:
			return sm.whyf("best available of category %s granted seat %s of category %s", o.category, sm.seats[x], sm.seatCat[x])
		}
	}
	return ""
}

// takenExpl returns how seat x may be held or booked at o's clock by a hold
// the state knows of (wildcards aside).
func (sm *showModel) takenExpl(w *state, o *mop, x int32) (ex int) {
	c := w.seats.get(int(x))
	if c.may {
		ex |= exTrue
	}
	if c.owner != 0 {
		ex |= holdExpl(w, o, c.owner-1, seatHeld, refAny) | holdExpl(w, o, c.owner-1, seatBooked, refAny)
	}
	return ex
}

// wildHeld reports whether an info best-available hold may hold seat x at
// o's clock.
func (sm *showModel) wildHeld(w *state, o *mop, x int32) bool {
	c, _ := at(w, o)
	for _, i := range sm.wildSlots {
		h := w.holds.get(int(i))
		if h.st == hHeld && h.hi > c && sm.inCategory(x, sm.slots[i].category) {
			return true
		}
	}
	return false
}

// wildCount is how many seats of category the info best-available holds
// that may be live at o's clock may hold.
func (sm *showModel) wildCount(w *state, o *mop, category string) int {
	c, _ := at(w, o)
	n := 0
	for _, i := range sm.wildSlots {
		h, sl := w.holds.get(int(i)), &sm.slots[i]
		if h.st == hHeld && h.hi > c && (sl.category == "" || category == "" || sl.category == category) {
			n += sl.count
		}
	}
	return n
}

// inCategory reports whether seat x is a seat of the show in category (""
// = any). Without a layout, every seat that certainly exists may be of any
// category.
func (sm *showModel) inCategory(x int32, category string) bool {
	if !sm.layout {
		return sm.real[x]
	}
	return sm.seatCat[x] != "" && (category == "" || sm.seatCat[x] == category)
}

// soldOut checks a SOLD_OUT or QUEUED answer (the server queues a waiter
// exactly where it would answer SOLD_OUT): fewer than count seats of the
// category were free. Seats that may be held or booked, and those an info
// best-available hold may hold, are counted as taken; nothing is narrowed.
// Without a layout a category cannot be judged, and without one only the
// seats known to exist are counted, which can only make fewer free.
func (sm *showModel) soldOut(w *state, o *mop) string {
	if o.count == 0 {
		return o.reason + " answers a hold of named seats"
	}
	if o.category != "" && !sm.layout {
		return ""
	}
	free := -sm.wildCount(w, o, o.category)
	for x := range sm.seats {
		if sm.inCategory(int32(x), o.category) && sm.takenExpl(w, o, int32(x)) == 0 {
			free++
		}
	}
	if free >= o.count {
		return sm.whyf("%s for a party of %d%s although at least %d such seats were certainly free", o.reason, o.count, categoryWords(o.category), free)
	}
	return ""
}

func categoryWords(category string) string {
	if category == "" {
		return ""
	}
	return " of category " + category
}

// seatsTaken checks a SEATS_TAKEN rejection: every seat it names was held
// or booked (or, if it names none, some seat asked for was).
func (sm *showModel) seatsTaken(w *state, o *mop) string {
	taken := func(x int32) int {
		ex := sm.takenExpl(w, o, x)
		if sm.wildHeld(w, o, x) {
			ex |= exTrue
		}
		return ex
	}
	if len(o.taken) == 0 {
		for _, x := range o.seats {
			if taken(x) != 0 {
				return ""
			}
		}
		return "SEATS_TAKEN although every seat asked for is free"
	}
	for _, x := range o.taken {
		ex := taken(x)
		c := w.seats.get(int(x))
		if ex == 0 || (c.owner != 0 && !sm.narrow(w, o, c.owner-1, ex)) {
			return sm.whyf("SEATS_TAKEN names seat %s, which is free", sm.seats[x])
		}
	}
	return ""
}

// ownerOK reports whether o's client may act on hold i (unknown clients may).
func (sm *showModel) ownerOK(o *mop) bool {
	cl := sm.slots[o.slot].client
	return cl == "" || o.l.ClientID == "" || cl == o.l.ClientID
}

// target checks the HOLD_NOT_FOUND and NOT_HOLD_OWNER answers, which come
// before the hold's state; done is true when o was fully checked.
func (sm *showModel) target(w *state, o *mop) (done bool, why string) {
	exists := o.slot != slotForeign && w.holds.get(int(o.slot)).st != hNone
	switch {
	case !exists && o.outcome == history.Fail && o.reason == "HOLD_NOT_FOUND":
		return true, ""
	case !exists:
		return true, "the hold named does not exist (yet) in this show"
	case o.reason == "HOLD_NOT_FOUND":
		return true, sm.whyf("HOLD_NOT_FOUND although hold %s exists", sm.slots[o.slot].id)
	case o.kind == history.KindGetHold:
		return false, ""
	case !sm.ownerOK(o) && o.reason != "NOT_HOLD_OWNER":
		return true, sm.whyf("hold %s belongs to %s, not %s", sm.slots[o.slot].id, sm.slots[o.slot].client, o.l.ClientID)
	case o.reason == "NOT_HOLD_OWNER":
		if sm.ownerOK(o) && sm.slots[o.slot].client != "" && o.l.ClientID != "" {
			return true, "NOT_HOLD_OWNER from the hold's owner"
		}
		return true, ""
	}
	return false, ""
}

// rejected is the reason given while sm.quiet: porcupine never reads it.
const rejected = "rejected"

// whyf formats a rejection, unless nobody will read it.
func (sm *showModel) whyf(format string, args ...any) string {
	if sm.quiet {
		return rejected
	}
	return fmt.Sprintf(format, args...)
}
