// This file proves a feed's rest between fan-outs (pace.go): as long as a
// round's CPU time while the group is quiet, longer while it applies
// entries fast (fewer, larger rounds in a stampede), bounded either way;
// a first round, a few entries close together, or the writer's
// pace never count as busy, and a feed a full read behind keeps the quiet
// rest, so it cannot fall further behind with every round.
package watch

import (
	"testing"
	"time"
)

func TestRoundPaceRest(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Unix(1000, 0)
	type round struct {
		at    time.Duration // the round's start, after t0
		index uint64        // published up to
		cpu   time.Duration
		want  time.Duration
		full  bool // the round carried a full read: more is waiting
	}
	for _, tc := range []struct {
		name   string
		rounds []round
	}{
		{"first round after a quiet spell goes by its CPU time", []round{
			{0, 100, ms(30), ms(30), false},
		}},
		{"quiet rest is bounded", []round{
			{0, 100, ms(250), feedRestMax, false},
		}},
		{"the issue's writer: a change every 55 ms stays quiet", []round{
			{0, 100, ms(40), ms(40), false},
			{ms(55), 101, ms(40), ms(40), false},
			{ms(110), 103, ms(40), ms(40), false}, // two in one round
			{ms(220), 105, ms(40), ms(40), false},
			{ms(440), 109, ms(40), ms(40), false}, // four, on a slow machine
		}},
		{"fewer than feedBusyEntriesMin entries are not busy, however fast", []round{
			{0, 100, ms(1), ms(1), false},
			{ms(1), 103, ms(1), ms(1), false},
		}},
		{"a stampede rests longer, bounded", []round{
			{0, 100, ms(30), ms(30), false},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor, false},
			{ms(400), 160, ms(80), feedBusyRestMax, false},
		}},
		{"a stampede slowed by a loaded machine is still busy", []round{
			{0, 100, ms(80), ms(80), false},
			{ms(1000), 140, ms(80), feedBusyRestMax, false},
		}},
		{"the writer's fastest: four changes 50 ms apart plus their calls", []round{
			{0, 100, ms(1), ms(1), false},
			{ms(160), 104, ms(1), ms(1), false},
		}},
		{"a busy feed behind by a full read rests the quiet rest", []round{
			{0, 100, ms(30), ms(30), false},
			{ms(70), 1000, ms(80), ms(80), true},
			{ms(250), 1300, ms(150), feedRestMax, true},
			{ms(500), 1400, ms(80), feedBusyRestMax, false},
		}},
		{"few watchers: a busy group's rest stays as small as the rounds", []round{
			{0, 100, ms(1), ms(1), false},
			{ms(10), 105, ms(1), ms(1) * feedBusyRestFactor, false},
		}},
		{"once the group calms down the rest is quiet again", []round{
			{0, 100, ms(30), ms(30), false},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor, false},
			{ms(2000), 115, ms(30), ms(30), false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p roundPace
			for i, r := range tc.rounds {
				records := 1
				if r.full {
					records = watchReadMax
				}
				if got := p.rest(r.cpu, t0.Add(r.at), r.index, records); got != r.want {
					t.Errorf("round %d (at %v, index %d, cpu %v): rest = %v, want %v", i, r.at, r.index, r.cpu, got, r.want)
				}
			}
		})
	}
}
