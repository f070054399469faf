// This file proves the cluster's life with real seatd processes, under a
// load of holds, confirms and releases sent to several nodes, as
// docs/OPERATIONS.md walks through it: a 3-node cluster (4 groups) grows to 4
// and 5 nodes (seatctl node add, seatd serve --join, seatctl group
// rebalance moves replicas onto each new node), shrinks back to 3 by
// draining and removing two of the original nodes (seatctl node remove
// --drain), and a removed node restarted refuses to serve. Leadership is
// spread (no node leads every group) and comes back to a node that was
// stopped and restarted. Then the load stops, seatctl snapshot save writes a
// backup and seatd restore seeds a fresh 3-node cluster from it.
//
// Throughout, clients saw only retryable errors (UNAVAILABLE, NOT_LEADER,
// OUTCOME_UNKNOWN: retried with the same request id) besides the ledger's
// own answers (seats taken, a short hold expired). On the shrunk cluster and
// on the restored one, every acknowledged confirm is CONFIRMED with its
// seats BOOKED, every acknowledged release CANCELLED, and every other
// acknowledged hold still HELD with its seats, or EXPIRED only once its
// expiry passed; seatctl check digest is OK on both, and the restored
// cluster's registry is its own nodes.
package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The cluster-life scenario's shape.
const (
	lifeGroups  = 4
	lifeWorkers = 6
	// lifeRows x lifeSeatsPerRow seats per show, one show per group.
	lifeRows        = "ABCDEFGHIJKLMNOPQRST"
	lifeSeatsPerRow = 50
	// lifeShortTTL is the TTL of one hold in ten: some expire during the run.
	lifeShortTTL = 2 * time.Second
	lifeLongTTL  = 10 * time.Minute
	// lifeRetryMax bounds how long a client retries one request.
	lifeRetryMax = 30 * time.Second
	// lifeTimeout bounds the whole scenario, builds included.
	lifeTimeout = 4 * time.Minute
)

// lifeArgs make elections quick, as the fault harness runs them.
var lifeArgs = []string{"--heartbeat-timeout", "300ms", "--election-timeout", "300ms"}

func TestClusterLife(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), lifeTimeout)
	defer cancel()
	dir := t.TempDir()
	r := &lifeRun{t: t, ctx: ctx, dir: dir, bin: seatdBinary(t)}
	c, err := proccluster.Start(ctx, proccluster.Config{Binary: r.bin, Nodes: 3, Dir: filepath.Join(dir, "old"), Groups: lifeGroups, Args: lifeArgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.c, r.sc = c, clusterCtl(t, ctx, c)
	r.load = newLifeLoad(t, lifeShows(t, r.sc, dir), c.Nodes())
	loadCtx, stopLoad := context.WithCancel(ctx)
	defer stopLoad()
	r.load.start(loadCtx)
	r.load.waitAcked(t, ctx, 20)

	r.grow("n4")
	r.grow("n5")
	r.shrink("n1")
	r.shrink("n2")
	r.checkShrunk()
	refuseRemoved(t, ctx, c, "n1")
	r.leadership()

	stopLoad()
	r.load.wait()
	r.load.report(t)
	if out := r.sc.ok("check", "digest"); strings.Count(out, " OK ") != lifeGroups {
		t.Fatalf("check digest after the shrink is not OK for every group:\n%s", out)
	}
	r.load.verify(t, ctx, dialBooking(t, c.Node("n5").GRPCAddr), "the shrunk cluster")
	r.backupRestore()
}

// lifeRun is the scenario's state: the cluster, seatctl against its live
// nodes, and the load.
type lifeRun struct {
	t        *testing.T
	ctx      context.Context
	dir, bin string
	c        *proccluster.Cluster
	sc       *seatctl
	load     *lifeLoad
}

// grow adds node id under load: node add, seatd serve --join, rebalance.
func (r *lifeRun) grow(id string) {
	t, sc := r.t, r.sc
	before := r.load.acked()
	n, err := r.c.AddNode(id)
	if err != nil {
		t.Fatal(err)
	}
	if out := sc.ok("node", "add", id, "--raft", n.RaftAddr, "--grpc", n.GRPCAddr); !strings.Contains(out, "seatd serve --id "+id) {
		t.Fatalf("node add %s printed no start command:\n%s", id, out)
	}
	if err := r.c.Restart(r.ctx, id); err != nil {
		t.Fatal(err)
	}
	r.load.setEndpoints(r.c, "")
	sc.endpoints = liveEndpoints(r.c)
	out := sc.ok("group", "rebalance")
	t.Logf("seatctl group rebalance (with %s):\n%s", id, planLines(out))
	if v := sc.status(); replicasOn(v, id) < 2 {
		t.Fatalf("after rebalance %s hosts %d replicas, want at least 2:\n%s", id, replicasOn(v, id), sc.ok("shards"))
	}
	if again := sc.ok("group", "rebalance"); !strings.Contains(again, "nothing to move") {
		t.Fatalf("a second rebalance planned moves:\n%s", again)
	}
	r.load.waitAcked(t, r.ctx, before+10)
}

// shrink drains and removes node id under load, then stops it: the
// machine retires. Plain remove is refused while it hosts replicas.
func (r *lifeRun) shrink(id string) {
	t, sc := r.t, r.sc
	before := r.load.acked()
	if _, errOut, code := sc.run("node", "remove", id); code != exitFailure || !strings.Contains(errOut, "--drain") {
		t.Fatalf("node remove %s while it hosts replicas = exit %d, stderr %q; want a refusal naming --drain", id, code, errOut)
	}
	out := sc.ok("node", "remove", id, "--drain")
	t.Logf("seatctl node remove %s --drain:\n%s", id, planLines(out))
	r.load.setEndpoints(r.c, id)
	if err := r.c.Stop(id); err != nil {
		t.Fatal(err)
	}
	sc.endpoints = liveEndpoints(r.c)
	r.load.waitAcked(t, r.ctx, before+10)
}

// checkShrunk checks the replicas and the registry after the shrink.
func (r *lifeRun) checkShrunk() {
	for _, g := range r.sc.status().Groups {
		if !slices.Equal(g.Replicas, []string{"n3", "n4", "n5"}) {
			r.t.Errorf("group %d replicas %v after the shrink, want n3,n4,n5", g.Group, g.Replicas)
		}
	}
	if out := r.sc.ok("node", "list"); strings.Count(out, " removed ") != 2 || strings.Count(out, " active ") != 3 {
		r.t.Errorf("node list after the shrink:\n%s\nwant n1, n2 removed and n3, n4, n5 active", out)
	}
}

// leadership checks that leaders are spread, and that a node stopped and
// restarted under load leads again.
func (r *lifeRun) leadership() {
	t, sc := r.t, r.sc
	waitLeaders(t, r.ctx, sc, "no node leads every group", func(leads map[string]int) bool {
		return len(leads) > 1
	})
	before := r.load.acked()
	if err := r.c.Stop("n4"); err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, r.ctx, sc, "n3 and n5 lead every group while n4 is down", func(leads map[string]int) bool {
		return leads["n3"]+leads["n5"] == lifeGroups
	})
	if err := r.c.Restart(r.ctx, "n4"); err != nil {
		t.Fatal(err)
	}
	waitLeaders(t, r.ctx, sc, "n4 leads again after it returned", func(leads map[string]int) bool {
		return leads["n4"] > 0 && leads["n3"] > 0 && leads["n5"] > 0
	})
	r.load.waitAcked(t, r.ctx, before+10)
}

// backupRestore saves a backup of the stopped load's cluster, restores it
// into a fresh 3-node cluster and checks it there.
func (r *lifeRun) backupRestore() {
	t, ctx := r.t, r.ctx
	file := filepath.Join(r.dir, "cluster.backup")
	t.Logf("seatctl snapshot save:\n%s", r.sc.ok("snapshot", "save", file))
	if err := r.c.Close(); err != nil {
		t.Logf("stopping the old cluster: %v", err)
	}
	fresh, err := proccluster.Start(ctx, proccluster.Config{Binary: r.bin, Nodes: 3, Dir: filepath.Join(r.dir, "new"), Groups: lifeGroups, Args: lifeArgs,
		Prepare: func(nc *proccluster.Cluster) error { return restoreAll(ctx, r.bin, file, nc) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	sc := clusterCtl(t, ctx, fresh)
	if out := sc.ok("check", "digest"); strings.Count(out, " OK ") != lifeGroups {
		t.Fatalf("check digest after the restore is not OK for every group:\n%s", out)
	}
	var reg ledgerpb.NodeList
	if err := protojson.Unmarshal([]byte(sc.ok("node", "list", "-o", "json")), &reg); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, n := range reg.Nodes {
		ids = append(ids, n.NodeId+"="+stateName(n.State)+"@"+n.GrpcAddr)
	}
	var want []string
	for _, n := range fresh.Nodes() {
		want = append(want, n.ID+"=active@"+n.GRPCAddr)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("restored cluster's registry = %v, want its own nodes %v", ids, want)
	}
	r.load.verify(t, ctx, dialBooking(t, fresh.Node("n2").GRPCAddr), "the restored cluster")
}

// lifeShows creates one show per group and returns their ids.
func lifeShows(t *testing.T, sc *seatctl, dir string) []string {
	var rows strings.Builder
	for _, r := range lifeRows {
		fmt.Fprintf(&rows, "  - {name: %c, seats: %d, category: std}\n", r, lifeSeatsPerRow)
	}
	shows := showPerGroup(lifeGroups)
	for _, show := range shows {
		yaml := fmt.Sprintf("show_id: %s\ntitle: Cluster life\nrows:\n%scategories:\n  - {name: std, price_minor: 1000, currency: EUR}\n", show, rows.String())
		file := filepath.Join(dir, show+".yaml")
		if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		sc.ok("show", "create", file)
	}
	return shows
}

// liveEndpoints is the gRPC addresses of the running nodes.
func liveEndpoints(c *proccluster.Cluster) string {
	var eps []string
	for _, n := range c.Nodes() {
		if c.Running(n.ID) {
			eps = append(eps, n.GRPCAddr)
		}
	}
	return strings.Join(eps, ",")
}

// planLines keeps a command's plan and move lines, not every step.
func planLines(out string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "step ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// replicasOn counts the groups whose configuration names node.
func replicasOn(v clusterView, node string) int {
	n := 0
	for _, g := range v.Groups {
		if slices.Contains(g.Replicas, node) {
			n++
		}
	}
	return n
}

// refuseRemoved restarts a removed node and waits for it to exit with the
// registry's verdict.
func refuseRemoved(t *testing.T, ctx context.Context, c *proccluster.Cluster, id string) {
	t.Helper()
	// It may answer /healthz before it has read the registry, or exit
	// first: either way it must end up stopped.
	c.Restart(ctx, id)
	deadline := time.Now().Add(20 * time.Second)
	for c.Running(id) {
		if time.Now().After(deadline) {
			t.Fatalf("removed node %s restarted and still runs after 20s", id)
		}
		time.Sleep(100 * time.Millisecond)
	}
	log, _ := os.ReadFile(c.Node(id).LogPath)
	if !strings.Contains(string(log), "refusing to serve") || !strings.Contains(string(log), "retired") {
		t.Fatalf("removed node %s stopped without saying why; its log ends:\n%s", id, tail(string(log), 1500))
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// waitLeaders polls status until ok accepts the leaders per node.
func waitLeaders(t *testing.T, ctx context.Context, sc *seatctl, what string, ok func(map[string]int) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		leads := map[string]int{}
		for _, g := range sc.status().Groups {
			if g.Leader != "" {
				leads[g.Leader]++
			}
		}
		if ok(leads) {
			t.Logf("%s: leaders %v", what, leads)
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("%s: not after 30s, leaders %v", what, leads)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// restoreAll runs seatd restore for every node of a new cluster.
func restoreAll(ctx context.Context, bin, file string, c *proccluster.Cluster) error {
	for _, n := range c.Nodes() {
		cmd := exec.CommandContext(ctx, bin, "restore", "--from", file, "--id", n.ID, "--data-dir", n.DataDir,
			"--peers", c.PeersFlag(), "--groups", fmt.Sprint(lifeGroups))
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("seatd restore %s: %v\n%s", n.ID, err, out)
		}
	}
	return nil
}

// lifeHold is a hold the load made, and what it did with it.
type lifeHold struct {
	show, id, token, client string
	seats                   []string
	expires                 time.Time
	short                   bool
	// confirm and release: "" not tried, "acked", "refused" (a definite
	// answer other than OK), "unknown" (no answer before the load stopped
	// or its retries ran out).
	confirm, release string
}

// lifeLoad is the background load: workers hold random seats of the shows,
// confirm half of their holds and release some, through the live nodes.
type lifeLoad struct {
	t     *testing.T
	shows []string
	wg    sync.WaitGroup
	count atomic.Int64 // acknowledged holds, confirms and releases

	mu struct {
		sync.Mutex
		endpoints  []string
		conns      map[string]*grpc.ClientConn
		holds      []*lifeHold
		retried    map[string]int // reason -> retryable errors seen
		unexpected []string
	}
}

func newLifeLoad(t *testing.T, shows []string, nodes []*proccluster.Node) *lifeLoad {
	l := &lifeLoad{t: t, shows: shows}
	l.mu.conns = map[string]*grpc.ClientConn{}
	l.mu.retried = map[string]int{}
	for _, n := range nodes {
		l.mu.endpoints = append(l.mu.endpoints, n.GRPCAddr)
	}
	t.Cleanup(func() {
		for _, c := range l.mu.conns {
			c.Close()
		}
	})
	return l
}

// setEndpoints points the load at the running nodes but one about to stop
// ("" for none), as a load balancer is told before a machine retires.
func (l *lifeLoad) setEndpoints(c *proccluster.Cluster, leaving string) {
	var eps []string
	for _, n := range c.Nodes() {
		if c.Running(n.ID) && n.ID != leaving {
			eps = append(eps, n.GRPCAddr)
		}
	}
	l.mu.Lock()
	l.mu.endpoints = eps
	l.mu.Unlock()
}

func (l *lifeLoad) acked() int64 { return l.count.Load() }

// waitAcked waits until the load has n acknowledged operations.
func (l *lifeLoad) waitAcked(t *testing.T, ctx context.Context, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for l.acked() < n {
		if time.Now().After(deadline) || ctx.Err() != nil {
			t.Fatalf("the load made %d acknowledged operations, want %d within 30s (unexpected errors: %v)", l.acked(), n, l.unexpectedErrors())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (l *lifeLoad) start(ctx context.Context) {
	for w := range lifeWorkers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano())))
			for seq := 0; ctx.Err() == nil; seq++ {
				l.one(ctx, r, fmt.Sprintf("life-w%d-%d", w, seq))
				time.Sleep(time.Duration(10+r.IntN(30)) * time.Millisecond)
			}
		}()
	}
}

func (l *lifeLoad) wait() { l.wg.Wait() }

// one makes a hold and then maybe confirms or releases it.
func (l *lifeLoad) one(ctx context.Context, r *rand.Rand, client string) {
	h := &lifeHold{show: l.shows[r.IntN(len(l.shows))], client: client, short: r.IntN(10) == 0}
	for len(h.seats) < 1+r.IntN(2) {
		s := fmt.Sprintf("%c%d", lifeRows[r.IntN(len(lifeRows))], 1+r.IntN(lifeSeatsPerRow))
		if !slices.Contains(h.seats, s) {
			h.seats = append(h.seats, s)
		}
	}
	ttl := lifeLongTTL
	if h.short {
		ttl = lifeShortTTL
	}
	var resp *ledgerpb.HoldResponse
	verdict := l.call(ctx, r, "hold", func(ctx context.Context, c ledgerpb.BookingClient) (err error) {
		resp, err = c.Hold(ctx, &ledgerpb.HoldRequest{ShowId: h.show, SeatIds: h.seats, ClientId: client,
			RequestId: client + "-hold", TtlSeconds: uint32(ttl / time.Second)})
		return err
	}, "SEATS_TAKEN")
	if verdict != "acked" {
		return
	}
	h.id, h.token, h.expires = resp.HoldId, resp.HoldToken, resp.ExpiresAt.AsTime()
	l.count.Add(1)
	l.mu.Lock()
	l.mu.holds = append(l.mu.holds, h)
	l.mu.Unlock()
	expired := []string{}
	if h.short {
		expired = []string{"HOLD_EXPIRED"} // its payment came too late
	}
	switch x := r.IntN(20); {
	case x < 10:
		v := l.call(ctx, r, "confirm", func(ctx context.Context, c ledgerpb.BookingClient) error {
			_, err := c.Confirm(ctx, &ledgerpb.ConfirmRequest{ShowId: h.show, HoldId: h.id, PaymentRef: "pay-" + client,
				ClientId: client, RequestId: client + "-confirm", HoldToken: h.token})
			return err
		}, expired...)
		l.settle(h, &h.confirm, v)
	case x < 13:
		v := l.call(ctx, r, "release", func(ctx context.Context, c ledgerpb.BookingClient) error {
			_, err := c.Release(ctx, &ledgerpb.ReleaseRequest{ShowId: h.show, HoldId: h.id, ClientId: client,
				RequestId: client + "-release", HoldToken: h.token})
			return err
		}, expired...)
		l.settle(h, &h.release, v)
	}
}

// settle records a confirm's or release's verdict.
func (l *lifeLoad) settle(h *lifeHold, field *string, verdict string) {
	if verdict == "acked" {
		l.count.Add(1)
	}
	l.mu.Lock()
	*field = verdict
	l.mu.Unlock()
}

// call sends one request, retrying retryable errors with the same request
// id at the next live node; allowed names the ledger's answers that are
// not errors of the cluster. It returns "acked", "refused" or "unknown".
func (l *lifeLoad) call(ctx context.Context, r *rand.Rand, what string, f func(context.Context, ledgerpb.BookingClient) error, allowed ...string) string {
	deadline := time.Now().Add(lifeRetryMax)
	for attempt := r.IntN(8); ; attempt++ {
		c, ep := l.client(attempt)
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(actx, c)
		cancel()
		if err == nil {
			return "acked"
		}
		if ctx.Err() != nil {
			return "unknown" // the load is stopping
		}
		code, reason := status.Code(err), reasonOf(err)
		if code == codes.Unavailable || code == codes.DeadlineExceeded {
			l.mu.Lock()
			l.mu.retried[fmt.Sprintf("%s %v %s", what, code, reason)]++
			l.mu.Unlock()
			if time.Now().After(deadline) {
				return "unknown"
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if slices.Contains(allowed, reason) {
			return "refused"
		}
		l.mu.Lock()
		l.mu.unexpected = append(l.mu.unexpected, fmt.Sprintf("%s at %s: %s", what, ep, describe(err)))
		l.mu.Unlock()
		return "refused"
	}
}

// client returns a Booking client of one live node, chosen by attempt.
func (l *lifeLoad) client(attempt int) (ledgerpb.BookingClient, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ep := l.mu.endpoints[attempt%len(l.mu.endpoints)]
	conn, ok := l.mu.conns[ep]
	if !ok {
		var err error
		conn, err = grpc.NewClient(ep, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			panic(err) // NewClient only fails on a malformed target
		}
		l.mu.conns[ep] = conn
	}
	return ledgerpb.NewBookingClient(conn), ep
}

func (l *lifeLoad) unexpectedErrors() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.mu.unexpected)
}

// report logs what the load did and fails on any error a client should not
// have seen.
func (l *lifeLoad) report(t *testing.T) {
	l.mu.Lock()
	defer l.mu.Unlock()
	counts := map[string]int{}
	for _, h := range l.mu.holds {
		counts["holds"]++
		counts["confirm "+orNone(h.confirm)]++
		counts["release "+orNone(h.release)]++
	}
	t.Logf("load: %v; retried errors: %v", counts, l.mu.retried)
	if len(l.mu.unexpected) > 0 {
		t.Errorf("clients saw %d errors that are neither retryable nor the ledger's answers, first: %v", len(l.mu.unexpected), l.mu.unexpected[:min(10, len(l.mu.unexpected))])
	}
	if counts["confirm acked"] < 10 || counts["release acked"] < 1 {
		t.Errorf("the load acknowledged too little to prove anything: %v", counts)
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// verify checks every acknowledged operation against the cluster: S2 and
// S3 for what the clients were told.
func (l *lifeLoad) verify(t *testing.T, ctx context.Context, c ledgerpb.BookingClient, where string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	maps := map[string]map[string]ledgerpb.SeatState{}
	for _, show := range l.shows {
		sm, err := c.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show})
		if err != nil {
			t.Fatalf("%s: GetSeatMap(%s) = %v", where, show, err)
		}
		maps[show] = map[string]ledgerpb.SeatState{}
		for _, s := range sm.Seats {
			maps[show][s.SeatId] = s.State
		}
	}
	bad := 0
	fail := func(format string, args ...any) {
		if bad++; bad <= 10 {
			t.Errorf("%s: "+format, append([]any{where}, args...)...)
		}
	}
	for _, h := range l.mu.holds {
		info, err := c.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: h.show, HoldId: h.id})
		// The log clock that judged expiry is the leaders' wall clock (on
		// this machine), read before the answer came: now is past it.
		now := time.Now()
		if err != nil {
			fail("GetHold(%s) = %v", h.id, err)
			continue
		}
		seatsIn := func(want ledgerpb.SeatState) {
			for _, s := range h.seats {
				if got := maps[h.show][s]; got != want {
					fail("hold %s (%v): seat %s of %s is %v, want %v", h.id, info.State, s, h.show, got, want)
				}
			}
		}
		switch st := info.State; {
		case h.confirm == "acked":
			if st != ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
				fail("acknowledged confirm of %s is lost: hold %v", h.id, st)
			}
			seatsIn(ledgerpb.SeatState_BOOKED)
		case h.release == "acked":
			if st != ledgerpb.HoldState_HOLD_STATE_CANCELLED {
				fail("acknowledged release of %s: hold %v, want CANCELLED", h.id, st)
			}
		case st == ledgerpb.HoldState_HOLD_STATE_HELD:
			seatsIn(ledgerpb.SeatState_HELD)
		case st == ledgerpb.HoldState_HOLD_STATE_EXPIRED:
			if now.Before(h.expires) {
				fail("acknowledged hold %s expired before its expiry %v", h.id, h.expires)
			}
		case st == ledgerpb.HoldState_HOLD_STATE_CONFIRMED && h.confirm == "unknown",
			st == ledgerpb.HoldState_HOLD_STATE_CANCELLED && h.release == "unknown":
			// An unacknowledged confirm or release that did apply.
		default:
			fail("acknowledged hold %s is %v (confirm %q, release %q)", h.id, st, h.confirm, h.release)
		}
	}
	if bad > 10 {
		t.Errorf("%s: %d violations in all", where, bad)
	}
	t.Logf("%s: %d acknowledged holds checked", where, len(l.mu.holds))
}
