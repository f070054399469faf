// This file proves the unavailability measure counts only time in which a
// show's writes waited unanswered: a show that went idle when its busy
// window ended (the seed-31 report's ~48 s after a kill-leader) measures
// its real wait, not the time until the cleanup after the run wrote to it;
// a wait through a fault measures from the fault to the first answer; a
// wait that ends without an answer ends at the next fault.
package runner

import (
	"testing"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
)

const sec = int64(time.Second)

// ms is d milliseconds in history time (ns).
func ms(d int64) int64 { return d * int64(time.Millisecond) }

// steady is a show's answered holds, one every 10 ms taking 5 ms each, over
// [from, to).
func steady(show string, from, to int64) []history.Op {
	var out []history.Op
	for t := from; t < to; t += ms(10) {
		out = append(out, history.Op{Kind: history.KindHold, Show: show, Call: t, Return: t + ms(5), Outcome: history.OK})
	}
	return out
}

// stalled is a show's holds that each retried for 2 s and failed
// UNAVAILABLE, back to back over [from, to).
func stalled(show string, from, to int64) []history.Op {
	var out []history.Op
	for t := from; t < to; t += 2 * sec {
		out = append(out, history.Op{Kind: history.KindHold, Show: show, Call: t, Return: min(t+2*sec, to),
			Outcome: history.Fail, Reason: "UNAVAILABLE"})
	}
	return out
}

func join(parts ...[]history.Op) []history.Op {
	var out []history.Op
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestUnavailability(t *testing.T) {
	killLeader := []history.Fault{{At: 10 * sec, Kind: NemKillLeader, Nodes: "n1"}, {At: 14 * sec, Kind: "heal"}}
	for _, tt := range []struct {
		name   string
		ops    []history.Op
		faults []history.Fault
		gap    time.Duration // want, within 50 ms
		show   string
		from   time.Duration
	}{{
		// The seed-31 shape: s1 is busy until 12 s and answers throughout;
		// the cleanup after the run leaves a queue entry of it at 60 s.
		// The old measure read 48 s here.
		name: "a show idle after its busy window",
		ops: join(steady("s1", 6*sec, 12*sec),
			[]history.Op{{Kind: history.KindLeave, Show: "s1", Call: 60 * sec, Return: 60*sec + ms(3), Outcome: history.OK}}),
		faults: killLeader,
		gap:    10 * time.Millisecond,
		show:   "s1",
		from:   10 * time.Second,
	}, {
		name:   "writes wait from the fault until the group elects a leader",
		ops:    join(steady("s1", 6*sec, 10*sec), stalled("s1", 10*sec, 10*sec+ms(700)), steady("s1", 10*sec+ms(700), 12*sec), steady("s2", 6*sec, 12*sec)),
		faults: killLeader,
		gap:    700 * time.Millisecond,
		show:   "s1",
		from:   10 * time.Second,
	}, {
		name: "a wait that is never answered ends at the next fault",
		ops:  join(steady("s1", 0, 3*sec), stalled("s1", 3*sec, 9*sec)),
		faults: []history.Fault{{At: 3 * sec, Kind: NemKillMinority, Nodes: "n2,n4"}, {At: 7 * sec, Kind: "heal"},
			{At: 8 * sec, Kind: NemDelay}, {At: 12 * sec, Kind: "heal"}},
		gap:  5 * time.Second,
		show: "s1",
		from: 3 * time.Second,
	}, {
		name: "an op of unknown outcome waits until its client gives up",
		ops: join(steady("s1", 0, 3*sec), []history.Op{{Kind: history.KindConfirm, Show: "s1", Call: 3 * sec, Outcome: history.Info}},
			steady("s1", 20*sec, 21*sec)),
		faults: []history.Fault{{At: 3 * sec, Kind: NemPauseLeader, Nodes: "n3"}, {At: 7 * sec, Kind: "heal"}},
		gap:    opDeadline,
		show:   "s1",
		from:   3 * time.Second,
	}, {
		name:   "reads do not count",
		ops:    []history.Op{{Kind: history.KindRead, Show: "s1", Call: 10 * sec, Return: 13 * sec, Outcome: history.OK}},
		faults: killLeader,
	}} {
		t.Run(tt.name, func(t *testing.T) {
			ws := Unavailability(&history.History{Ops: tt.ops, Faults: tt.faults})
			if len(ws) != 1 {
				t.Fatalf("Unavailability = %d windows, want 1 (one fault that stops writes)", len(ws))
			}
			w := ws[0]
			if d := w.Gap - tt.gap; d < -50*time.Millisecond || d > 50*time.Millisecond {
				t.Errorf("Gap = %v, want %v", w.Gap, tt.gap)
			}
			if w.Show != tt.show || w.From != tt.from {
				t.Errorf("worst wait = %q from %v, want %q from %v", w.Show, w.From, tt.show, tt.from)
			}
		})
	}
}
