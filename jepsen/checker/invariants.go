package checker

import (
	"math"
	"sort"
	"strconv"

	"github.com/seatledger/seatledger/jepsen/history"
)

// The invariant checks work on log positions, not on a linearization, so
// they stay cheap on any history. Each claims a violation only when every
// correct execution contradicts it; info ops are assumed to have happened
// whenever that is the charitable reading.

// point is a position in a group's log: the log clock, then the revision.
// Clocks never go back along the log, so (clock, revision) order is log
// order; a revision of 0 (unknown) sorts first among points of one clock,
// so a point with it is a lower bound. Expiry at expires_at is the point
// (expires_at, 0): the first entry whose clock reaches it.
type point struct {
	clock int64
	rev   uint64
}

func (p point) less(q point) bool {
	return p.clock < q.clock || (p.clock == q.clock && p.rev < q.rev)
}

var forever = point{clock: math.MaxInt64}

func (p point) String() string {
	switch {
	case p == forever:
		return "forever (confirmed)"
	case p.rev == 0:
		return "log time " + strconv.FormatInt(p.clock, 10)
	}
	return "log time " + strconv.FormatInt(p.clock, 10) + " revision " + strconv.FormatUint(p.rev, 10)
}

func opPoint(l *lop) point { return point{l.AppliedAtMs, l.Revision} }

// life is an acknowledged hold's certain life: it held its seats from its
// own point until at least end, the earliest point its release, refund or
// expiry could have happened (forever once confirmed, unless a refund was
// sent). Its expiry is the latest an acknowledged extend reported: an
// extend only succeeds on a live hold, so the life runs on unbroken.
type life struct {
	l     *lop
	seats []string
	start point
	end   point
}

// showOps indexes one show's logical ops for the invariant checks.
type showOps struct {
	name   string
	ops    []*lop
	byHold map[string][]*lop // confirm, release, gethold, extend, refund ops by hold id
	lives  []*life
	clocks clockIndex
}

func newShowOps(name string, ops []*lop) *showOps {
	so := &showOps{name: name, ops: ops, byHold: map[string][]*lop{}, clocks: newClockIndex(ops)}
	for _, l := range ops {
		if l.HoldID != "" {
			so.byHold[l.HoldID] = append(so.byHold[l.HoldID], l)
		}
	}
	seen := map[string]bool{}
	for _, l := range ops {
		if l.Kind != history.KindHold || l.Outcome != history.OK || l.AppliedAtMs == 0 || l.OutHoldID == "" || seen[l.OutHoldID] {
			continue
		}
		if l.queue && l.Revision == 0 {
			continue // an offer whose place in the log is unknown: its life has no certain start
		}
		seen[l.OutHoldID] = true
		so.lives = append(so.lives, &life{l: l, seats: l.GrantedSeats(), start: opPoint(l), end: so.lifeEnd(l)})
	}
	return so
}

// lifeEnd is the earliest point hold l could have stopped holding.
func (so *showOps) lifeEnd(l *lop) point {
	exp := l.ExpiresAtMs
	if exp == 0 {
		exp = l.AppliedAtMs + ttlOf(l.TTLms)
	}
	confirmed := false
	for _, o := range so.byHold[l.OutHoldID] {
		switch {
		case o.Outcome != history.OK:
		case o.Kind == history.KindConfirm:
			confirmed = true
		case o.Kind == history.KindExtend:
			exp = max(exp, o.ExpiresAtMs)
		}
	}
	end := point{clock: exp}
	if confirmed {
		end = forever
	}
	for _, o := range so.byHold[l.OutHoldID] {
		if o.Kind != history.KindRelease && o.Kind != history.KindRefund {
			continue
		}
		// An info release cannot end a confirmed hold; a refund (which needs
		// the confirm) may end one, confirmed or not (the confirm may be info).
		var p point
		switch {
		case o.Outcome == history.OK && o.AppliedAtMs != 0:
			p = opPoint(o)
		case o.Outcome == history.OK || (o.Outcome == history.Info && (!confirmed || o.Kind == history.KindRefund)):
			// Sent after the hold returned, so in a later entry, at a clock
			// no earlier than any op's that returned before it was sent.
			p = point{max(l.AppliedAtMs, so.clocks.before(o.Call)), max(l.Revision+1, so.clocks.revBefore(o.Call)+1)}
		default:
			continue
		}
		if p.less(end) {
			end = p
		}
	}
	return end
}

// checkS1History reports two acknowledged holds whose certain lives overlap
// on a seat (S1), which is also a grant of a live hold's seat (S3).
func checkS1History(so *showOps, rep *reporter) {
	bySeat := map[string][]*life{}
	for _, lf := range so.lives {
		if !lf.start.less(lf.end) {
			continue
		}
		for _, s := range lf.seats {
			bySeat[s] = append(bySeat[s], lf)
		}
	}
	seats := make([]string, 0, len(bySeat))
	for s := range bySeat {
		seats = append(seats, s)
	}
	sort.Slice(seats, func(i, j int) bool { return seatLess(seats[i], seats[j]) })
	for _, s := range seats {
		ls := bySeat[s]
		sort.SliceStable(ls, func(i, j int) bool { return ls[i].start.less(ls[j].start) })
		var longest *life
		for _, lf := range ls {
			if longest != nil && lf.start.less(longest.end) {
				first, second := longest, lf
				rep.violation(CheckS1, so.name, []int{first.l.ID, second.l.ID},
					"seat %s held by hold %s (op %d, from %s until at least %s) and by hold %s (op %d, from %s)",
					s, first.l.OutHoldID, first.l.ID, first.start, first.end, second.l.OutHoldID, second.l.ID, second.start)
				if first.start.rev != 0 && second.start.rev > first.start.rev {
					rep.violation(CheckS3, so.name, []int{first.l.ID, second.l.ID},
						"seat %s of acknowledged hold %s (op %d, live until at least %s) was granted to hold %s (op %d) at %s",
						s, first.l.OutHoldID, first.l.ID, first.end, second.l.OutHoldID, second.l.ID, second.start)
				}
			}
			if longest == nil || longest.end.less(lf.end) {
				longest = lf
			}
		}
	}
}

// checkS3Reads reports reads that saw a seat of a live acknowledged hold
// FREE, and GetHold answers that had it gone, before its certain end.
func checkS3Reads(so *showOps, rep *reporter) {
	for _, r := range so.ops {
		if r.Outcome == history.Info || r.Revision == 0 || r.AppliedAtMs == 0 {
			continue
		}
		switch r.Kind {
		case history.KindRead:
			if r.Outcome != history.OK {
				continue
			}
			for _, lf := range so.lives {
				if !within(r, lf) {
					continue
				}
				for _, s := range lf.seats {
					if st, ok := r.SeatStates[s]; ok && parseSeatState(st) == seatFree {
						rep.violation(CheckS3, so.name, []int{lf.l.ID, r.ID},
							"read op %d (at %s) sees seat %s FREE, but acknowledged hold %s (op %d, at %s) holds it until at least %s",
							r.ID, opPoint(r), s, lf.l.OutHoldID, lf.l.ID, lf.start, lf.end)
						break
					}
				}
			}
		case history.KindGetHold:
			for _, lf := range so.lives {
				if lf.l.OutHoldID != r.HoldID || !within(r, lf) {
					continue
				}
				st := normHoldState(r.HoldState)
				gone := (r.Outcome == history.OK && (st == "EXPIRED" || st == "CANCELLED" || st == "REFUNDED")) ||
					(r.Outcome == history.Fail && normReason(r.Reason) == "HOLD_NOT_FOUND")
				if gone {
					rep.violation(CheckS3, so.name, []int{lf.l.ID, r.ID},
						"GetHold op %d (at %s) answers %s for acknowledged hold %s (op %d), live until at least %s",
						r.ID, opPoint(r), answerOrState(r), lf.l.OutHoldID, lf.l.ID, lf.end)
				}
			}
		}
	}
}

// within reports whether read r happened during lf's certain life: it read
// at or after the hold's revision (a read at revision R sees entry R) and
// before the end.
func within(r *lop, lf *life) bool {
	return lf.l.Revision != 0 && r.Revision >= lf.l.Revision && opPoint(r).less(lf.end)
}

func answerOrState(l *lop) string {
	if l.Outcome == history.OK {
		return normHoldState(l.HoldState)
	}
	return answerString(&l.Op)
}

// checkFinal runs the checks on the final reads for one show: S1 (no seat
// in two live or confirmed holds), S2 (confirms kept unless refunded,
// bookings explained) and S4 (no phantom seats). layout is the show's, nil
// if unknown.
func checkFinal(so *showOps, h *history.History, layout *history.Layout, rep *reporter) {
	f := h.Final
	checkS1Final(so.name, f, rep)
	seats := f.Seats[so.name]
	holdSeats := map[string][]string{}
	for _, lf := range so.lives {
		holdSeats[lf.l.OutHoldID] = lf.seats
	}
	// refunds: hold id -> the strongest refund sent for it (OK over info).
	refunds := map[string]history.Outcome{}
	for _, l := range so.ops {
		if l.Kind == history.KindRefund && l.Outcome != history.Fail && refunds[l.HoldID] != history.OK {
			refunds[l.HoldID] = l.Outcome
		}
	}
	for _, l := range so.ops {
		if l.Kind != history.KindConfirm || l.Outcome != history.OK {
			continue
		}
		fh, ok := f.Holds[l.HoldID]
		if !ok {
			rep.warnf("the final reads lack hold %s, confirmed by op %d", l.HoldID, l.ID)
			continue
		}
		st := normHoldState(fh.State)
		switch {
		case st == "REFUNDED" && refunds[l.HoldID] != "":
			continue // refunded on request: its seats may have been sold again
		case st == "CONFIRMED" && refunds[l.HoldID] == history.OK:
			rep.violation(CheckS2, so.name, []int{l.ID}, "booking %s (confirmed by op %d) was refunded, yet it is CONFIRMED in the final reads", l.HoldID, l.ID)
			continue
		case st == "REFUNDED":
			rep.violation(CheckS2, so.name, []int{l.ID}, "hold %s, confirmed by op %d, is REFUNDED in the final reads, but no refund of it was sent", l.HoldID, l.ID)
			continue
		case st != "CONFIRMED":
			rep.violation(CheckS2, so.name, []int{l.ID}, "hold %s, confirmed by op %d, is %s in the final reads", l.HoldID, l.ID, fh.State)
			continue
		case fh.PaymentRef != "" && l.PaymentRef != "" && fh.PaymentRef != l.PaymentRef:
			rep.violation(CheckS2, so.name, []int{l.ID}, "hold %s, confirmed by op %d with payment %q, ends confirmed with payment %q",
				l.HoldID, l.ID, l.PaymentRef, fh.PaymentRef)
		}
		ss := fh.Seats
		if len(ss) == 0 {
			ss = holdSeats[l.HoldID]
		}
		for _, s := range ss {
			if st, ok := seats[s]; ok && parseSeatState(st) != seatBooked {
				rep.violation(CheckS2, so.name, []int{l.ID}, "seat %s of hold %s, confirmed by op %d, is %s in the final reads", s, l.HoldID, l.ID, st)
			}
		}
	}
	checkFinalSeats(so, h, layout, rep)
}

// checkS1Final reports a seat that two final holds own at once.
func checkS1Final(show string, f *history.Final, rep *reporter) {
	ids := make([]string, 0, len(f.Holds))
	for id, fh := range f.Holds {
		if fh.Show == show {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	owner := map[string]string{}
	for _, id := range ids {
		fh := f.Holds[id]
		st := normHoldState(fh.State)
		if st != "CONFIRMED" && (st != "HELD" || f.ReadAtMs >= fh.ExpiresAtMs) {
			continue
		}
		for _, s := range fh.Seats {
			if prev, ok := owner[s]; ok {
				rep.violation(CheckS1, show, nil, "seat %s belongs to hold %s (%s) and hold %s (%s) in the final reads",
					s, prev, f.Holds[prev].State, id, fh.State)
				continue
			}
			owner[s] = id
		}
	}
}

// checkFinalSeats checks every final HELD or BOOKED seat: some hold of the
// history asked for it or was granted it (S4), and a BOOKED one has a
// confirm behind it (S2). A best-available hold whose answer never came,
// and a queue entry whose fate is unknown, may have taken any seat of its
// category (of the show, without a layout); an offer took the seats read.
func checkFinalSeats(so *showOps, h *history.History, layout *history.Layout, rep *reporter) {
	asked := map[string]bool{}
	anySeat := false               // an info best-available hold without a layout: any seat
	confirmed := map[string]bool{} // seats of holds some OK or info confirm named
	holdSeats := map[string][]string{}
	resolved := answeredRequests(h)
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Show != so.name || op.Kind != history.KindHold || (op.Outcome != history.OK && op.Outcome != history.Info) {
			continue
		}
		for _, s := range op.Seats {
			asked[s] = true
		}
		if op.OutHoldID != "" {
			holdSeats[op.OutHoldID] = op.GrantedSeats()
			for _, s := range op.OutSeats {
				asked[s] = true
			}
		}
		if op.Outcome == history.Info && op.Count > 0 && !resolved[requestKey{op.ClientID, op.RequestID}] {
			if layout == nil {
				anySeat = true
			}
			for s, cat := range layoutSeats(layout) {
				if op.Category == "" || cat == op.Category {
					asked[s] = true
				}
			}
		}
	}
	for _, l := range so.ops {
		switch {
		case !l.queue:
		case l.Outcome == history.OK: // an offer: a hold of the seats read
			holdSeats[l.OutHoldID] = l.OutSeats
			for _, s := range l.OutSeats {
				asked[s] = true
			}
		default: // an entry that may have been offered, unseen
			anySeat = anySeat || layout == nil
			for s, cat := range layoutSeats(layout) {
				if l.Category == "" || cat == l.Category {
					asked[s] = true
				}
			}
		}
	}
	for id, fh := range h.Final.Holds {
		if fh.Show == so.name && holdSeats[id] == nil {
			holdSeats[id] = fh.Seats
		}
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Show == so.name && op.Kind == history.KindConfirm && (op.Outcome == history.OK || op.Outcome == history.Info) {
			for _, s := range holdSeats[op.HoldID] {
				confirmed[s] = true
			}
		}
	}
	seats := h.Final.Seats[so.name]
	names := make([]string, 0, len(seats))
	for s := range seats {
		names = append(names, s)
	}
	sort.Slice(names, func(i, j int) bool { return seatLess(names[i], names[j]) })
	for _, s := range names {
		st := parseSeatState(seats[s])
		if st != seatHeld && st != seatBooked {
			continue
		}
		if !asked[s] && !anySeat {
			rep.violation(CheckS4, so.name, nil, "seat %s is %s in the final reads, but no hold of the history asked for it", s, seats[s])
			continue
		}
		if st == seatBooked && !confirmed[s] {
			rep.violation(CheckS2, so.name, nil, "seat %s is BOOKED in the final reads, but no confirm of the history names a hold of it", s)
		}
	}
}

// requestKey is the exactly-once identity of a request.
type requestKey struct{ client, request string }

// answeredRequests are the requests some op of h got the state machine's
// answer to.
func answeredRequests(h *history.History) map[requestKey]bool {
	out := map[requestKey]bool{}
	for i := range h.Ops {
		if op := &h.Ops[i]; op.ClientID != "" && answered(op) {
			out[requestKey{op.ClientID, op.RequestID}] = true
		}
	}
	return out
}

// layoutSeats is a layout's seats, none for nil.
func layoutSeats(l *history.Layout) map[string]string {
	if l == nil {
		return nil
	}
	return l.Seats
}

// checkDigests checks S6: every replica of a group reports the same digest.
func checkDigests(f *history.Final, rep *reporter) {
	groups := make([]uint32, 0, len(f.Digests))
	for g := range f.Digests {
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i] < groups[j] })
	for _, g := range groups {
		nodes := make([]string, 0, len(f.Digests[g]))
		for n, d := range f.Digests[g] {
			if d == "" {
				rep.warnf("group %d: node %s reported no digest", g, n)
				continue
			}
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		if len(nodes) < 2 {
			rep.warnf("group %d: only %d node(s) reported a digest at index %d; nothing to compare", g, len(nodes), f.Applied[g])
			continue
		}
		first := f.Digests[g][nodes[0]]
		for _, n := range nodes[1:] {
			if d := f.Digests[g][n]; d != first {
				rep.violation(CheckS6, "", nil, "group %d at index %d: node %s has digest %s, node %s has %s",
					g, f.Applied[g], nodes[0], first, n, d)
			}
		}
	}
	for g := range f.Applied {
		if _, ok := f.Digests[g]; !ok {
			rep.warnf("group %d: applied index %d recorded but no digests", g, f.Applied[g])
		}
	}
}
