package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// recovery loads state (shows, with a share of their seats held and half of
// those confirmed), records each node's RSS, then SIGKILLs one node and
// times its restart: until it answers /healthz, until its replicas have
// applied everything the cluster had applied at the kill, and until it
// serves a hold.
type recovery struct {
	shows []string
}

// recoveryVictim is the node killed (index into the cluster's nodes).
const recoveryVictim = 1

func (r *recovery) mainCall() string { return "hold" }

func (r *recovery) setup(ctx context.Context, e *env) error {
	r.shows = make([]string, e.cfg.shows)
	for i := range r.shows {
		r.shows[i] = e.showID("rc", i)
	}
	start := time.Now()
	if err := e.createShows(ctx, r.shows, e.cfg.seats); err != nil {
		return err
	}
	e.extra["create_shows_s"] = fmt.Sprintf("%.1f", time.Since(start).Seconds())
	n := int(float64(e.cfg.seats) * e.cfg.fill)
	return e.parallel(ctx, len(r.shows), func(ctx context.Context, i int, a api) error {
		return occupy(ctx, e, a, r.shows[i], n, fmt.Sprintf("%s-setup-%d", e.cfg.prefix, i))
	})
}

func (r *recovery) run(ctx context.Context, e *env) time.Duration {
	start := time.Now()
	nodes := e.cluster.Nodes()
	victim := nodes[recoveryVictim]
	e.nodeRSS("rss_loaded_mib")
	applied, err := e.healthApplied(ctx, victim)
	if err != nil {
		e.addCheck("restart", false, "read /healthz before the kill: %v", err)
		return time.Since(start)
	}
	if err := e.cluster.Kill(victim.ID); err != nil {
		e.addCheck("restart", false, "kill %s: %v", victim.ID, err)
		return time.Since(start)
	}
	killed := time.Now()
	rctx, cancel := context.WithTimeout(ctx, e.cfg.duration)
	defer cancel()
	if err := e.cluster.Restart(rctx, victim.ID); err != nil {
		e.addCheck("restart", false, "restart %s: %v", victim.ID, err)
		return time.Since(start)
	}
	e.extra["restart_to_healthz_s"] = secs(time.Since(killed))
	if err := e.waitApplied(rctx, victim, applied); err != nil {
		e.addCheck("restart", false, "%s catching up: %v", victim.ID, err)
		return time.Since(start)
	}
	e.extra["restart_to_caught_up_s"] = secs(time.Since(killed))
	a := e.apis[recoveryVictim] // the first apis are one per node, in node order
	req := &ledgerpb.HoldRequest{ShowId: r.shows[len(r.shows)-1], SeatIds: []string{seatID((e.cfg.seats-1)/rowSeats, (e.cfg.seats-1)%rowSeats)},
		ClientId: e.cfg.prefix + "-after", RequestId: "r1"}
	err = e.stats.call("hold").run(rctx, func(ctx context.Context) error { _, err := a.Hold(ctx, req); return err })
	e.extra["restart_to_hold_s"] = secs(time.Since(killed))
	e.addCheck("restart", err == nil, "hold through the restarted node %s: %v", victim.ID, err)
	e.nodeRSS("rss_after_restart_mib")
	return time.Since(start)
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// groupHealth is a hosted group as a node's /healthz shows it.
type groupHealth struct {
	ID      uint32 `json:"id"`
	Leader  string `json:"leader"`
	Applied uint64 `json:"applied"`
}

// healthGroups reads a local node's groups from /healthz (over https on
// a --tls cluster).
func (e *env) healthGroups(ctx context.Context, n *proccluster.Node) ([]groupHealth, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cluster.HTTPURL(n, "/healthz"), nil)
	if err != nil {
		return nil, err
	}
	resp, err := e.healthc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var h struct {
		Groups []groupHealth `json:"groups"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		return nil, err
	}
	return h.Groups, nil
}

// healthApplied reads a local node's applied index per group.
func (e *env) healthApplied(ctx context.Context, n *proccluster.Node) (map[uint32]uint64, error) {
	groups, err := e.healthGroups(ctx, n)
	if err != nil {
		return nil, err
	}
	out := map[uint32]uint64{}
	for _, g := range groups {
		out[g.ID] = g.Applied
	}
	return out, nil
}

// waitApplied polls /healthz until every group has applied at least want.
func (e *env) waitApplied(ctx context.Context, n *proccluster.Node, want map[uint32]uint64) error {
	for {
		got, err := e.healthApplied(ctx, n)
		if err == nil {
			behind := false
			for g, idx := range want {
				behind = behind || got[g] < idx
			}
			if !behind {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("applied %v, want %v: %w", got, want, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *recovery) check(ctx context.Context, e *env) {}

// idle measures the CPU an idle local cluster uses: nothing is sent during
// the measured run.
type idle struct{}

// idleSettle lets elections and start-of-term barriers finish before the
// measurement.
const idleSettle = 3 * time.Second

func (idle) mainCall() string { return "" }

func (idle) setup(ctx context.Context, e *env) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(idleSettle):
		return nil
	}
}

func (idle) run(ctx context.Context, e *env) time.Duration {
	start := time.Now()
	select {
	case <-ctx.Done():
	case <-time.After(e.cfg.duration):
	}
	return time.Since(start)
}

func (idle) check(ctx context.Context, e *env) { e.nodeRSS("rss_mib") }
