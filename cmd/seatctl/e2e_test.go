// This file proves seatctl against a real 3-node cluster of seatd processes
// (2 groups, every node hosting every group), running the command tree
// in-process: status sees every node up and every group led; shards lists
// both ranges; a show is created from a YAML file; a hold shows in the
// drawn seat map and a confirm books it; leadership moves to the node asked
// for; a follower's replica is removed and added back, and a replica moved
// to another node, with the group serving writes after; the digest check passes; and a stopped node shows
// down in status without failing it. A ticket verifies valid online until
// its booking is refunded, then not; offline it says it checks the
// signature only. A webhook added with seatctl receives a hold
// (webhook_e2e_test.go). A waiting room opens, gates holds and closes.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// e2eGroups is the cluster's group count: two groups keep the cluster
// small while status and shards still have more than one range to show.
const e2eGroups = 2

// e2eTimeout bounds the whole scenario, build included.
const e2eTimeout = 3 * time.Minute

const e2eShowYAML = `# a show file as an operator writes it
show_id: e2e-show
title: End to end
rows:
  - {name: A, seats: 12, category: std}
  - {name: B, seats: 12, category: std}
categories:
  - {name: std, price_minor: 1500, currency: EUR}
`

func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	dir := t.TempDir()
	c := startCluster(t, ctx, dir, proccluster.Config{})
	var eps []string
	for _, n := range c.Nodes() {
		eps = append(eps, n.GRPCAddr)
	}
	sc := &seatctl{t: t, ctx: ctx, endpoints: strings.Join(eps, ","), tokenFile: c.AdminTokenPath()}

	// Without the admin token, admin calls are refused, naming how to give it.
	if _, errOut, code := sc.runAs("", "status"); code != exitFailure || !strings.Contains(errOut, "admin token") {
		t.Fatalf("seatctl status without the admin token = exit %d, stderr %q; want exit 1 naming the admin token", code, errOut)
	} else if !strings.Contains(errOut, "--admin-token-file") || !strings.Contains(errOut, adminTokenEnv) {
		t.Errorf("seatctl status without the admin token: stderr %q, want the flag and the variable that give it", errOut)
	}
	// A node's HTTP port is not a gRPC endpoint: the hint says which is.
	httpAt := &seatctl{t: t, ctx: ctx, endpoints: c.Nodes()[0].HTTPAddr, tokenFile: c.AdminTokenPath()}
	if _, errOut, code := httpAt.run("--timeout", "2s", "status"); code != exitFailure || !strings.Contains(errOut, "--grpc address") {
		t.Errorf("seatctl status at the HTTP port = exit %d, stderr %q; want exit 1 with a hint to use the --grpc address", code, errOut)
	}
	v := sc.status()
	if len(v.Nodes) != 3 || len(v.Groups) != e2eGroups {
		t.Fatalf("status = %d nodes, %d groups; want 3, %d", len(v.Nodes), len(v.Groups), e2eGroups)
	}
	for _, n := range v.Nodes {
		if !n.Up || n.GRPCAddr == "" || n.RaftAddr == "" || n.Version == "" {
			t.Errorf("status: node %+v, want up with addresses and a version", n)
		}
	}
	for _, g := range v.Groups {
		if g.Leader == "" || len(g.Replicas) != 3 || len(g.Reports) != 3 {
			t.Errorf("status: group %d = leader %q, replicas %v; want a leader and 3 replicas", g.Group, g.Leader, g.Replicas)
		}
	}
	if out := sc.ok("status"); strings.Count(out, "  up  ") != 3 || !strings.Contains(out, "Leader") {
		t.Errorf("status table lacks 3 nodes up or a leader:\n%s", out)
	}
	if out := sc.ok("shards"); strings.Count(out, "n1,n2,n3") != e2eGroups || !strings.Contains(out, "00000000-7fffffff") {
		t.Errorf("shards table lacks the %d ranges:\n%s", e2eGroups, out)
	}

	showFile := filepath.Join(dir, "show.yaml")
	if err := os.WriteFile(showFile, []byte(e2eShowYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := sc.ok("show", "create", showFile); !strings.Contains(out, "created show e2e-show: 24 seats") {
		t.Fatalf("show create = %q", out)
	}
	holdID, token := sc.hold("A3", "A4")
	if out := sc.ok("seatmap", "e2e-show"); !strings.Contains(out, "A  ..hh........") || !strings.Contains(out, "held 2") {
		t.Fatalf("seat map does not show the hold of A3, A4:\n%s", out)
	}
	sc.ok("confirm", "e2e-show", holdID, "--client-id", "e2e", "--token", token, "--payment-ref", "pay-1")
	if out := sc.ok("seatmap", "e2e-show"); !strings.Contains(out, "A  ..XX........") || !strings.Contains(out, "booked 2") {
		t.Fatalf("seat map does not show A3, A4 booked:\n%s", out)
	}

	sc.verifyRefunded(holdID, token)
	sc.retries()               // retry_e2e_test.go
	sc.webhooks(dir)           // webhook_e2e_test.go
	sc.waitingRoom("e2e-show") // waitingroom_e2e_test.go

	group := shard.Map{Groups: e2eGroups}.GroupFor("e2e-show")
	sc.transferAndMove(group)
	sc.hold("B1") // the group serves writes after its membership changed
	if out := sc.ok("check", "digest"); strings.Count(out, " OK ") != e2eGroups {
		t.Fatalf("check digest is not OK for every group:\n%s", out)
	}

	if err := c.Stop("n3"); err != nil {
		t.Fatal(err)
	}
	v = sc.status()
	if n := v.node("n3"); n == nil || n.Up || v.node("n1") == nil || !v.node("n1").Up {
		t.Fatalf("status after stopping n3: nodes %+v, want n3 down and n1 up", v.Nodes)
	}
	if out := sc.ok("status"); !strings.Contains(out, "down") {
		t.Errorf("status table does not show n3 down:\n%s", out)
	}
}

// verifyRefunded checks a ticket of the confirmed booking holdID with
// ticket verify: valid online and offline; after a refund, not valid online
// (exit 1, the booking's state named), while offline still says valid but
// that it checked the signature only.
func (sc *seatctl) verifyRefunded(holdID, token string) {
	t := sc.t
	b := dialBooking(t, strings.Split(sc.endpoints, ",")[0])
	ctx, cancel := context.WithTimeout(sc.ctx, 30*time.Second)
	defer cancel()
	bk, err := b.GetBooking(ctx, &ledgerpb.GetBookingRequest{ShowId: "e2e-show", HoldId: holdID, HoldToken: token})
	if err != nil || len(bk.Tickets) == 0 {
		t.Fatalf("GetBooking(%s) = %v, %v; want its tickets", holdID, bk, err)
	}
	code := bk.Tickets[0].Code
	key, err := b.GetTicketKey(ctx, &ledgerpb.GetTicketKeyRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if out := sc.ok("ticket", "verify", code); tableValue(out, "valid") != "true" || tableValue(out, "booking_state") != "CONFIRMED" {
		t.Errorf("ticket verify (online) of a confirmed booking:\n%s\nwant valid true and CONFIRMED", out)
	}
	if _, err := b.Refund(ctx, &ledgerpb.RefundRequest{ShowId: "e2e-show", HoldId: holdID, HoldToken: token, ClientId: "e2e", RequestId: "e2e-refund"}); err != nil {
		t.Fatalf("Refund(%s) = %v", holdID, err)
	}
	out, errOut, exit := sc.run("ticket", "verify", code)
	if exit != exitFailure || tableValue(out, "valid") != "false" || !strings.Contains(errOut, "REFUNDED") {
		t.Errorf("ticket verify (online) of a refunded booking = exit %d\nstdout:\n%s\nstderr: %s\nwant exit 1, valid false, REFUNDED", exit, out, errOut)
	}
	if out := sc.ok("ticket", "verify", code, "--public-key", key.PublicKey); tableValue(out, "valid") != "true" || !strings.Contains(out, "signature only") {
		t.Errorf("ticket verify (offline) of a refunded booking:\n%s\nwant valid true and that it checked the signature only", out)
	}
	// The offline scanner's feed names the refunded booking, once.
	out = sc.ok("ticket", "revoked", "e2e-show")
	if !strings.Contains(out, "hold "+holdID+" ") || strings.Count(out, "hold ") != 1 || !strings.Contains(out, "more false") {
		t.Errorf("ticket revoked e2e-show:\n%s\nwant the refunded hold %s only", out, holdID)
	}
	next := ""
	for _, f := range strings.Fields(out[strings.Index(out, "next_revision"):]) {
		if f != "next_revision" {
			next = f
			break
		}
	}
	if out := sc.ok("ticket", "revoked", "e2e-show", "--after-revision", next); strings.Contains(out, "hold ") {
		t.Errorf("ticket revoked after its next_revision %s:\n%s\nwant none", next, out)
	}
}

// tableValue is the value of a key-value table's row key.
func tableValue(out, key string) string {
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key {
			return f[1]
		}
	}
	return ""
}

// transferAndMove moves group's leadership to a follower, removes another
// follower's replica and adds it back, then moves a replica between nodes.
func (sc *seatctl) transferAndMove(group uint32) {
	t := sc.t
	g := sc.status().group(group)
	var followers []string
	for _, r := range g.Replicas {
		if r != g.Leader {
			followers = append(followers, r)
		}
	}
	to := followers[0]
	if out := sc.ok("leader", "transfer", fmt.Sprint(group), "--to", to); !strings.Contains(out, "-> "+to) {
		t.Fatalf("leader transfer = %q, want the leader to move to %s", out, to)
	}
	if got := sc.status().group(group).Leader; got != to {
		t.Fatalf("after leader transfer the leader is %s, want %s", got, to)
	}
	f := followers[1] // with 3 nodes every node hosts every group: remove one, add it back
	if out := sc.ok("group", "remove-replica", fmt.Sprint(group), f); !strings.Contains(out, "step 2/2 drop") {
		t.Fatalf("remove-replica = %q", out)
	}
	if reps := sc.status().group(group).Replicas; slices.Contains(reps, f) || len(reps) != 2 {
		t.Fatalf("after remove-replica %s the replicas are %v", f, reps)
	}
	if out := sc.ok("group", "add-replica", fmt.Sprint(group), f); !strings.Contains(out, "step 2/2 add-voter") {
		t.Fatalf("add-replica = %q", out)
	}
	if reps := sc.status().group(group).Replicas; !slices.Contains(reps, f) || len(reps) != 3 {
		t.Fatalf("after add-replica %s the replicas are %v", f, reps)
	}
	// A move needs a node without a replica: make f one, move the old
	// leader's replica onto it, and give the old leader a replica again.
	old := g.Leader // a follower since the transfer
	sc.ok("group", "remove-replica", fmt.Sprint(group), f)
	out := sc.ok("group", "move-replica", fmt.Sprint(group), old, f)
	if !strings.Contains(out, "step 1/4 host") || !strings.Contains(out, "step 4/4 drop") {
		t.Fatalf("move-replica = %q, want host, add-voter, remove-voter, drop", out)
	}
	if reps := sc.status().group(group).Replicas; !slices.Contains(reps, f) || slices.Contains(reps, old) || len(reps) != 2 {
		t.Fatalf("after move-replica %s -> %s the replicas are %v", old, f, reps)
	}
	sc.ok("group", "add-replica", fmt.Sprint(group), old)
}

// seatctl runs seatctl commands in-process against one cluster.
type seatctl struct {
	t         *testing.T
	ctx       context.Context
	endpoints string
	tokenFile string   // the cluster's admin token
	flags     []string // more global flags (TLS)
}

// run runs one command line and returns its stdout, stderr and exit status.
func (sc *seatctl) run(args ...string) (string, string, int) {
	return sc.runAs(sc.tokenFile, args...)
}

// runAs runs seatctl with the admin token of tokenFile ("" for none).
func (sc *seatctl) runAs(tokenFile string, args ...string) (string, string, int) {
	var out, errOut bytes.Buffer
	args = append(append([]string{"--endpoints", sc.endpoints}, sc.flags...), args...)
	if tokenFile != "" {
		args = append([]string{"--admin-token-file", tokenFile}, args...)
	}
	code := run(sc.ctx, args, &out, &errOut, func(string) string { return "" })
	return out.String(), errOut.String(), code
}

// ok runs a command that must succeed and returns its stdout.
func (sc *seatctl) ok(args ...string) string {
	sc.t.Helper()
	out, errOut, code := sc.run(args...)
	if code != exitOK {
		sc.t.Fatalf("seatctl %s = exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, out, errOut)
	}
	return out
}

// status returns `seatctl status -o json`.
func (sc *seatctl) status() clusterView {
	sc.t.Helper()
	var v clusterView
	if err := json.Unmarshal([]byte(sc.ok("status", "-o", "json")), &v); err != nil {
		sc.t.Fatalf("status -o json: %v", err)
	}
	return v
}

// hold holds seats of e2e-show for client e2e and returns the hold id.
// hold holds seats of e2e-show and returns the hold's id and token.
func (sc *seatctl) hold(seats ...string) (string, string) {
	sc.t.Helper()
	out := sc.ok(append([]string{"hold", "e2e-show", "--client-id", "e2e", "-o", "json"}, seats...)...)
	var resp struct {
		HoldID    string `json:"hold_id"`
		HoldToken string `json:"hold_token"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.HoldID == "" || resp.HoldToken == "" {
		sc.t.Fatalf("hold -o json = %q (%v), want a hold_id and a hold_token", out, err)
	}
	return resp.HoldID, resp.HoldToken
}
