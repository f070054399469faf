package checker

import (
	"math"
	"sort"
	"strconv"

	"github.com/seatledger/seatledger/jepsen/history"
)

// The invariant checks work on log time (AppliedAtMs) and revisions, not on
// a linearization, so they stay cheap on any history. Each claims a
// violation only when every correct execution contradicts it; info ops are
// assumed to have happened whenever that is the charitable reading.

// life is an acknowledged hold's certain life: it held its seats in log
// time [start, end) at least. end is a lower bound: the earliest its
// release, or its expiry, could have happened (forever once confirmed).
type life struct {
	l     *lop
	seats []string
	start int64
	end   int64
}

// showOps indexes one show's logical ops for the invariant checks.
type showOps struct {
	name   string
	ops    []*lop
	byHold map[string][]*lop // confirm, release, gethold ops by hold id
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
		seen[l.OutHoldID] = true
		so.lives = append(so.lives, &life{l: l, seats: l.Seats, start: l.AppliedAtMs, end: so.lifeEnd(l)})
	}
	return so
}

// lifeEnd is the earliest log time hold l could have stopped holding.
func (so *showOps) lifeEnd(l *lop) int64 {
	exp := l.ExpiresAtMs
	if exp == 0 {
		ttl := l.TTLms
		if ttl <= 0 {
			ttl = holdTTLDefaultMs
		}
		exp = l.AppliedAtMs + ttl
	}
	confirmed := false
	for _, o := range so.byHold[l.OutHoldID] {
		if o.Kind == history.KindConfirm && o.Outcome == history.OK {
			confirmed = true
		}
	}
	end := exp
	if confirmed {
		end = math.MaxInt64
	}
	for _, o := range so.byHold[l.OutHoldID] {
		if o.Kind != history.KindRelease {
			continue
		}
		switch {
		case o.Outcome == history.OK && o.AppliedAtMs != 0:
			end = min(end, o.AppliedAtMs)
		case o.Outcome == history.OK || (o.Outcome == history.Info && !confirmed):
			end = min(end, max(l.AppliedAtMs, so.clocks.before(o.Call)))
		}
	}
	return end
}

// checkS1History reports two acknowledged holds whose certain lives overlap
// on a seat (S1), which is also a grant of a live hold's seat (S3).
func checkS1History(so *showOps, rep *reporter) {
	bySeat := map[string][]*life{}
	for _, lf := range so.lives {
		if lf.end <= lf.start {
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
		sort.SliceStable(ls, func(i, j int) bool {
			if ls[i].start != ls[j].start {
				return ls[i].start < ls[j].start
			}
			return ls[i].l.Revision < ls[j].l.Revision
		})
		var longest *life
		for _, lf := range ls {
			if longest != nil && lf.start < longest.end {
				first, second := longest, lf
				rep.violation(CheckS1, so.name, []int{first.l.ID, second.l.ID},
					"seat %s held by hold %s (op %d, from log time %d until at least %s) and by hold %s (op %d, from %d)",
					s, first.l.OutHoldID, first.l.ID, first.start, endString(first.end), second.l.OutHoldID, second.l.ID, second.start)
				if revAfter(second.l, first.l) {
					rep.violation(CheckS3, so.name, []int{first.l.ID, second.l.ID},
						"seat %s of acknowledged hold %s (op %d, live until at least %s) was granted to hold %s (op %d) at log time %d",
						s, first.l.OutHoldID, first.l.ID, endString(first.end), second.l.OutHoldID, second.l.ID, second.start)
				}
			}
			if longest == nil || lf.end > longest.end {
				longest = lf
			}
		}
	}
}

// revAfter reports whether b was applied after a by their revisions (true
// when a revision is missing: the clocks already order them).
func revAfter(b, a *lop) bool {
	return a.Revision == 0 || b.Revision == 0 || b.Revision > a.Revision
}

func endString(end int64) string {
	if end == math.MaxInt64 {
		return "forever (confirmed)"
	}
	return strconv.FormatInt(end, 10)
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
							"read op %d (revision %d, log time %d) sees seat %s FREE, but acknowledged hold %s (op %d, revision %d) holds it until at least %s",
							r.ID, r.Revision, r.AppliedAtMs, s, lf.l.OutHoldID, lf.l.ID, lf.l.Revision, endString(lf.end))
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
				gone := (r.Outcome == history.OK && (st == "EXPIRED" || st == "CANCELLED")) ||
					(r.Outcome == history.Fail && normReason(r.Reason) == "HOLD_NOT_FOUND")
				if gone {
					rep.violation(CheckS3, so.name, []int{lf.l.ID, r.ID},
						"GetHold op %d (log time %d) answers %s for acknowledged hold %s (op %d), live until at least %s",
						r.ID, r.AppliedAtMs, answerOrState(r), lf.l.OutHoldID, lf.l.ID, endString(lf.end))
				}
			}
		}
	}
}

// within reports whether read r happened during lf's certain life: at or
// after the hold's revision, before its end in log time.
func within(r *lop, lf *life) bool {
	return lf.l.Revision != 0 && r.Revision >= lf.l.Revision && r.AppliedAtMs >= lf.start && r.AppliedAtMs < lf.end
}

func answerOrState(l *lop) string {
	if l.Outcome == history.OK {
		return normHoldState(l.HoldState)
	}
	return answerString(&l.Op)
}

// checkFinal runs the checks on the final reads for one show: S1 (no seat
// in two live or confirmed holds), S2 (confirms kept, bookings explained)
// and S4 (no phantom seats).
func checkFinal(so *showOps, h *history.History, rep *reporter) {
	f := h.Final
	checkS1Final(so.name, f, rep)
	seats := f.Seats[so.name]
	holdSeats := map[string][]string{}
	for _, lf := range so.lives {
		holdSeats[lf.l.OutHoldID] = lf.seats
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
		switch {
		case normHoldState(fh.State) != "CONFIRMED":
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
	checkFinalSeats(so, h, rep)
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
// history asked for it (S4), and a BOOKED one has a confirm behind it (S2).
func checkFinalSeats(so *showOps, h *history.History, rep *reporter) {
	asked := map[string]bool{}
	confirmed := map[string]bool{} // seats of holds some OK or info confirm named
	holdSeats := map[string][]string{}
	for i := range h.Ops {
		op := &h.Ops[i]
		if op.Show != so.name || op.Kind != history.KindHold || (op.Outcome != history.OK && op.Outcome != history.Info) {
			continue
		}
		for _, s := range op.Seats {
			asked[s] = true
		}
		if op.OutHoldID != "" {
			holdSeats[op.OutHoldID] = op.Seats
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
		if !asked[s] {
			rep.violation(CheckS4, so.name, nil, "seat %s is %s in the final reads, but no hold of the history asked for it", s, seats[s])
			continue
		}
		if st == seatBooked && !confirmed[s] {
			rep.violation(CheckS2, so.name, nil, "seat %s is BOOKED in the final reads, but no confirm of the history names a hold of it", s)
		}
	}
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
