package raftnode

import (
	"context"
	"math"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// runExpiry is the leader's expiry driver. Every ExpireInterval the leader
// reads the earliest expiry from its FSM (the expiry index is replicated
// state, so a new leader needs no rebuild) and, when holds are due by its
// clock, proposes Expire{upto: now}. The FSM caps upto at the log clock, and
// frees exactly the holds due by then. Followers never decide expiry.
//
// The same entry prunes seat change records past their retention; so that
// they are pruned in a group where no hold is ever due, the driver also
// proposes an Expire when the oldest record is old enough, checking every
// PruneCheckInterval (counted in ticks, so a skewed clock does not stall it)
// and every tick while a backlog remains.
func (g *Group) runExpiry() {
	defer g.wg.Done()
	cfg := g.node.cfg
	t := time.NewTicker(cfg.ExpireInterval)
	defer t.Stop()
	checkEvery := max(1, int(cfg.PruneCheckInterval/cfg.ExpireInterval))
	untilCheck := 0 // ticks until the next prune check
	for {
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
		if !g.leaderReady() {
			// A follower has nothing to drive: it sleeps until it leads
			// rather than waking every ExpireInterval (8 groups x 10
			// wake-ups a second were a visible share of an idle node).
			t.Stop()
			select {
			case <-g.stop:
				return
			case <-g.ready:
			}
			t.Reset(cfg.ExpireInterval)
			continue
		}
		now := cfg.Now().UnixMilli()
		prune := false
		if untilCheck--; untilCheck <= 0 {
			prune = g.eventsPrunable(now)
			untilCheck = checkEvery
			if prune {
				untilCheck = 1 // a backlog: look again next tick
			}
		}
		if !prune && !g.holdsDue(now) {
			untilCheck -= g.sleepQuiet(now, min(untilCheck, checkEvery)) // ticks slept
			continue
		}
		// One Expire in flight at a time; a full one is followed by the
		// next tick's.
		ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		res, err := g.Propose(ctx, &ledgerpb.Command{Op: &ledgerpb.Command_Expire{Expire: &ledgerpb.ExpireCmd{UptoMs: now, Limit: fsm.ExpirePerEntryDefault}}})
		cancel()
		if err != nil {
			g.log.Debug("expire proposal failed", "err", err)
		} else if res.Expired > 0 {
			g.log.Debug("expired holds", "count", res.Expired, "revision", res.Revision)
		}
	}
}

// holdsDue asks the FSM whether a hold is due; it opens a Pebble snapshot
// only when its in-memory bound says one may be, so idle groups stay cheap.
func (g *Group) holdsDue(now int64) bool {
	due, err := g.machine.ExpiryDue(now)
	if err != nil {
		g.log.Warn("expiry driver cannot read state", "err", err)
		return false
	}
	return due
}

// eventsPrunable asks the FSM whether a change record is past retention.
func (g *Group) eventsPrunable(now int64) bool {
	ok, err := g.machine.EventsPrunable(now)
	if err != nil {
		g.log.Warn("expiry driver cannot read the change log", "err", err)
		return false
	}
	return ok
}

// sleepQuiet lets a leader with no hold due skip ticks: it sleeps until
// the earliest live hold may be due, at most expireQuietMax and at most
// maxTicks ticks (the next prune check), and wakes early on any apply (a
// new hold may be due sooner). It returns how many ticks it slept. On an
// idle cluster the 8 leaders' 10 wake-ups a second were a measurable share
// of its CPU; under load an apply ends the sleep at once, so the driver
// keeps its ExpireInterval pace. The cap keeps expiry within a second of
// due even if the leader's clock jumps (the fault harness skews it).
func (g *Group) sleepQuiet(now int64, maxTicks int) int {
	interval := g.node.cfg.ExpireInterval
	bound := g.machine.ExpiryBound()
	if bound == math.MinInt64 || bound-now < interval.Milliseconds() || maxTicks <= 1 {
		return 0
	}
	d := min(expireQuietMax, time.Duration(maxTicks)*interval)
	if bound != math.MaxInt64 {
		d = min(d, time.Duration(bound-now)*time.Millisecond)
	}
	applied, closed := g.applied.wait()
	if closed {
		return 0
	}
	start := time.Now()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-g.stop:
	case <-applied:
	case <-timer.C:
	}
	return int(time.Since(start) / interval)
}
