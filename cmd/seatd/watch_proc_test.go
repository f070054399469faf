// This file proves live seat maps against three real seatd processes over
// HTTP only, with a real crash: the leader of the show's group serving an
// SSE watcher is killed with SIGKILL (no drain: its connections just break,
// maybe inside an event). The watcher resumes at another node with
// Last-Event-ID after writes it missed, and ends with every acknowledged
// write's revision seen exactly once, revisions strictly increasing, and the
// seat states of a linearizable seat map.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// procGroups keeps the process cluster small: two groups elect faster.
const procGroups = 2

// procWatch drives a process cluster over HTTP.
type procWatch struct {
	t      *testing.T
	c      *proccluster.Cluster
	urls   []string          // base URL per node, in node order
	tokens map[string]string // hold id -> hold token (one goroutine uses it)
}

func (p *procWatch) url(i int) string { return p.urls[i] }

// leaderOf returns the index of the node that leads group g, as every
// running node's /healthz reports it.
func (p *procWatch) leaderOf(g uint32, running []int) int {
	p.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		leaders := map[string]bool{}
		for _, i := range running {
			var h struct {
				Groups []struct {
					ID     uint32 `json:"id"`
					Leader string `json:"leader"`
				} `json:"groups"`
			}
			r := httpCall(p.t, "GET", p.url(i)+"/healthz", "")
			if err := json.Unmarshal([]byte(r.raw), &h); err != nil {
				p.t.Fatalf("GET /healthz: %v", err)
			}
			for _, gr := range h.Groups {
				if gr.ID == g {
					leaders[gr.Leader] = true
				}
			}
		}
		if len(leaders) == 1 {
			for id := range leaders {
				for i, n := range p.c.Nodes() {
					if n.ID == id && slices.Contains(running, i) {
						return i
					}
				}
			}
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("group %d: running nodes name leaders %v after %v, want one running leader", g, leaders, clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
}

// hold holds seats through node i and returns the hold id and revision.
func (p *procWatch) hold(i int, show, client string, seats ...string) (string, uint64) {
	p.t.Helper()
	body, _ := json.Marshal(map[string]any{"seat_ids": seats, "client_id": client, "request_id": "hold"})
	r := httpCall(p.t, "POST", p.url(i)+"/v1/shows/"+show+"/holds", string(body)).wantStatus(p.t, "POST holds", http.StatusOK)
	if p.tokens == nil {
		p.tokens = map[string]string{}
	}
	p.tokens[r.str("hold_id")] = r.str("hold_token")
	return r.str("hold_id"), p.revision(r)
}

// confirm and release are the test's only confirm and release calls (one
// place to change when they need more than the hold id).
func (p *procWatch) confirm(i int, show, client, holdID string) uint64 {
	p.t.Helper()
	body := fmt.Sprintf(`{"payment_ref":"pay","client_id":%q,"request_id":"confirm","hold_token":%q}`, client, p.tokens[holdID])
	return p.revision(httpCall(p.t, "POST", p.url(i)+"/v1/shows/"+show+"/holds/"+holdID+":confirm", body).wantStatus(p.t, "POST confirm", http.StatusOK))
}

func (p *procWatch) release(i int, show, client, holdID string) uint64 {
	p.t.Helper()
	url := fmt.Sprintf("%s/v1/shows/%s/holds/%s?client_id=%s&request_id=release&hold_token=%s", p.url(i), show, holdID, client, p.tokens[holdID])
	return p.revision(httpCall(p.t, "DELETE", url, "").wantStatus(p.t, "DELETE hold", http.StatusOK))
}

func (p *procWatch) revision(r httpResult) uint64 {
	p.t.Helper()
	rev, err := strconv.ParseUint(r.str("revision"), 10, 64)
	if err != nil || rev == 0 {
		p.t.Fatalf("response %s has no revision", r.raw)
	}
	return rev
}

// startWatchCluster builds seatd and starts three processes with fast
// raft timeouts, nodeArgs (may be nil) adding to a node's flags; the
// context bounds the test. Skipped with -short.
func startWatchCluster(t *testing.T, nodeArgs func(*proccluster.Node) []string) (context.Context, *proccluster.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	bin := filepath.Join(dir, "seatd")
	if err := proccluster.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	c, err := proccluster.Start(ctx, proccluster.Config{Binary: bin, Nodes: 3, Dir: dir, Groups: procGroups, AdminToken: testAdminToken,
		Args: []string{"--heartbeat-timeout", "300ms", "--election-timeout", "300ms"}, NodeArgs: nodeArgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return ctx, c
}

func TestWatchSSEAcrossLeaderSIGKILL(t *testing.T) {
	_, c := startWatchCluster(t, nil)
	p := &procWatch{t: t, c: c}
	for _, n := range c.Nodes() {
		p.urls = append(p.urls, "http://"+n.HTTPAddr)
	}

	const show = "watch-proc"
	body, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&ledgerpb.CreateShowRequest{Show: testShow(show)})
	if err != nil {
		t.Fatal(err)
	}
	httpCall(t, "POST", p.url(0)+"/v1/shows", string(body)).wantStatus(t, "POST /v1/shows", http.StatusOK)
	group := shard.Map{Groups: procGroups}.GroupFor(show)
	leader := p.leaderOf(group, []int{0, 1, 2})
	others := []int{(leader + 1) % 3, (leader + 2) % 3}
	w := startWatcher(t, p.urls, show, leader)
	w.waitRevision(1)

	var acked []uint64
	a, rev := p.hold(others[0], show, "alice", "A1", "A2")
	acked = append(acked, rev)
	b, rev := p.hold(others[1], show, "bob", "B1")
	acked = append(acked, rev, p.confirm(leader, show, "alice", a), p.release(others[0], show, "bob", b))
	w.waitRevision(acked[len(acked)-1])

	// SIGKILL the leader serving the watcher, then write while the watcher
	// is away: its resume must replay these.
	if err := c.Kill(c.Nodes()[leader].ID); err != nil {
		t.Fatal(err)
	}
	newLeader := p.leaderOf(group, others)
	for k := range 5 {
		id, rev := p.hold(others[k%2], show, fmt.Sprintf("c%d", k), fmt.Sprintf("C%d", k+1))
		acked = append(acked, rev)
		if k%2 == 0 {
			acked = append(acked, p.confirm(newLeader, show, fmt.Sprintf("c%d", k), id))
		}
	}
	close(w.offline)
	w.waitRevision(acked[len(acked)-1])
	_, rev = p.hold(others[0], show, "dave", "D1")
	acked = append(acked, rev)
	w.waitRevision(rev)

	r := httpCall(t, "GET", p.url(others[1])+"/v1/shows/"+show+"/seats", "").wantStatus(t, "GET seats", http.StatusOK)
	sm := &ledgerpb.SeatMap{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal([]byte(r.raw), sm); err != nil {
		t.Fatalf("GET seats: %v", err)
	}
	seen, servedBy := w.finish(sm)
	for _, rev := range acked {
		if !slices.Contains(seen, rev) {
			t.Errorf("acknowledged write at revision %d: no event (saw %v)", rev, seen)
		}
	}
	if len(seen) != len(acked) {
		t.Errorf("watcher saw %d change events %v, want one per acknowledged write: %v", len(seen), seen, acked)
	}
	if len(servedBy) < 2 || servedBy[0] != c.Nodes()[leader].ID || servedBy[len(servedBy)-1] == c.Nodes()[leader].ID {
		t.Errorf("watch served by %v, want first the killed leader %s, last another node", servedBy, c.Nodes()[leader].ID)
	}
}
