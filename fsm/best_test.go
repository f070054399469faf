// This file proves that best available picks exactly what its first
// version picked, which scored every window by reading all of its seats:
// the same seats for random layouts, categories, free seats and party
// sizes (the stored results of best-available holds and the alternatives
// of conflicts depend on it).
package fsm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestBestSeatsMatchesWindowByWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	cats := []string{"std", "vip", "box"}
	for iter := range 20000 {
		show := &ledgerpb.Show{}
		for r := range 1 + rng.IntN(12) {
			show.Rows = append(show.Rows, &ledgerpb.Row{Name: fmt.Sprintf("R%c", 'A'+r), Seats: uint32(1 + rng.IntN(30)), Category: cats[rng.IntN(len(cats))]})
		}
		for _, c := range cats {
			show.Categories = append(show.Categories, &ledgerpb.Category{Name: c, PriceMinor: 100, Currency: "EUR"})
		}
		l := newLayout(show)
		free := make([]bool, l.total)
		density := rng.Float64()
		for i := range free {
			free[i] = rng.Float64() < density
		}
		n := rng.IntN(SeatsPerHoldMax + 3)
		category := ""
		if rng.IntN(2) == 0 {
			category = cats[rng.IntN(len(cats))]
		}
		// A dirty buffer, as the hold path passes: its contents must not
		// matter.
		dst := make([]int, 0, rng.IntN(2*SeatsPerHoldMax))
		for range cap(dst) {
			dst = append(dst, rng.IntN(100))
		}
		want := bestSeatsWindowByWindow(slices.Clone(dst), l, free, n, category)
		got := bestSeats(dst, l, free, n, category)
		if !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("case %d: bestSeats(n=%d, category=%q) = %v, want %v (free %v)", iter, n, category, got, want, free)
		}
	}
}

// bestSeatsWindowByWindow is bestSeats as it was first written: every
// window's seats read anew.
func bestSeatsWindowByWindow(dst []int, l *layout, free []bool, n int, category string) []int {
	rows := l.show.Rows
	var best window
	found := false
	for ri, r := range rows {
		if category != "" && r.Category != category {
			continue
		}
		base, size := l.offsets[ri], int(r.Seats)
		for start := 0; start+n <= size; start++ {
			w, ok := rowWindowReadingAll(free[base:base+size], start, n)
			if !ok {
				continue
			}
			w.row, w.first = ri, base+start
			w.dist += rowDistance(ri, len(rows))
			if !found || windowLess(&w, &best) {
				best, found = w, true
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

func rowWindowReadingAll(row []bool, start, n int) (window, bool) {
	for i := start; i < start+n; i++ {
		if !row[i] {
			return window{}, false
		}
	}
	w := window{dist: abs(2*start + n - 1 - (len(row) - 1))}
	if start >= 1 && row[start-1] && (start == 1 || !row[start-2]) {
		w.orphans++
	}
	end := start + n
	if end < len(row) && row[end] && (end == len(row)-1 || !row[end+1]) {
		w.orphans++
	}
	return w, true
}

// BenchmarkBestSeats picks 1-4 seats in BenchmarkApplyUniform's show of
// 10 rows of 20 seats with about half its seats taken, in runs of 1-4.
func BenchmarkBestSeats(b *testing.B) {
	rows := "A:20:std,B:20:std,C:20:std,D:20:std,E:20:std,F:20:std,G:20:std,H:20:std,I:20:std,J:20:std"
	l := newLayout(testShow("s1", rows, "std:1000:EUR"))
	rng := rand.New(rand.NewPCG(1, 2))
	frees := make([][]bool, 64)
	for k := range frees {
		free := make([]bool, l.total)
		for i := 0; i < len(free); {
			n := 1 + rng.IntN(4)
			taken := rng.IntN(2) == 0
			for j := i; j < min(i+n, len(free)); j++ {
				free[j] = !taken
			}
			i += n
		}
		frees[k] = free
	}
	var dst []int
	k := 0
	b.ReportAllocs()
	for b.Loop() {
		dst = bestSeats(dst, l, frees[k%len(frees)], 1+k%4, "std")
		k++
	}
}
