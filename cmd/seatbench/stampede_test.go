// This file proves the stampede's seat choice from a seat map: the free
// adjacent pair nearest the hall's centre, never a pair across two rows,
// held and booked seats skipped, seats a conflict named skipped (skip fans),
// a single seat when no pair is left, nothing when nothing is free.
package main

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seatMapOf reads a map written as rows A, B, ... separated by "/", one
// letter per seat (F free, H held, B booked): "FFHH/FFFF".
func seatMapOf(rows string) *ledgerpb.SeatMap {
	sm := &ledgerpb.SeatMap{}
	for r, states := range strings.Split(rows, "/") {
		row := string(rune('A' + r))
		for i := range len(states) {
			sm.Seats = append(sm.Seats, &ledgerpb.Seat{SeatId: row + strconv.Itoa(i+1), Row: row, Number: uint32(i + 1),
				State: fsm.SeatStateOfLetter(states[i])})
		}
	}
	return sm
}

func TestPickCentre(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		seats string
		taken []string   // named by a conflict (skip fans)
		want  [][]string // any one of these; none: nil
	}{
		{"FFFF/FFFF/FFFF", nil, [][]string{{"B2", "B3"}}},
		{"FFHHFFFF", nil, [][]string{{"A5", "A6"}}},
		{"HFFHFFFH", nil, [][]string{{"A5", "A6"}}},
		{"BBFFHH", nil, [][]string{{"A3", "A4"}}},
		{"FFFF/BBBB/FFFF/FFFF", nil, [][]string{{"C2", "C3"}}},
		{"FFFF/FHFF/FFFF", nil, [][]string{{"A2", "A3"}, {"B3", "B4"}, {"C2", "C3"}}},
		{"FFFFFFFF", nil, [][]string{{"A4", "A5"}}},
		{"FFFFFFFF", []string{"A5"}, [][]string{{"A3", "A4"}}},
		{"FFFF/FFFF/FFFF", []string{"B2"}, [][]string{{"A2", "A3"}, {"B3", "B4"}, {"C2", "C3"}}},
		{"FHFH", nil, [][]string{{"A3"}}},
		{"BBBF/FBBB/BBBB", nil, [][]string{{"B1"}}},
		{"BH", nil, nil},
		{"FF", []string{"A1", "A2"}, nil},
	} {
		sm := seatMapOf(c.seats)
		h := newHall(sm)
		taken := make([]bool, len(sm.Seats))
		for _, id := range c.taken {
			taken[h.index[id]] = true
		}
		got := h.pickCentre(sm, taken, rng)
		ok := got == nil && c.want == nil
		for _, want := range c.want {
			ok = ok || slices.Equal(got, want)
		}
		if ok {
			continue
		}
		name := c.seats
		if c.taken != nil {
			name += " taken " + strings.Join(c.taken, " ")
		}
		if len(c.want) == 1 {
			t.Errorf("pick(%s) = %v, want %v", name, got, c.want[0])
		} else {
			t.Errorf("pick(%s) = %v, want one of %v", name, got, c.want)
		}
	}
}

// TestPickCentreTies: fans who read the same map spread over the pairs
// nearest the centre instead of all asking for the first one.
func TestPickCentreTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sm := seatMapOf("FFFF/FHFF/FFFF")
	h := newHall(sm)
	seen := map[string]int{}
	for range 300 {
		seen[strings.Join(h.pickCentre(sm, make([]bool, len(sm.Seats)), rng), " ")]++
	}
	for _, want := range []string{"A2 A3", "B3 B4", "C2 C3"} {
		if seen[want] < 50 {
			t.Errorf("pick(FFFF/FHFF/FFFF) 300 times gave [%s] %d times, want about 100 (all: %v)", want, seen[want], seen)
		}
	}
}
