package raftnode

import (
	"context"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// runAdmit is the leader's admission driver for the group's waiting rooms
// (fsm/waitroom.go). While an open room has waiting entries, the leader
// proposes Admit{upto: now} every ExpireInterval; the FSM admits at each
// room's rate by the log's time, so how often the driver proposes changes
// only how smoothly entries are admitted, never how many. Followers never
// admit: a follower sleeps until it becomes a ready leader or
// admitQuietMax passes. A leader with nothing to admit sleeps until an
// entry is applied (a join may have made a room wait) or admitQuietMax
// passes, and then until its next tick: under load entries are applied
// far more often than admissions are paced, and waking on each of them
// in every group was a visible share of a loaded node's CPU. A new leader
// proposes at once, without waiting for the next tick, since every moment
// without admissions after a leader loss is a moment fans wait.
func (g *Group) runAdmit() {
	defer g.wg.Done()
	cfg := g.node.cfg
	t := time.NewTicker(cfg.ExpireInterval)
	defer t.Stop()
	for {
		if !g.leaderReady() {
			if !g.sleepAdmit(nil, admitQuietMax) {
				return
			}
			continue
		}
		// The channel before the look: a join applied between the two
		// closes the channel taken, so no wake-up is lost.
		applied, closed := g.applied.wait()
		if closed {
			return
		}
		if !g.machine.RoomsWaiting() {
			if !g.sleepAdmit(applied, admitQuietMax) || !g.sleepTick(t) {
				return
			}
			continue
		}
		now := cfg.Now().UnixMilli()
		ctx, cancel := context.WithTimeout(context.Background(), proposeTimeout)
		res, err := g.Propose(ctx, &ledgerpb.Command{Op: &ledgerpb.Command_Admit{Admit: &ledgerpb.AdmitCmd{UptoMs: now, Limit: fsm.AdmitPerEntryDefault}}})
		cancel()
		if err != nil {
			g.log.Debug("admit proposal failed", "err", err)
		} else if res.Admitted > 0 {
			g.log.Debug("admitted room entries", "count", res.Admitted, "revision", res.Revision)
		}
		if !g.sleepTick(t) {
			return
		}
	}
}

// admitQuietMax bounds the admission driver's sleep on a replica with
// nothing to admit. A new leader wakes the driver (admitReady), but the
// bound is how late the driver notices should that wake-up be missed, so
// it is kept short: a few wake-ups a second of an idle group cost little.
const admitQuietMax = 250 * time.Millisecond

// sleepAdmit waits until applied is closed (nil: never), leadership is
// ready, d passes, or stop; false on stop.
func (g *Group) sleepAdmit(applied <-chan struct{}, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-g.stop:
		return false
	case <-applied:
	case <-g.admitReady:
	case <-timer.C:
	}
	return true
}

// sleepTick waits for t's next tick, or stop; false on stop.
func (g *Group) sleepTick(t *time.Ticker) bool {
	select {
	case <-g.stop:
		return false
	case <-t.C:
		return true
	}
}
