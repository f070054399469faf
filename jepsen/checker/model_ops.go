package checker

import (
	"math"
	"slices"

	"github.com/seatledger/seatledger/jepsen/history"
)

// This file holds the model's step for each kind of op; model.go has the
// state and the observation helpers they share.

func (sm *showModel) confirm(w *state, o *mop) string {
	if done, why := sm.target(w, o); done {
		return why
	}
	i := o.slot
	h := w.holds.get(int(i))
	switch {
	case o.outcome == history.OK && h.st == hConfirmed:
		if h.ref != refAny && h.ref != o.ref {
			return sm.whyf("confirm OK although hold %s is confirmed with payment ref %q", sm.slots[i].id, sm.refs[h.ref])
		}
		h.ref = o.ref
		w.holds = w.holds.set(int(i), h)
		return ""
	case o.outcome == history.OK:
		ex := holdExpl(w, o, i, seatHeld, refAny) | holdExpl(w, o, i, seatBooked, o.ref)
		if !sm.narrow(w, o, i, ex) {
			return sm.whyf("confirm OK although hold %s is %s", sm.slots[i].id, sm.holdState(w, o, i))
		}
		h = w.holds.get(int(i))
		h.st, h.ref, h.mayConfirm, h.mayCancel = hConfirmed, o.ref, false, false
		w.holds = w.holds.set(int(i), h)
		return ""
	}
	return sm.closedAnswer(w, o)
}

func (sm *showModel) release(w *state, o *mop) string {
	if done, why := sm.target(w, o); done {
		return why
	}
	i := o.slot
	h := w.holds.get(int(i))
	if o.outcome != history.OK {
		if o.reason == "HOLD_CANCELLED" {
			return "release answered HOLD_CANCELLED; releasing a released hold succeeds"
		}
		return sm.closedAnswer(w, o)
	}
	if h.st == hCancelled {
		return ""
	}
	ex := holdExpl(w, o, i, seatHeld, refAny)
	if h.st == hHeld && h.mayCancel {
		ex |= exMayCancel
	}
	if !sm.narrow(w, o, i, ex) {
		return sm.whyf("release OK although hold %s is %s", sm.slots[i].id, sm.holdState(w, o, i))
	}
	sm.finish(w, i, hCancelled)
	return ""
}

// extend checks an extend: OK only on a live hold, and the expiry it
// reports is max(old expiry, clock + TTL), capped at the hold's creation +
// the lifetime cap. The reported expiry becomes the hold's.
func (sm *showModel) extend(w *state, o *mop) string {
	if done, why := sm.target(w, o); done {
		return why
	}
	i := o.slot
	if o.outcome != history.OK {
		return sm.closedAnswer(w, o)
	}
	if !sm.narrow(w, o, i, holdExpl(w, o, i, seatHeld, refAny)) {
		return sm.whyf("extend OK although hold %s is %s", sm.slots[i].id, sm.holdState(w, o, i))
	}
	h := w.holds.get(int(i))
	if o.exp == 0 { // no expiry in the answer: it moved as an info extend's may
		w.holds = w.holds.set(int(i), sm.extended(h, o))
		return ""
	}
	if why := sm.extendFits(w, o, h); why != "" {
		return why
	}
	w.holds = w.holds.set(int(i), sm.exactly(h, o.slot, o.exp))
	return ""
}

// exactly returns hold cell h with its expiry known to be e there: in the
// revision replay, an info extend that may apply later still may move it
// (by up to mayExt).
func (sm *showModel) exactly(h holdCell, i int32, e int64) holdCell {
	h.lo, h.hi = e, e
	if h.mayExt > 0 {
		h.hi = max(e, min(e+h.mayExt, sm.lifetimeCap(i)))
	}
	return h
}

// extendFits checks an extend's reported expiry e against the hold's
// expiry bounds [lo, hi] before it: e = max(old, min(c + TTL, cap)).
func (sm *showModel) extendFits(w *state, o *mop, h holdCell) string {
	e, i := o.exp, o.slot
	c, known := at(w, o)
	target := c + o.ttl // the expiry the extend asks for
	cp := sm.lifetimeCap(i)
	switch {
	case e < h.lo:
		return sm.whyf("extend moved hold %s's expiry back to %d (it was at least %d)", sm.slots[i].id, e, h.lo)
	case !known || e == min(target, cp):
		return "" // the extension took effect (with an unknown clock, e >= lo is all one can say)
	case e <= h.hi && e > min(target, cp):
		return "" // the hold already expired later than asked: unchanged
	case cp == math.MaxInt64 && e < target:
		return "" // capped at a creation the model does not know
	}
	return sm.whyf("extend of hold %s by %d ms at log time %d reports expiry %d; want %d or the old expiry in [%d, %d]",
		sm.slots[i].id, o.ttl, c, e, min(target, cp), h.lo, h.hi)
}

// lifetimeCap is the latest expiry extends can give hold i, or MaxInt64
// when its creation is unknown.
func (sm *showModel) lifetimeCap(i int32) int64 {
	if sl := &sm.slots[i]; sl.created != 0 {
		return sl.created + holdLifetimeMaxMs
	}
	return math.MaxInt64
}

// extended returns hold cell h after an extend o whose new expiry is not
// known: it applied while the hold was live, at a clock no earlier than
// o.lo0 - TTL, so the expiry moved to at least min(o.lo0, cap) and less than
// hi + TTL. The bounds do not depend on where the extend is linearized.
func (sm *showModel) extended(h holdCell, o *mop) holdCell {
	cp := sm.lifetimeCap(o.slot)
	hi := h.hi
	if hi <= math.MaxInt64-o.ttl {
		hi += o.ttl
	} else {
		hi = math.MaxInt64
	}
	h.lo = max(h.lo, min(o.lo0, cp))
	h.hi = max(h.hi, min(hi, cp))
	return h
}

// refund checks a refund: OK on a booking (again OK on a refunded one),
// which frees its seats; HOLD_NOT_CONFIRMED for a live or released hold.
func (sm *showModel) refund(w *state, o *mop) string {
	if done, why := sm.target(w, o); done {
		return why
	}
	i := o.slot
	if o.outcome != history.OK {
		return sm.closedAnswer(w, o)
	}
	h := w.holds.get(int(i))
	switch {
	case h.st == hRefunded:
		return ""
	case h.st == hHeld && h.mayConfirm:
		sm.narrow(w, o, i, exMayConfirm)
	case h.st != hConfirmed:
		return sm.whyf("refund OK although hold %s is %s", sm.slots[i].id, sm.holdState(w, o, i))
	}
	sm.finish(w, i, hRefunded)
	return ""
}

// closedAnswer checks the rejections of confirm, release, extend and refund
// that follow from the hold's state: HOLD_EXPIRED, HOLD_CANCELLED,
// HOLD_CONFIRMED, HOLD_NOT_CONFIRMED.
func (sm *showModel) closedAnswer(w *state, o *mop) string {
	i := o.slot
	h := w.holds.get(int(i))
	var ex int
	switch o.reason {
	case "HOLD_EXPIRED":
		ex = holdExpl(w, o, i, seatFree, refAny) & exExpired
	case "HOLD_CANCELLED":
		if o.kind != history.KindRefund {
			ex = cancelledExpl(h)
		}
	case "HOLD_CONFIRMED":
		if o.kind != history.KindRefund {
			ex = bookedExpl(h, o)
		}
	case "HOLD_NOT_CONFIRMED":
		if o.kind == history.KindRefund {
			ex = cancelledExpl(h) | holdExpl(w, o, i, seatHeld, refAny)
		}
	}
	if !sm.narrow(w, o, i, ex) {
		return sm.whyf("%s %s although hold %s is %s", o.kind, o.reason, sm.slots[i].id, sm.holdState(w, o, i))
	}
	return ""
}

// cancelledExpl returns how hold h may be released.
func cancelledExpl(h holdCell) int {
	switch {
	case h.st == hCancelled:
		return exTrue
	case h.st == hHeld && h.mayCancel:
		return exMayCancel
	}
	return 0
}

// bookedExpl returns how hold h may answer HOLD_CONFIRMED to o: it is a
// booking, or a refunded one, and o is not a confirm with its payment ref
// (which would succeed again).
func bookedExpl(h holdCell, o *mop) int {
	anyRef := o.kind != history.KindConfirm
	ex := 0
	switch {
	case h.st == hRefunded:
		ex |= exTrue
	case h.st == hConfirmed && (anyRef || h.ref == refAny || h.ref != o.ref):
		ex |= exTrue
	case h.st == hConfirmed && h.mayRefund:
		ex |= exMayRefund
	case h.st == hHeld && h.mayConfirm:
		if anyRef || h.mayRef == refAny || h.mayRef != o.ref {
			ex |= exMayConfirm
		}
		if h.mayRefund {
			ex |= exMayRefund
		}
	}
	return ex
}

func (sm *showModel) getHold(w *state, o *mop) string {
	if done, why := sm.target(w, o); done {
		return why
	}
	i := o.slot
	var ex int
	switch o.state {
	case "HELD":
		ex = holdExpl(w, o, i, seatHeld, refAny)
	case "EXPIRED":
		ex = holdExpl(w, o, i, seatFree, refAny) & exExpired
	case "CONFIRMED":
		ex = holdExpl(w, o, i, seatBooked, refAny)
	case "CANCELLED":
		ex = cancelledExpl(w.holds.get(int(i)))
	case "REFUNDED":
		ex = holdExpl(w, o, i, seatFree, refAny) & exMayRefund
		if w.holds.get(int(i)).st == hRefunded {
			ex |= exTrue
		}
	default:
		ex = exTrue
	}
	if !sm.narrow(w, o, i, ex) {
		return sm.whyf("GetHold reads %s although hold %s is %s", o.state, sm.slots[i].id, sm.holdState(w, o, i))
	}
	if o.exp != 0 {
		h := w.holds.get(int(i))
		if o.exp < h.lo || o.exp > h.hi {
			return sm.whyf("GetHold reads expires_at %d for hold %s, which expires in [%d, %d]", o.exp, sm.slots[i].id, h.lo, h.hi)
		}
		w.holds = w.holds.set(int(i), sm.exactly(h, i, o.exp))
	}
	return ""
}

func (sm *showModel) read(w *state, o *mop) string {
	for x, v := range o.view {
		if v == seatUnread {
			continue
		}
		if why := sm.seat(w, o, int32(x), v); why != "" {
			return "read: " + why
		}
	}
	return ""
}

// holdState describes hold i at o's clock, for messages.
func (sm *showModel) holdState(w *state, o *mop, i int32) string {
	if sm.quiet {
		return ""
	}
	h := w.holds.get(int(i))
	switch h.st {
	case hNone:
		return "not made"
	case hConfirmed:
		if h.mayRefund {
			return "CONFIRMED (maybe refunded by an info op)"
		}
		return "CONFIRMED"
	case hCancelled:
		return "CANCELLED"
	case hRefunded:
		return "REFUNDED"
	}
	s := sm.seatState(w, o, i)
	switch {
	case h.mayConfirm && h.mayCancel:
		s += " (maybe confirmed or released by an info op)"
	case h.mayConfirm:
		s += " (maybe confirmed by an info op)"
	case h.mayCancel:
		s += " (maybe released by an info op)"
	}
	return s
}

// applyInfo applies an info op as if it took effect here, at a clock no
// earlier than the state's, and reports whether it could.
func (sm *showModel) applyInfo(w *state, o *mop) bool {
	switch o.kind {
	case history.KindHold:
		if w.holds.get(int(o.slot)).st != hNone {
			return false
		}
		sl := &sm.slots[o.slot]
		if sl.wild { // seats unknown: it may hold some, from no earlier than lo0
			w.holds = w.holds.set(int(o.slot), holdCell{st: hHeld, lo: sl.lo0, hi: math.MaxInt64, ref: refAny, mayRef: refAny})
			return true
		}
		w2 := *w
		if sm.take(&w2, o, o.slot, o.seats) != "" {
			return false
		}
		lo, hi := sl.lo0, int64(math.MaxInt64)
		switch {
		case !sl.info && sl.exp != 0: // an acknowledged hold cut short by a prefix
			lo, hi = sl.exp, sl.exp
		case w2.clock > w.clock: // applied after a hold on its seats expired
			lo = max(lo, w2.clock+o.ttl)
		}
		*w = w2
		w.holds = w.holds.set(int(o.slot), holdCell{st: hHeld, lo: lo, hi: hi, ref: refAny, mayRef: refAny})
		return true
	case history.KindConfirm, history.KindRelease:
		if !sm.infoCanAct(w, o) {
			return false
		}
		sm.narrow(w, o, o.slot, exLive)
		if o.kind == history.KindRelease {
			sm.finish(w, o.slot, hCancelled)
			return true
		}
		h := w.holds.get(int(o.slot))
		h.st, h.ref = hConfirmed, o.ref
		w.holds = w.holds.set(int(o.slot), h)
		return true
	case history.KindExtend:
		if !sm.infoCanAct(w, o) {
			return false
		}
		w.holds = w.holds.set(int(o.slot), sm.extended(w.holds.get(int(o.slot)), o))
		return true
	case history.KindRefund:
		if o.slot == slotForeign || !sm.ownerOK(o) {
			return false
		}
		switch w.holds.get(int(o.slot)).st {
		case hRefunded:
			return true
		case hConfirmed:
			sm.finish(w, o.slot, hRefunded)
			return true
		}
	}
	return false
}

// infoCanAct reports whether an info confirm, release or extend could
// succeed at a clock no earlier than the state's: its hold exists, is the
// client's, and may still be live.
func (sm *showModel) infoCanAct(w *state, o *mop) bool {
	if o.slot == slotForeign || !sm.ownerOK(o) {
		return false
	}
	h := w.holds.get(int(o.slot))
	return h.st == hHeld && h.hi > w.clock
}

// mayApply records that an info op may have taken effect from here on
// (revision replay only).
func (sm *showModel) mayApply(w *state, o *mop) {
	switch o.kind {
	case history.KindHold:
		for x := range sm.seats {
			if sm.slots[o.slot].wild && sm.inCategory(int32(x), o.category) || slices.Contains(o.seats, int32(x)) {
				c := w.seats.get(x)
				c.may = true
				w.seats = w.seats.set(x, c)
			}
		}
	case history.KindConfirm:
		if !sm.infoCanAct(w, o) {
			return
		}
		h := w.holds.get(int(o.slot))
		if h.mayConfirm && h.mayRef != o.ref {
			h.mayRef = refAny
		} else {
			h.mayRef = o.ref
		}
		h.mayConfirm = true
		w.holds = w.holds.set(int(o.slot), h)
	case history.KindRelease:
		if !sm.infoCanAct(w, o) {
			return
		}
		h := w.holds.get(int(o.slot))
		h.mayCancel = true
		w.holds = w.holds.set(int(o.slot), h)
	case history.KindExtend:
		if !sm.infoCanAct(w, o) {
			return
		}
		h := w.holds.get(int(o.slot))
		lo := h.lo // it may not have happened: only the upper bound moves
		h = sm.extended(h, o)
		h.lo, h.mayExt = lo, max(h.mayExt, o.ttl)
		w.holds = w.holds.set(int(o.slot), h)
	case history.KindRefund:
		// Whatever the hold's state now: the confirm it needs may come later.
		if o.slot == slotForeign || !sm.ownerOK(o) {
			return
		}
		h := w.holds.get(int(o.slot))
		if h.st != hNone && h.st != hRefunded && h.st != hCancelled {
			h.mayRefund = true
			w.holds = w.holds.set(int(o.slot), h)
		}
	}
}
