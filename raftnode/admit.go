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
// admit. A replica with nothing to admit sleeps until an entry is applied
// (a join), it becomes a ready leader, or admitQuietMax passes; a new
// leader proposes at once, without waiting for the next tick, since every
// moment without admissions after a leader loss is a moment fans wait.
func (g *Group) runAdmit() {
	defer g.wg.Done()
	cfg := g.node.cfg
	t := time.NewTicker(cfg.ExpireInterval)
	defer t.Stop()
	for {
		if !g.leaderReady() || !g.machine.RoomsWaiting() {
			if !g.sleepUntilApplied(admitQuietMax) {
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
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

// admitQuietMax bounds the admission driver's sleep on a replica with
// nothing to admit. A new leader's first entry wakes the driver, but
// possibly before the leader is ready (its barrier's future returns after
// the apply); the bound is how late the driver then notices, so it is
// kept short: a few wake-ups a second of an idle group cost little.
const admitQuietMax = 250 * time.Millisecond

// sleepUntilApplied waits until the next apply, leadership ready, d, or
// stop; false on stop.
func (g *Group) sleepUntilApplied(d time.Duration) bool {
	applied, closed := g.applied.wait()
	if closed {
		return false
	}
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
