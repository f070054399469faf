package checker

import (
	"math"

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
	sm.cancel(w, i)
	return ""
}

// closedAnswer checks the rejections of confirm and release that follow
// from the hold's state: HOLD_EXPIRED, HOLD_CANCELLED, HOLD_CONFIRMED.
func (sm *showModel) closedAnswer(w *state, o *mop) string {
	i := o.slot
	h := w.holds.get(int(i))
	var ex int
	switch o.reason {
	case "HOLD_EXPIRED":
		ex = holdExpl(w, o, i, seatFree, refAny) & exExpired
	case "HOLD_CANCELLED":
		ex = holdExpl(w, o, i, seatFree, refAny) & (exTrue | exMayCancel)
	case "HOLD_CONFIRMED":
		if h.st == hConfirmed && (o.kind == history.KindRelease || h.ref == refAny || h.ref != o.ref) {
			ex |= exTrue
		}
		if h.st == hHeld && h.mayConfirm && (o.kind == history.KindRelease || h.mayRef == refAny || h.mayRef != o.ref) {
			ex |= exMayConfirm
		}
	}
	if !sm.narrow(w, o, i, ex) {
		return sm.whyf("%s %s although hold %s is %s", o.kind, o.reason, sm.slots[i].id, sm.holdState(w, o, i))
	}
	return ""
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
		ex = holdExpl(w, o, i, seatFree, refAny) & (exTrue | exMayCancel)
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
		h.lo, h.hi = o.exp, o.exp
		w.holds = w.holds.set(int(i), h)
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
		return "CONFIRMED"
	case hCancelled:
		return "CANCELLED"
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
		w2 := *w
		if sm.take(&w2, o, o.slot, o.seats) != "" {
			return false
		}
		sl := &sm.slots[o.slot]
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
			sm.cancel(w, o.slot)
			return true
		}
		h := w.holds.get(int(o.slot))
		h.st, h.ref = hConfirmed, o.ref
		w.holds = w.holds.set(int(o.slot), h)
		return true
	}
	return false
}

// infoCanAct reports whether an info confirm or release could succeed at a
// clock no earlier than the state's: its hold exists, is the client's, and
// may still be live.
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
		for _, x := range o.seats {
			c := w.seats.get(int(x))
			c.may = true
			w.seats = w.seats.set(int(x), c)
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
	}
}
