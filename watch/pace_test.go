// This file proves a feed's rest between fan-outs (pace.go): half a
// round's CPU time while the show is quiet, longer while its seats change
// fast (fewer, larger rounds in a stampede), bounded either way; a first
// round, a few changes close together, or the writer's pace never
// count as busy, and a feed a full read behind keeps the quiet rest, so it
// cannot fall further behind with every round. A show that turns busy
// during a quiet rest (a stampede's first round) extends that rest to the
// busy rest, once, counted from the round's end, and pace waits it out.
package watch

import (
	"context"
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
		{"first round after a quiet spell rests half its CPU time", []round{
			{0, 100, ms(30), ms(30) / 2, false},
		}},
		{"quiet rest is bounded", []round{
			{0, 100, ms(250), feedRestMax, false},
		}},
		{"the issue's writer: a change every 55 ms stays quiet", []round{
			{0, 100, ms(40), ms(40) / 2, false},
			{ms(55), 101, ms(40), ms(40) / 2, false},
			{ms(110), 103, ms(40), ms(40) / 2, false}, // two in one round
			{ms(220), 105, ms(40), ms(40) / 2, false},
			{ms(440), 109, ms(40), ms(40) / 2, false}, // four, on a slow machine
		}},
		{"fewer than feedBusySeatsMin changes are not busy, however fast", []round{
			{0, 100, ms(1), ms(1) / 2, false},
			{ms(1), 100 + feedBusySeatsMin - 1, ms(1), ms(1) / 2, false},
		}},
		{"a stampede rests longer, bounded", []round{
			{0, 100, ms(30), ms(30) / 2, false},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor, false},
			{ms(400), 160, ms(80), feedBusyRestMax, false},
		}},
		{"a stampede slowed by a loaded machine is still busy", []round{
			{0, 100, ms(80), ms(80) / 2, false},
			{ms(1000), 140, ms(80), feedBusyRestMax, false},
		}},
		{"the writer's fastest: four changes 50 ms apart plus their calls", []round{
			{0, 100, ms(1), ms(1) / 2, false},
			{ms(160), 104, ms(1), ms(1) / 2, false},
		}},
		{"a busy feed behind by a full read rests the quiet rest", []round{
			{0, 100, ms(30), ms(30) / 2, false},
			{ms(70), 1000, ms(80), ms(80) / 2, true},
			{ms(250), 1300, ms(150), ms(75), true},
			{ms(500), 1400, ms(80), feedBusyRestMax, false},
		}},
		{"few watchers: a busy show's rest stays as small as the rounds", []round{
			{0, 100, ms(1), ms(1) / 2, false},
			{ms(10), 110, ms(1), ms(1) * feedBusyRestFactor, false},
		}},
		{"once the group calms down the rest is quiet again", []round{
			{0, 100, ms(30), ms(30) / 2, false},
			{ms(70), 110, ms(30), ms(30) * feedBusyRestFactor, false},
			{ms(2000), 115, ms(30), ms(30) / 2, false},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p roundPace
			var index uint64 // the last round's: the writer's seats come one an entry
			for i, r := range tc.rounds {
				records := 1
				if r.full {
					records = watchReadMax
				}
				// A seat per entry since the last round, as the writer's.
				seats := int(r.index - min(index, r.index))
				index = r.index
				start := t0.Add(r.at)
				if got := p.rest(r.cpu, start, start.Add(r.cpu), seats, records); got != r.want {
					t.Errorf("round %d (at %v, index %d, cpu %v): rest = %v, want %v", i, r.at, r.index, r.cpu, got, r.want)
				}
			}
		})
	}
}

func TestRoundPaceLateRest(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Unix(1000, 0)
	type round struct {
		at    time.Duration // the round's start, after t0; it takes cpu
		index uint64
		cpu   time.Duration
		full  bool
	}
	type check struct {
		at    time.Duration // after t0
		seats int           // the show's seat changes since the round
		want  time.Duration // the next round's earliest start, after t0; 0: the quiet rest stands
	}
	for _, tc := range []struct {
		name   string
		rounds []round
		checks []check
	}{
		{"a stampede's first round: busy within its quiet rest, the busy rest from its end", []round{
			{0, 100, ms(30), false},
		}, []check{
			{ms(60), 20, ms(30) + ms(30)*feedBusyRestFactor},
			{ms(70), 30, 0}, // asked once
		}},
		{"the late busy rest is bounded", []round{
			{0, 100, ms(80), false},
		}, []check{
			{ms(160), 40, ms(80) + feedBusyRestMax},
		}},
		{"a stampede slowed below the entry rate: its seats change fast", []round{
			{0, 100, ms(70), false},
		}, []check{
			{ms(150), 10, ms(70) + feedBusyRestMax},
		}},
		{"the issue's writer stays quiet", []round{
			{0, 100, ms(40), false},
		}, []check{
			{ms(80), 1, 0},
			{ms(170), 4, 0},
		}},
		{"the issue's writer stays quiet after a slow round", []round{
			{0, 100, ms(300), false},
		}, []check{
			{ms(600), 12, 0},
		}},
		{"fewer than feedBusySeatsMin seat changes are not busy, however fast", []round{
			{0, 100, ms(1), false},
		}, []check{
			{ms(2), feedBusySeatsMin - 1, 0},
		}},
		{"found busy long after the round: that rest is over already", []round{
			{0, 100, ms(30), false},
		}, []check{
			{ms(3000), 200, ms(30) + ms(30)*feedBusyRestFactor},
		}},
		{"after a busy rest nothing is late", []round{
			{0, 100, ms(30), false},
			{ms(70), 110, ms(30), false},
		}, []check{
			{ms(200), 30, 0},
		}},
		{"after a full read nothing is late: the feed is behind", []round{
			{0, 100, ms(30), false},
			{ms(70), 1000, ms(80), true},
		}, []check{
			{ms(200), 300, 0},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p roundPace
			var index uint64
			for _, r := range tc.rounds {
				records := 1
				if r.full {
					records = watchReadMax
				}
				start := t0.Add(r.at)
				p.rest(r.cpu, start, start.Add(r.cpu), int(r.index-min(index, r.index)), records)
				index = r.index
			}
			for i, c := range tc.checks {
				next, ok := p.lateRest(t0.Add(c.at), func() int { return c.seats })
				var got time.Duration
				if ok {
					got = next.Sub(t0)
				}
				if got != c.want || ok != (c.want != 0) {
					t.Errorf("check %d (at %v, %d seats): lateRest = %v after t0, %v; want %v", i, c.at, c.seats, got, ok, c.want)
				}
			}
		})
	}
}

// TestRoundPaceBusySeats: the show's own seat changes make the group busy
// however few entries carry them (group commit), while the issue's
// writer, a seat at a time, never does.
func TestRoundPaceBusySeats(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	t0 := time.Unix(1000, 0)
	type round struct {
		at    time.Duration
		index uint64
		seats int // changed since the last round
		cpu   time.Duration
		want  time.Duration
	}
	for _, tc := range []struct {
		name   string
		rounds []round
	}{
		{"a stampede slowed below the entry rate rests the busy rest", []round{
			{0, 100, 2, ms(70), ms(70) / 2},
			{ms(250), 104, 8, ms(70), feedBusyRestMax}, // 16 entries, 32 seats a second
		}},
		{"eight seats at once after a quiet spell rest half the round's CPU time", []round{
			{0, 100, 8, ms(30), ms(30) / 2},
		}},
		{"fewer than feedBusySeatsMin seats are not busy, however fast", []round{
			{0, 100, 1, ms(1), ms(1) / 2},
			{ms(10), 101, feedBusySeatsMin - 1, ms(1), ms(1) / 2},
		}},
		{"the issue's writer at its fastest: a seat every 50 ms", []round{
			{0, 100, 1, ms(1), ms(1) / 2},
			{ms(150), 103, 3, ms(1), ms(1) / 2},
			{ms(500), 110, 7, ms(1), ms(1) / 2},
			{ms(850), 118, 8, ms(1), ms(1) / 2}, // eight in 350 ms
			{ms(1300), 126, 8, ms(1), ms(1) / 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var p roundPace
			for i, r := range tc.rounds {
				start := t0.Add(r.at)
				if got := p.rest(r.cpu, start, start.Add(r.cpu), r.seats, 1); got != r.want {
					t.Errorf("round %d (at %v, index %d, %d seats): rest = %v, want %v", i, r.at, r.index, r.seats, got, r.want)
				}
			}
		})
	}
}

// TestPaceWaitsTheLateBusyRest: a feed whose group turned busy during its
// quiet rest does not fan out before the busy rest is over.
func TestPaceWaitsTheLateBusyRest(t *testing.T) {
	const cpu = 3 * time.Millisecond
	f := &feed{}
	start := time.Now()
	end := start.Add(cpu)
	f.nextRound = end.Add(f.rounds.rest(cpu, start, end, 1, 1))
	if err := f.pace(context.Background(), func() int { return 2 * feedBusySeatsMin }); err != nil {
		t.Fatal(err)
	}
	want := end.Add(cpu * feedBusyRestFactor)
	if !f.nextRound.Equal(want) {
		t.Errorf("nextRound = round's end + %v, want + %v", f.nextRound.Sub(end), want.Sub(end))
	}
	if now := time.Now(); now.Before(want) {
		t.Errorf("pace returned %v before the busy rest was over", want.Sub(now))
	}

	// A quiet group: pace returns once the quiet rest is over.
	f = &feed{}
	f.nextRound = end.Add(f.rounds.rest(cpu, start, end, 1, 1))
	if err := f.pace(context.Background(), func() int { return 1 }); err != nil {
		t.Fatal(err)
	}
	if want := end.Add(cpu / 2); !f.nextRound.Equal(want) {
		t.Errorf("quiet group: nextRound = round's end + %v, want + %v", f.nextRound.Sub(end), cpu/2)
	}
}
