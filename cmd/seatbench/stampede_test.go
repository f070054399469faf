// This file proves the stampede's seat choice: the free adjacent pair
// nearest the hall's centre, seats named taken by a conflict skipped, a
// single seat when no pair is left, nothing when nothing is free.
package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// testHall is rows A.. of n seats, all FREE except those in sold.
func testHall(rows, n int, sold ...string) *ledgerpb.SeatMap {
	sm := &ledgerpb.SeatMap{}
	for r := range rows {
		for i := 1; i <= n; i++ {
			id := fmt.Sprintf("%c%d", 'A'+r, i)
			st := ledgerpb.SeatState_FREE
			if slices.Contains(sold, id) {
				st = ledgerpb.SeatState_BOOKED
			}
			sm.Seats = append(sm.Seats, &ledgerpb.Seat{SeatId: id, Row: string(rune('A' + r)), Number: uint32(i), State: st})
		}
	}
	return sm
}

func TestPickCentre(t *testing.T) {
	w := &worker{rng: rand.New(rand.NewPCG(1, 2))}
	for _, c := range []struct {
		name  string
		sm    *ledgerpb.SeatMap
		taken []string
		want  [][]string // any of these
	}{
		{"centre pair", testHall(3, 4), nil, [][]string{{"B2", "B3"}}},
		{"centre taken: a neighbour pair", testHall(3, 4), []string{"B3"}, [][]string{{"A2", "A3"}, {"C2", "C3"}, {"B1", "B2"}}},
		{"sold centre row", testHall(3, 4, "B1", "B2", "B3", "B4"), nil, [][]string{{"A2", "A3"}, {"C2", "C3"}}},
		{"no pair left: a single seat", testHall(1, 4, "A2", "A4"), nil, [][]string{{"A1"}, {"A3"}}},
		{"nothing free", testHall(1, 2, "A1"), []string{"A2"}, nil},
	} {
		h := newHall(c.sm)
		taken := make([]bool, len(c.sm.Seats))
		for _, id := range c.taken {
			taken[h.index[id]] = true
		}
		got := h.pickCentre(c.sm, taken, w)
		ok := got == nil && c.want == nil
		for _, want := range c.want {
			ok = ok || slices.Equal(got, want)
		}
		if !ok {
			t.Errorf("%s: pickCentre = %v, want one of %v", c.name, got, c.want)
		}
	}
}
