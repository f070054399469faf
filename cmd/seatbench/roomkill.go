package main

import (
	"context"
	"encoding/json"
	"fmt"

	"net/http"
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
		st, err := e.roomThroughOthers(ctx, r.show, victim.ID)
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
		st, err := e.entryThroughOthers(ctx, r.show, f.entry, f.token, victim.ID)
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

// groupLeader is the node that leads group, as the nodes' /readyz say.
func (e *env) groupLeader(ctx context.Context, group uint32) (*proccluster.Node, error) {
	nodes := e.cluster.Nodes()
	for _, n := range nodes {
		leader, err := e.readyLeader(ctx, n, group)
		if err != nil || leader == "" {
			continue
		}
		for _, m := range nodes {
			if m.ID == leader || m.RaftAddr == leader {
				return m, nil
			}
		}
		return nil, fmt.Errorf("leader %q is none of the nodes", leader)
	}
	return nil, fmt.Errorf("no node names a leader of group %d", group)
}

// readyLeader reads the leader of group from n's /readyz.
func (e *env) readyLeader(ctx context.Context, n *proccluster.Node, group uint32) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cluster.HTTPURL(n, "/readyz"), nil)
	if err != nil {
		return "", err
	}
	resp, err := e.healthc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Groups []struct {
			ID     uint32 `json:"id"`
			Leader string `json:"leader"`
		} `json:"groups"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return "", err
	}
	for _, g := range h.Groups {
		if g.ID == group {
			return g.Leader, nil
		}
	}
	return "", nil
}

// entryThroughOthers reads an entry through the first node that is not
// skip.
func (e *env) entryThroughOthers(ctx context.Context, show, entry, token, skip string) (*ledgerpb.WaitingRoomEntry, error) {
	for i, n := range e.cluster.Nodes() {
		if n.ID == skip || i >= len(e.apis) {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		st, err := e.apis[i].GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: show, EntryId: entry, EntryToken: token})
		cancel()
		if err == nil {
			return st, nil
		}
	}
	return nil, fmt.Errorf("no other node answered")
}

// roomThroughOthers reads the room through the first node that is not
// skip (the first apis are one per node, in node order).
func (e *env) roomThroughOthers(ctx context.Context, show, skip string) (*ledgerpb.WaitingRoomStatus, error) {
	for i, n := range e.cluster.Nodes() {
		if n.ID == skip || i >= len(e.apis) {
			continue
		}
		ctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		st, err := e.apis[i].GetWaitingRoom(ctx, show)
		cancel()
		if err == nil {
			return st, nil
		}
	}
	return nil, fmt.Errorf("no other node answered")
}
