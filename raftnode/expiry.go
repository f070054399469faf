package raftnode

import (
	"context"
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
