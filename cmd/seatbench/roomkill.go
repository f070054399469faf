package main

import (
	"context"
	"fmt"

	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// killLeader is the waitingroom workload's leader kill (--kill-leader): at
// when it SIGKILLs the seatd process that leads the room's group, then
// reads the room through the other nodes until the admitted count grows
// past the first count read after the kill: admissions resumed under a
// new leader (the first read may already include a new leader's first
// admissions, so this figure errs long). The figure checked is in the
// ledger's time: the earliest admitted_at after the kill among the
// sampled fans' entries up to that count (the nodes share this machine's
// clock; the gap to the next sampled place bounds the error). It then
// reads the
// sampled fans' places again (every one must be unchanged) and restarts
// the killed node.
func (r *waitingroom) killLeader(ctx context.Context, e *env, when time.Time) {
	time.Sleep(time.Until(when))
	groups := uint32(e.cfg.groups)
	if groups == 0 {
		groups = shard.GroupsDefault
	}
	group := shard.Map{Groups: groups}.GroupFor(r.show)
	victim, err := e.groupLeader(ctx, group)
	if err != nil {
		e.addCheck("leader_kill", false, "find the leader of group %d: %v", group, err)
		return
	}
	if err := e.cluster.Kill(victim.ID); err != nil {
		e.addCheck("leader_kill", false, "kill %s: %v", victim.ID, err)
		return
	}
	killedAt := time.Now()
	var first, last uint64
	seen := false
	for time.Since(killedAt) < 30*time.Second {
		st, err := throughOthers(ctx, e, victim.ID, 200*time.Millisecond, func(ctx context.Context, a api) (*ledgerpb.WaitingRoomStatus, error) {
			return a.GetWaitingRoom(ctx, r.show)
		})
		if err == nil && !seen {
			first, seen = st.Admitted, true
		} else if err == nil && st.Admitted > first {
			last = st.Admitted
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	observed := time.Since(killedAt)
	e.extra["leader_kill_node"] = victim.ID
	e.extra["leader_kill_to_admission_observed_s"] = secs(observed)
	// In the ledger's time: the earliest admission after the kill among
	// the sampled fans up to the count seen (the next sampled place
	// after the true first admission bounds the error).
	resumed := time.Duration(-1)
	for _, f := range r.fans {
		if f.place == 0 || f.place+uint64(e.cfg.admitRate) < first || f.place > last {
			continue
		}
		st, err := throughOthers(ctx, e, victim.ID, time.Second, func(ctx context.Context, a api) (*ledgerpb.WaitingRoomEntry, error) {
			return a.GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: r.show, EntryId: f.entry, EntryToken: f.token})
		})
		if err != nil || st.AdmittedAt == nil {
			continue
		}
		if d := st.AdmittedAt.AsTime().Sub(killedAt); d > 0 && (resumed < 0 || d < resumed) {
			resumed = d
		}
	}
	e.extra["leader_kill_to_admission_s"] = secs(resumed)
	e.addCheck("leader_kill_resume", seen && resumed >= 0 && resumed <= 2*time.Second,
		"the first admission after SIGKILL of %s, the leader of group %d, came %.3f s after it in the ledger's time (seen through the API after %.3f s; target <= 2 s)",
		victim.ID, group, resumed.Seconds(), observed.Seconds())

	before := map[string]uint64{}
	for _, f := range r.fans {
		if f.place > 0 {
			before[f.entry] = f.place
		}
	}
	r.readPlaces(ctx, e)
	changed, read := 0, 0
	for _, f := range r.fans {
		if p, ok := before[f.entry]; ok && f.place > 0 {
			read++
			if f.place != p {
				changed++
			}
		}
	}
	e.addCheck("leader_kill_places", changed == 0 && read > 0, "%d of %d sampled places read again after the kill, %d changed", read, len(before), changed)
	rctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := e.cluster.Restart(rctx, victim.ID); err != nil {
		e.addCheck("leader_kill_restart", false, "restart %s: %v", victim.ID, err)
	}
}

// groupLeader is the node that leads group, as the nodes' /healthz say.
func (e *env) groupLeader(ctx context.Context, group uint32) (*proccluster.Node, error) {
	nodes := e.cluster.Nodes()
	for _, n := range nodes {
		groups, err := e.healthGroups(ctx, n)
		if err != nil {
			continue
		}
		for _, g := range groups {
			if g.ID != group || g.Leader == "" {
				continue
			}
			for _, m := range nodes {
				if m.ID == g.Leader || m.RaftAddr == g.Leader {
					return m, nil
				}
			}
			return nil, fmt.Errorf("leader %q is none of the nodes", g.Leader)
		}
	}
	return nil, fmt.Errorf("no node names a leader of group %d", group)
}

// throughOthers calls fn with the api of each node but skip in turn (the
// first apis are one per node, in node order), each call bounded by
// timeout, until one succeeds.
func throughOthers[T any](ctx context.Context, e *env, skip string, timeout time.Duration, fn func(ctx context.Context, a api) (T, error)) (T, error) {
	var zero T
	for i, n := range e.cluster.Nodes() {
		if n.ID == skip || i >= len(e.apis) {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		v, err := fn(ctx, e.apis[i])
		cancel()
		if err == nil {
			return v, nil
		}
	}
	return zero, fmt.Errorf("no node but %s answered", skip)
}
