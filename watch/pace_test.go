// This file proves a feed's rest between fan-outs (pace.go): as long as a
// round's CPU time while the group is quiet, longer while it applies
// entries fast (fewer, larger rounds in a stampede), bounded either way;
// a first round, a few entries close together, or the writer's
// pace never count as busy.
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
	}
	for _, tc := range []struct {
		name   string
		rounds []round
	}{
		{"first round after a quiet spell goes by its CPU time", []round{
			{0, 100, ms(30), ms(30)},
		}},
		{"quiet rest is bounded", []round{
			{0, 100, ms(250), feedRestMax},
		}},
		{"the issue's writer: a change every 55 ms stays quiet", []round{
			{0, 100, ms(40), ms(40)},
			{ms(55), 101, ms(40), ms(40)},
			{ms(110), 103, ms(40), ms(40)}, // two in one round
			{ms(220), 105, ms(40), ms(40)},
			{ms(440), 109, ms(40), ms(40)}, // four, on a slow machine
		}},
		{"fewer than feedBusyEntriesMin entries are not busy, however fast", []round{
			{0, 100, ms(1), ms(1)},
			{ms(1), 103, ms(1), ms(1)},
		}},
		{"a stampede rests longer, bounded", []round{
			{0, 100, ms(30), ms(30)},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor},
			{ms(400), 160, ms(80), feedBusyRestMax},
		}},
		{"a stampede slowed by a loaded machine is still busy", []round{
			{0, 100, ms(80), ms(80)},
			{ms(1000), 140, ms(80), feedBusyRestMax},
		}},
		{"the writer's fastest: four changes 50 ms apart plus their calls", []round{
			{0, 100, ms(1), ms(1)},
			{ms(160), 104, ms(1), ms(1)},
		}},
		{"few watchers: a busy group's rest stays as small as the rounds", []round{
			{0, 100, ms(1), ms(1)},
			{ms(10), 105, ms(1), ms(1) * feedBusyRestFactor},
		}},
		{"once the group calms down the rest is quiet again", []round{
			{0, 100, ms(30), ms(30)},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor},
			{ms(2000), 115, ms(30), ms(30)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p roundPace
			for i, r := range tc.rounds {
				if got := p.rest(r.cpu, t0.Add(r.at), r.index); got != r.want {
					t.Errorf("round %d (at %v, index %d, cpu %v): rest = %v, want %v", i, r.at, r.index, r.cpu, got, r.want)
				}
			}
		})
	}
}
