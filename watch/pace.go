package watch

import (
	"context"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Between fan-outs a feed rests (pace): half the last round's CPU time,
// at most feedRestMax, while its show is quiet; feedBusyRestFactor
// times as long, at most feedBusyRestMax, while the show's seats change
// faster than feedBusySeatsPerSec.
const (
	// feedRestMax bounds a feed's rest while its show is quiet, and so
	// what the rest adds to a delivery. The quiet rest is half the
	// round's CPU: with 9,000 watchers a round takes 80-95 ms, and a
	// change that just missed one waits for its end, the rest and its own
	// round; resting the whole round's CPU put the writer's
	// delivery p99 at 223-287 ms, half of it at 197-240 ms (against 250),
	// for 3.8-4.0 µs of node CPU per event instead of 2.9-3.1 (against 8).
	feedRestMax = 100 * time.Millisecond
	// feedBusySeatsPerSec and feedBusySeatsMin: the show's own seat
	// changes from which it counts as busy, measured from one round's
	// start to the next's (or to the end of a quiet rest: lateRest) over
	// at least feedBusySeatsMin changes. A stampede changes hundreds of
	// seats a second. The writer changes one seat at a time, a
	// change every 50 ms at the very most: 8 take 350 ms, 23 a second.
	// The group's applied entries used to count too (30 a second over 4
	// entries), but a quiet show's group reaches that with the writer's
	// hold and release and the leader's own entries: 9,000 watchers of
	// the writer's show then waited out the busy rest in about half the
	// runs (delivery p99 712-831 ms against 198-254, max 914-997 ms; with
	// feedBusyRestMax cut to 300 ms the max fell to 271-394 ms).
	feedBusySeatsPerSec = 30
	feedBusySeatsMin    = 8
	// feedBusyRestFactor and feedBusyRestMax: a busy show's feed rests
	// this many times its round's CPU time, at most feedBusyRestMax, so
	// its rounds take at most about a seventeenth of a core from the
	// holds, and a change still reaches the watchers within about a
	// second (seed 004 asks for 2-3).
	feedBusyRestFactor = 16
	feedBusyRestMax    = 800 * time.Millisecond
)

// roundPace is what a feed's rest depends on: where and when its last
// round started, and what it cost. The feed goroutine's own.
type roundPace struct {
	start time.Time     // when the last round started; zero: none yet
	end   time.Time     // when the last round ended
	cpu   time.Duration // its CPU time
	// late: the last round rested the quiet rest though it did not carry
	// a full read, so the show may still turn out busy before the next
	// (lateRest).
	late bool
}

// rest returns the rest after a round that took cpu, started at start
// and ended at end, with seats seat changes (those since the last round,
// which read up to there). Each round costs a write to every watcher
// whatever it carries, so while the show is busy (a stampede), fewer and
// larger rounds leave the cores to the holds; after a quiet spell a
// change goes out at once, and at the pace of changes each goes
// out in its own round. A round of a full read (records, as many as one
// read takes) has more waiting: it rests the quiet rest, so that a show
// changing faster than a full read per busy rest does not leave its feed
// further behind with every round.
func (p *roundPace) rest(cpu time.Duration, start, end time.Time, seats, records int) time.Duration {
	busy := p.busy(seats, start)
	full := records >= watchReadMax
	p.start, p.end, p.cpu = start, end, cpu
	p.late = !busy && !full
	if busy && !full {
		return p.busyRest()
	}
	return min(cpu/2, feedRestMax)
}

// lateRest returns when the next round may start if the show turned out
// busy after the last round started: by now seats changes of its seats
// wait for the next round (pending asks). The first round of a burst
// finds the show quiet and rests the quiet rest; a stampede shows itself
// within that rest by changing tens of seats, and a round now would cost
// the watchers' write as much as any, so the rest becomes the busy rest
// after all, counted from the round's end as ever. ok is false when the quiet rest stands:
// the show is still quiet, or the last round's rest was already decided
// (busy, a full read, or this asked already).
func (p *roundPace) lateRest(now time.Time, pending func() (seats int)) (next time.Time, ok bool) {
	if !p.late {
		return time.Time{}, false
	}
	p.late = false
	if !p.busy(pending(), now) {
		return time.Time{}, false
	}
	return p.end.Add(p.busyRest()), true
}

// busy reports whether the show's seats changed fast since the last
// round started: seats changes by at. A first round is never busy.
func (p *roundPace) busy(seats int, at time.Time) bool {
	return !p.start.IsZero() && seats >= feedBusySeatsMin &&
		float64(seats) >= feedBusySeatsPerSec*at.Sub(p.start).Seconds()
}

func (p *roundPace) busyRest() time.Duration {
	return min(feedBusyRestFactor*p.cpu, feedBusyRestMax)
}

// pace waits, before a fan-out, until the last one's rest is over. A
// feed of many watchers whose show changes without pause then spends at
// most about two thirds of a core on them (a seventeenth while the show is
// busy), and the changes that arrive meanwhile go out together, in one
// write to each watcher; a change after a quiet spell goes out at once.
// pending returns the seat changes of the show waiting for the round:
// once the quiet rest is over, a show that turned busy meanwhile extends
// it to the busy rest.
func (f *feed) pace(ctx context.Context, pending func() (seats int)) error {
	for {
		wait := time.Until(f.nextRound)
		if wait <= 0 {
			now := time.Now()
			next, ok := f.rounds.lateRest(now, pending)
			if !ok || !next.After(now) {
				return nil
			}
			f.nextRound, wait = next, next.Sub(now)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// seatChanges counts the seat changes events carry.
func seatChanges(events []*ledgerpb.WatchEvent) (n int) {
	for _, e := range events {
		n += len(e.Changes)
	}
	return n
}
