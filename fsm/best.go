package fsm

import (
	"cmp"
	"math"
	"slices"
)

// Best available. Given a show's free seats, pick n of them for one party,
// deterministically (a pure function of the layout and the free seats, so
// every replica picks the same; a retry with the same request_id gets the
// stored answer). The policy, in order:
//
//  1. Side by side in one row when any row has n adjacent free seats.
//  2. Among those, a choice that leaves no single free seat stranded between
//     the party and a taken seat or the row's end ("orphan"), when one
//     exists.
//  3. Nearest the centre: the smallest sum of the row's distance from the
//     middle row and the party's distance from the row's middle seat, both
//     counted in half-seats/half-rows so no fractions are needed.
//  4. Ties: the lower row (A before B), then the lower seat number.
//
// When no row has n adjacent free seats, the party is split: the n free
// seats nearest the centre by the same distance, ties as in 4. With fewer
// than n free seats the answer is none (CODE_SOLD_OUT).
//
// A category narrows the candidates to rows of that category.

// window is one candidate: n adjacent seats of one row.
type window struct {
	row, first int // row index; first seat's index into the layout
	orphans    int // stranded single seats it would leave (0, 1 or 2)
	dist       int // distance from the centre in half units
}

// bestSeats returns the layout indexes of the n best free seats of rows in
// category ("" = any), or nil when fewer than n are free. They are in
// dst's memory when it is large enough.
//
// The best window is the least by windowLess, an order in which no two
// windows tie (first tells them apart), so the order rows are read in
// cannot change it: they are read from the middle out, and a row that
// cannot hold a window better than the best so far is not read at all.
func bestSeats(dst []int, l *layout, free []bool, n int, category string) []int {
	rows := l.showRows // the geometry's: see layout.seatRow
	// best is a value, not a pointer to the loop's window: taking that
	// address moved every candidate to the heap.
	var best window
	found := false
	if len(rows) > 0 {
		// Rows a and b are equally far from the middle; a + b = len - 1.
		for a, b := (len(rows)-1)/2, len(rows)/2; a >= 0; a, b = a-1, b+1 {
			if found && best.orphans == 0 && best.dist < rowDistance(a, len(rows)) {
				break // every row left is farther than the best window
			}
			best, found = bestInRow(l, free, a, n, category, best, found)
			if b != a {
				best, found = bestInRow(l, free, b, n, category, best, found)
			}
		}
	}
	if found {
		seats := slices.Grow(dst[:0], n)[:n]
		for i := range seats {
			seats[i] = best.first + i
		}
		return seats
	}
	return splitParty(dst, l, free, n, category)
}

// bestInRow returns the better of best (if found) and row ri's best
// window of n free seats, if the row is in category and has one.
func bestInRow(l *layout, free []bool, ri, n int, category string, best window, found bool) (window, bool) {
	r := l.showRows[ri]
	if category != "" && r.Category != category {
		return best, found
	}
	base, size := l.offsets[ri], int(r.Seats)
	rd := rowDistance(ri, len(l.showRows))
	// No window of the row is nearer than rd plus the parity of the
	// seats it would leave (scoreWindow's distance is even or odd with
	// them): a best window without orphans at least that near, and
	// before the row when as near, stays the best.
	if found && best.orphans == 0 {
		if low := rd + abs(size-n)%2; best.dist < low || (best.dist == low && best.first < base) {
			return best, found
		}
	}
	row := free[base : base+size]
	// The windows [end-n, end) in order, each scored only when the run
	// of free seats before end is long enough: a pass over the row, not
	// n reads per window.
	run := 0 // free seats right before end
	for end := 0; end <= size; end++ {
		if end > 0 {
			if row[end-1] {
				run++
			} else {
				run = 0
			}
		}
		if run < n {
			continue
		}
		start := end - n
		w := scoreWindow(row, start, n)
		w.row, w.first = ri, base+start
		w.dist += rd
		if !found || windowLess(&w, &best) {
			best, found = w, true
		}
	}
	return best, found
}

// scoreWindow scores seats [start, start+n) of one row, all free.
func scoreWindow(row []bool, start, n int) window {
	w := window{dist: abs(2*start + n - 1 - (len(row) - 1))}
	// A run of exactly one free seat left on either side is an orphan.
	if start >= 1 && row[start-1] && (start == 1 || !row[start-2]) {
		w.orphans++
	}
	end := start + n
	if end < len(row) && row[end] && (end == len(row)-1 || !row[end+1]) {
		w.orphans++
	}
	return w
}

func windowLess(a, b *window) bool {
	if (a.orphans > 0) != (b.orphans > 0) {
		return a.orphans == 0
	}
	if a.dist != b.dist {
		return a.dist < b.dist
	}
	return a.first < b.first // row order, then seat order: layout indexes
}

// rowDistance is a row's distance from the middle row in half rows.
func rowDistance(ri, rows int) int { return abs(2*ri - (rows - 1)) }

// splitParty picks the n free seats nearest the centre, any rows.
func splitParty(dst []int, l *layout, free []bool, n int, category string) []int {
	type cand struct{ idx, dist int }
	var cands []cand
	for ri, r := range l.showRows {
		if category != "" && r.Category != category {
			continue
		}
		base, size := l.offsets[ri], int(r.Seats)
		for s := 0; s < size; s++ {
			if free[base+s] {
				cands = append(cands, cand{base + s, rowDistance(ri, len(l.showRows)) + abs(2*s-(size-1))})
			}
		}
	}
	if len(cands) < n {
		return nil
	}
	slices.SortFunc(cands, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(a.idx, b.idx))
	})
	seats := slices.Grow(dst[:0], n)[:n]
	for i := range seats {
		seats[i] = cands[i].idx
	}
	slices.Sort(seats)
	return seats
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// freeSeatMap returns, for every seat of show, whether a hold could take it
// now: FREE, or held by a hold expired by the log clock. It reads the
// ledger, so earlier commands of the entry count. The map is dst's memory
// when dst is large enough: the hold path passes tx.freeBuf, which it
// does not keep across commands.
func (tx *txn) freeSeatMap(show string, l *layout, dst []bool) []bool {
	s := tx.m.led.shows[show]
	if !(s != nil && s.l == l) {
		violated("free seats of show %s, which is not in the ledger", show)
	}
	free := slices.Grow(dst[:0], l.total)[:l.total]
	if tx.now < s.owners.takeLow {
		// No owner may be taken from yet: no slot to read.
		for i := range free {
			free[i] = s.owners.ref(i) == 0
		}
		if checkLedger {
			tx.m.led.checkTakeLow(s)
		}
		return free
	}
	// A hold's seats are mostly side by side: its slot is read once for
	// the run of them. Every owner's slot is read, so the bound can be
	// made exact on the way.
	var last uint32
	lastFree := false
	low := int64(math.MaxInt64)
	for i := range free {
		r := s.owners.ref(i)
		switch {
		case r == 0:
			free[i] = true
		case r == last:
			free[i] = lastFree
		default:
			at := tx.m.led.holds.takeAt(r)
			low = min(low, at)
			last, lastFree = r, tx.now >= at
			free[i] = lastFree
		}
	}
	s.owners.takeLow = low
	return free
}

// checkTakeLow asserts that s.owners.takeLow is a bound of its owners'
// takeAt (tests: checkLedger).
func (led *ledger) checkTakeLow(s *showState) {
	for i := range s.owners.len() {
		if r := s.owners.ref(i); r != 0 && led.holds.takeAt(r) < s.owners.takeLow {
			violated("seat %d of show %s is owned by hold %s, takeable at %d, before the show's bound %d", i, s.id, led.holds.id(r), led.holds.takeAt(r), s.owners.takeLow)
		}
	}
}

// hasFreeSeat reports whether a hold could take any seat of show now.
func (tx *txn) hasFreeSeat(show string) bool {
	s := tx.m.led.shows[show]
	for i := range s.owners.len() {
		if tx.m.led.holds.takeable(&s.owners, i, tx.now) {
			return true
		}
	}
	return false
}
