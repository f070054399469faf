// This file proves seatd as a whole: three in-process nodes over real loopback
// TCP, each with its own data dir, fast raft timing and a few groups, driven
// only through the public gRPC and HTTP/JSON APIs. It shows that
//
//   - 50 clients racing for the same seats through all three nodes get
//     exactly one hold; every other gets SEATS_TAKEN (S1);
//   - killing a group's leader loses no acknowledged hold or confirm, and the
//     new leader keeps serving them, exactly once (S2, S3, S4);
//   - a node restarted on its data dir catches up, ending with the same
//     applied index and state digest as its peers for every group (S6), and
//     serves the writes it missed from its own replica (STALE reads);
//   - a hold expires by the leader's expiry driver and can then never be
//     confirmed, while a hold confirmed in time stays booked (S2, S3);
//   - a retried (client_id, request_id) gets the original answer from any
//     node, and a reused request_id with another payload is refused (S4);
//   - the HTTP/JSON contract: paths, field names, status codes and bodies.
//
// Waiting is always a bounded poll; no test asserts how long anything took.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

const (
	// clusterNodes and clusterGroups size the test cluster: every node
	// hosts a replica of every group.
	clusterNodes  = 3
	clusterGroups = 4
	// clusterWaitMax bounds every poll for a cluster condition.
	clusterWaitMax = 20 * time.Second
	// callTimeout bounds one API call (the gateway retries inside it).
	callTimeout = 10 * time.Second
	// pollInterval paces polls.
	pollInterval = 20 * time.Millisecond
	// logTailBytesMax bounds the node logs kept to print on failure.
	logTailBytesMax = 256 << 10
)

// testCluster is three seatd nodes in this process. A stopped node keeps its
// data dir and addresses so that it can be restarted as the same node.
type testCluster struct {
	t        *testing.T
	dir      string
	smap     shard.Map
	peers    []raftnode.Peer
	httpAddr []string // "" for a node without HTTP
	nodes    []*node  // nil while stopped
	conns    []*grpc.ClientConn
	clients  []ledgerpb.BookingClient
	logs     *logTail
	// tokens remembers each acknowledged hold's token (hold id -> token),
	// so confirm and release can present it as a frontend would.
	tokens sync.Map
}

// token returns the token a hold was issued with ("" if never seen).
func (c *testCluster) token(holdID string) string {
	t, _ := c.tokens.Load(holdID)
	s, _ := t.(string)
	return s
}

// logTail keeps the tail of the nodes' logs; it is printed if the test fails.
type logTail struct {
	mu  sync.Mutex
	buf []byte
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if len(l.buf) > logTailBytesMax {
		l.buf = append([]byte(nil), l.buf[len(l.buf)-logTailBytesMax/2:]...)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.buf)
}

// startCluster starts three nodes on fresh data dirs; every node also
// serves HTTP when withHTTP is set; tune may change each node's
// configuration. It returns once every group has a leader.
func startCluster(t *testing.T, withHTTP bool, tune ...func(*nodeConfig)) *testCluster {
	t.Helper()
	c := &testCluster{t: t, dir: t.TempDir(), smap: shard.Map{Groups: clusterGroups}, logs: &logTail{},
		httpAddr: make([]string, clusterNodes), nodes: make([]*node, clusterNodes)}
	var raftLns, grpcLns, httpLns []net.Listener
	for i := 0; i < clusterNodes; i++ {
		raftLns = append(raftLns, listenLoopback(t, "127.0.0.1:0"))
		grpcLns = append(grpcLns, listenLoopback(t, "127.0.0.1:0"))
		c.peers = append(c.peers, raftnode.Peer{ID: fmt.Sprintf("n%d", i+1),
			RaftAddr: raftLns[i].Addr().String(), GRPCAddr: grpcLns[i].Addr().String()})
		if withHTTP {
			httpLns = append(httpLns, listenLoopback(t, "127.0.0.1:0"))
			c.httpAddr[i] = httpLns[i].Addr().String()
		}
	}
	// Runs after stopAll (cleanups run last first): frees the listeners of
	// nodes that never started; closing a closed listener is harmless.
	t.Cleanup(func() { closeListeners(slices.Concat(raftLns, grpcLns, httpLns)) })
	t.Cleanup(c.stopAll)
	for i := range c.peers {
		cfg := c.config(i)
		for _, f := range tune {
			f(&cfg)
		}
		cfg.RaftLn, cfg.GRPCLn = raftLns[i], grpcLns[i]
		if withHTTP {
			cfg.HTTPLn = httpLns[i]
		}
		n, err := startNode(cfg)
		if err != nil {
			t.Fatalf("startNode(%s): %v", cfg.ID, err)
		}
		c.nodes[i] = n
	}
	for _, p := range c.peers {
		// The tests act as operators too (they create shows): their
		// connections carry the admin token.
		conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithPerRPCCredentials(shard.BearerCredentials(testAdminToken)),
			// Reconnect quickly to a restarted node.
			grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: time.Second,
				Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 200 * time.Millisecond}}))
		if err != nil {
			t.Fatalf("grpc.NewClient(%s): %v", p.GRPCAddr, err)
		}
		c.conns = append(c.conns, conn)
		c.clients = append(c.clients, ledgerpb.NewBookingClient(conn))
	}
	c.waitLeaders()
	return c
}

// config is node i's configuration, without listeners.
func (c *testCluster) config(i int) nodeConfig {
	p := c.peers[i]
	return nodeConfig{
		ID: p.ID, DataDir: filepath.Join(c.dir, p.ID), Peers: c.peers, Groups: clusterGroups, Replicas: clusterNodes,
		Raft: raftnode.Config{
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			ExpireInterval: 20 * time.Millisecond,
		},
		// The node adds its id to its lines, raft's own included.
		Logger:     slog.New(slog.NewTextHandler(c.logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
		AdminToken: testAdminToken,
	}
}

// testAdminToken is the admin token of every test cluster; httpCall sends
// it with every request, as an operator's tool would.
const testAdminToken = "test-admin-token-0123456789"

func listenLoopback(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	return ln
}

func closeListeners(lns []net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// listenAgain binds an address a stopped node used, retrying briefly while
// the port is still held (TIME_WAIT, a closing listener).
func listenAgain(addr string) (net.Listener, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", addr)
		if err == nil || time.Now().After(deadline) {
			return ln, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stopAll closes the clients and every running node; on failure it prints the
// nodes' logs.
func (c *testCluster) stopAll() {
	for _, conn := range c.conns {
		conn.Close()
	}
	for i, n := range c.nodes {
		if n != nil {
			if err := n.close(); err != nil {
				c.t.Errorf("close %s: %v", c.peers[i].ID, err)
			}
			c.nodes[i] = nil
		}
	}
	if c.t.Failed() {
		c.t.Logf("node logs (tail):\n%s", c.logs)
	}
}

// kill stops node i (gracefully: the point is losing a replica, not torn
// writes, which raft's fsync covers).
func (c *testCluster) kill(i int) {
	c.t.Helper()
	if err := c.nodes[i].close(); err != nil {
		c.t.Errorf("close %s: %v", c.peers[i].ID, err)
	}
	c.nodes[i] = nil
}

// restart starts node i again on its data dir and its old addresses.
func (c *testCluster) restart(i int) {
	c.t.Helper()
	cfg := c.config(i)
	var lns []net.Listener
	for _, addr := range []string{c.peers[i].RaftAddr, c.peers[i].GRPCAddr, c.httpAddr[i]} {
		if addr == "" {
			lns = append(lns, nil)
			continue
		}
		ln, err := listenAgain(addr)
		if err != nil {
			closeListeners(lns)
			c.t.Fatalf("restart %s: listen on %s: %v", cfg.ID, addr, err)
		}
		lns = append(lns, ln)
	}
	cfg.RaftLn, cfg.GRPCLn, cfg.HTTPLn = lns[0], lns[1], lns[2]
	n, err := startNode(cfg)
	if err != nil {
		// startNode does not close every listener on every error path.
		closeListeners(lns)
		c.t.Fatalf("restart %s: %v", cfg.ID, err)
	}
	c.nodes[i] = n
	c.waitConnReady(i)
}

// waitConnReady reconnects the test's client to node i at once, instead of
// after the client's backoff, so that a call right after a restart does not
// fail fast.
func (c *testCluster) waitConnReady(i int) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), clusterWaitMax)
	defer cancel()
	conn := c.conns[i]
	conn.ResetConnectBackoff()
	conn.Connect()
	for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
		if !conn.WaitForStateChange(ctx, st) {
			c.t.Fatalf("client connection to restarted %s: %v after %v, want READY", c.peers[i].ID, st, clusterWaitMax)
		}
		if conn.GetState() == connectivity.TransientFailure {
			conn.ResetConnectBackoff()
		}
	}
}

// live returns the indexes of the running nodes.
func (c *testCluster) live() []int {
	var out []int
	for i, n := range c.nodes {
		if n != nil {
			out = append(out, i)
		}
	}
	return out
}

// group returns node i's replica of a group.
func (c *testCluster) group(i int, id uint32) *raftnode.Group {
	c.t.Helper()
	g, err := c.nodes[i].raft.Group(id)
	if err != nil {
		c.t.Fatalf("%s: %v", c.peers[i].ID, err)
	}
	return g
}

// leaderNow returns the running node that leads group id and that every
// running node knows as its leader, or -1.
func (c *testCluster) leaderNow(id uint32) int {
	leader := -1
	for _, i := range c.live() {
		if c.group(i, id).IsLeader() {
			leader = i
		}
	}
	if leader < 0 {
		return -1
	}
	for _, i := range c.live() {
		if c.group(i, id).Leader() != c.peers[leader].ID {
			return -1
		}
	}
	return leader
}

// waitLeaders waits until every group has a leader known by all running
// nodes.
func (c *testCluster) waitLeaders() {
	c.t.Helper()
	for id := uint32(0); id < clusterGroups; id++ {
		c.waitLeader(id)
	}
}

func (c *testCluster) waitLeader(id uint32) int {
	c.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		if l := c.leaderNow(id); l >= 0 {
			return l
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, i := range c.live() {
				g := c.group(i, id)
				seen = append(seen, fmt.Sprintf("%s: leader %q (leads: %v)", c.peers[i].ID, g.Leader(), g.IsLeader()))
			}
			c.t.Fatalf("group %d has no leader known by all running nodes after %v: %s", id, clusterWaitMax, strings.Join(seen, "; "))
		}
		time.Sleep(pollInterval)
	}
}

// leaderOf returns the node leading the group of show.
func (c *testCluster) leaderOf(show string) int {
	c.t.Helper()
	return c.waitLeader(c.smap.GroupFor(show))
}

// converge waits until every running replica of every group is at the same
// applied index, then checks that their state digests are equal (S6). It
// returns the digests by group.
func (c *testCluster) converge() map[uint32]fsm.Digest {
	c.t.Helper()
	out := map[uint32]fsm.Digest{}
	for id := uint32(0); id < clusterGroups; id++ {
		out[id] = c.convergeGroup(id)
	}
	return out
}

func (c *testCluster) convergeGroup(id uint32) fsm.Digest {
	c.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		var ds []fsm.Digest
		for _, i := range c.live() {
			d, err := c.group(i, id).Machine().Digest()
			if err != nil {
				c.t.Fatalf("%s: digest of group %d: %v", c.peers[i].ID, id, err)
			}
			ds = append(ds, d)
		}
		same := true
		for _, d := range ds[1:] {
			same = same && d.Applied == ds[0].Applied
		}
		if same {
			for k, d := range ds[1:] {
				if d != ds[0] {
					c.t.Fatalf("group %d at index %d: %s has digest %v, %s has %v; want equal (S6)",
						id, d.Applied, c.peers[c.live()[k+1]].ID, d, c.peers[c.live()[0]].ID, ds[0])
				}
			}
			return ds[0]
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("group %d replicas not at one applied index after %v: %v", id, clusterWaitMax, ds)
		}
		time.Sleep(pollInterval)
	}
}

// ---- API helpers ----

// showSeats is the number of seats of testShow: rows A–E of 20.
const showSeats = 100

func testShow(id string) *ledgerpb.Show {
	s := &ledgerpb.Show{ShowId: id, Title: "Cluster test",
		Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 1000, Currency: "EUR"}}}
	for _, r := range []string{"A", "B", "C", "D", "E"} {
		s.Rows = append(s.Rows, &ledgerpb.Row{Name: r, Seats: 20, Category: "std"})
	}
	return s
}

func callCtx(t *testing.T) (context.Context, context.CancelFunc) {
	return context.WithTimeout(t.Context(), callTimeout)
}

// retryPause paces a client's retries of a 503.
const retryPause = 100 * time.Millisecond

// retrying calls the API as its contract asks of a client: Unavailable (no
// leader or quorum now, or outcome unknown) is retried with the same
// request, until clusterWaitMax has passed. Elections on a loaded machine
// may outlast the gateway's own retries; they must not fail a test that is
// about what happens, not how fast.
func retrying[T any](t *testing.T, what string, call func(ctx context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(clusterWaitMax)
	for {
		ctx, cancel := callCtx(t)
		res, err := call(ctx)
		cancel()
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			return res, err
		}
		t.Logf("%s = %s: retrying", what, outcomeOf(err))
		time.Sleep(retryPause)
	}
}

// createShow creates a show through node i.
func (c *testCluster) createShow(i int, id string) {
	c.t.Helper()
	_, err := retrying(c.t, "CreateShow("+id+")", func(ctx context.Context) (*ledgerpb.CreateShowResponse, error) {
		return c.clients[i].CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: testShow(id)})
	})
	if err != nil {
		c.t.Fatalf("CreateShow(%s) via %s = %s, want OK", id, c.peers[i].ID, outcomeOf(err))
	}
}

// holdOnce asks node i once to hold seats.
func (c *testCluster) holdOnce(ctx context.Context, i int, show, client, request string, ttl uint32, seats ...string) (*ledgerpb.HoldResponse, error) {
	res, err := c.clients[i].Hold(ctx, &ledgerpb.HoldRequest{ShowId: show, SeatIds: seats, ClientId: client, RequestId: request, TtlSeconds: ttl})
	if err == nil {
		c.tokens.Store(res.HoldId, res.HoldToken)
	}
	return res, err
}

// hold holds seats through node i, retrying a 503.
func (c *testCluster) hold(i int, show, client, request string, ttl uint32, seats ...string) (*ledgerpb.HoldResponse, error) {
	what := fmt.Sprintf("Hold(%s) by %s/%s via %s", strings.Join(seats, ","), client, request, c.peers[i].ID)
	return retrying(c.t, what, func(ctx context.Context) (*ledgerpb.HoldResponse, error) {
		return c.holdOnce(ctx, i, show, client, request, ttl, seats...)
	})
}

// mustHold holds seats through node i and fails the test unless OK.
func (c *testCluster) mustHold(i int, show, client, request string, ttl uint32, seats ...string) *ledgerpb.HoldResponse {
	c.t.Helper()
	res, err := c.hold(i, show, client, request, ttl, seats...)
	if err != nil {
		c.t.Fatalf("Hold(%s) by %s via %s = %s, want OK", strings.Join(seats, ","), client, c.peers[i].ID, outcomeOf(err))
	}
	return res
}

func (c *testCluster) confirm(i int, show, holdID, client, request, payment string) (*ledgerpb.ConfirmResponse, error) {
	what := fmt.Sprintf("Confirm(%s) by %s/%s via %s", holdID, client, request, c.peers[i].ID)
	return retrying(c.t, what, func(ctx context.Context) (*ledgerpb.ConfirmResponse, error) {
		return c.clients[i].Confirm(ctx, &ledgerpb.ConfirmRequest{ShowId: show, HoldId: holdID, PaymentRef: payment, ClientId: client, RequestId: request, HoldToken: c.token(holdID)})
	})
}

func (c *testCluster) mustConfirm(i int, show, holdID, client, request, payment string) *ledgerpb.ConfirmResponse {
	c.t.Helper()
	res, err := c.confirm(i, show, holdID, client, request, payment)
	if err != nil {
		c.t.Fatalf("Confirm(%s) by %s via %s = %s, want OK", holdID, client, c.peers[i].ID, outcomeOf(err))
	}
	if res.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		c.t.Fatalf("Confirm(%s) state = %v, want HOLD_STATE_CONFIRMED", holdID, res.State)
	}
	return res
}

func (c *testCluster) mustRelease(i int, show, holdID, client, request string) *ledgerpb.ReleaseResponse {
	c.t.Helper()
	what := fmt.Sprintf("Release(%s) by %s/%s via %s", holdID, client, request, c.peers[i].ID)
	res, err := retrying(c.t, what, func(ctx context.Context) (*ledgerpb.ReleaseResponse, error) {
		return c.clients[i].Release(ctx, &ledgerpb.ReleaseRequest{ShowId: show, HoldId: holdID, ClientId: client, RequestId: request, HoldToken: c.token(holdID)})
	})
	if err != nil {
		c.t.Fatalf("%s = %s, want OK", what, outcomeOf(err))
	}
	return res
}

func (c *testCluster) seatMap(i int, show string, cons ledgerpb.Consistency) *ledgerpb.SeatMap {
	c.t.Helper()
	what := fmt.Sprintf("GetSeatMap(%s, %v) via %s", show, cons, c.peers[i].ID)
	sm, err := retrying(c.t, what, func(ctx context.Context) (*ledgerpb.SeatMap, error) {
		return c.clients[i].GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show, Consistency: cons})
	})
	if err != nil {
		c.t.Fatalf("%s = %s, want OK", what, outcomeOf(err))
	}
	return sm
}

func (c *testCluster) getHold(i int, show, holdID string) *ledgerpb.HoldInfo {
	c.t.Helper()
	what := fmt.Sprintf("GetHold(%s) via %s", holdID, c.peers[i].ID)
	h, err := retrying(c.t, what, func(ctx context.Context) (*ledgerpb.HoldInfo, error) {
		return c.clients[i].GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: show, HoldId: holdID})
	})
	if err != nil {
		c.t.Fatalf("%s = %s, want OK", what, outcomeOf(err))
	}
	return h
}

// reasonOf returns the ErrorInfo reason of a gRPC error, or "".
func reasonOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			return info.Reason
		}
	}
	return ""
}

// detailOf returns the seatledger ErrorDetail of a gRPC error, or nil.
func detailOf(err error) *ledgerpb.ErrorDetail {
	for _, d := range status.Convert(err).Details() {
		if ed, ok := d.(*ledgerpb.ErrorDetail); ok {
			return ed
		}
	}
	return nil
}

// outcomeOf names a call's outcome for failure messages: OK, the reason, or
// the code and message when there is no reason.
func outcomeOf(err error) string {
	if err == nil {
		return "OK"
	}
	if r := reasonOf(err); r != "" {
		return fmt.Sprintf("%s (%v)", r, status.Code(err))
	}
	return fmt.Sprintf("%v: %s", status.Code(err), status.Convert(err).Message())
}

// wantRejected fails unless err carries reason and code.
func wantRejected(t *testing.T, call string, err error, reason string, code codes.Code) {
	t.Helper()
	if reasonOf(err) != reason || status.Code(err) != code {
		t.Errorf("%s = %s, want %s (%v)", call, outcomeOf(err), reason, code)
	}
}

// checkSeats fails unless the seat map shows exactly the seats in want in
// their states and every other seat FREE.
func checkSeats(t *testing.T, where string, sm *ledgerpb.SeatMap, want map[string]ledgerpb.SeatState) {
	t.Helper()
	seen := 0
	var bad []string
	for _, s := range sm.Seats {
		w, ok := want[s.SeatId]
		if ok {
			seen++
		} else {
			w = ledgerpb.SeatState_FREE
		}
		if s.State != w {
			bad = append(bad, fmt.Sprintf("%s = %v, want %v", s.SeatId, s.State, w))
		}
	}
	if seen != len(want) {
		bad = append(bad, fmt.Sprintf("map lists %d of the %d seats checked", seen, len(want)))
	}
	if len(bad) > 0 {
		t.Errorf("%s: seat map of %s at revision %d: %s", where, sm.ShowId, sm.Revision, strings.Join(bad, "; "))
	}
}

// states returns want with seats set to state.
func states(want map[string]ledgerpb.SeatState, state ledgerpb.SeatState, seats ...string) map[string]ledgerpb.SeatState {
	if want == nil {
		want = map[string]ledgerpb.SeatState{}
	}
	for _, s := range seats {
		want[s] = state
	}
	return want
}

// showInGroup returns a show id with prefix that maps to group id.
func (c *testCluster) showInGroup(prefix string, id uint32) string {
	for i := 0; ; i++ {
		if s := fmt.Sprintf("%s-%d", prefix, i); c.smap.GroupFor(s) == id {
			return s
		}
	}
}

// ---- tests ----

func TestClusterRace(t *testing.T) {
	c := startCluster(t, false)
	const show = "race-1"
	c.createShow(0, show)

	const racers = 50
	type outcome struct {
		client string
		res    *ledgerpb.HoldResponse
		err    error
	}
	out := make([]outcome, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := fmt.Sprintf("fan-%02d", i)
			<-start
			res, err := c.hold(i%clusterNodes, show, client, "r1", 0, "A1", "A2")
			out[i] = outcome{client: client, res: res, err: err}
		}()
	}
	close(start)
	wg.Wait()

	var winners []outcome
	for _, o := range out {
		if o.err == nil {
			winners = append(winners, o)
			continue
		}
		wantRejected(t, "Hold(A1,A2) by "+o.client, o.err, "SEATS_TAKEN", codes.Aborted)
		if d := detailOf(o.err); d == nil || len(d.TakenSeatIds) == 0 {
			t.Errorf("Hold(A1,A2) by %s: rejection names no taken seats (detail %v)", o.client, d)
		} else if taken := slices.Sorted(slices.Values(d.TakenSeatIds)); !slices.Equal(taken, []string{"A1", "A2"}) {
			t.Errorf("Hold(A1,A2) by %s: taken seats %v, want [A1 A2]", o.client, taken)
		}
	}
	if len(winners) != 1 {
		names := make([]string, len(winners))
		for i, w := range winners {
			names[i] = w.client
		}
		t.Fatalf("%d of %d racing Hold(A1,A2) = OK (%v), want exactly 1 (S1)", len(winners), racers, names)
	}
	w := winners[0]
	for i := range clusterNodes {
		sm := c.seatMap(i, show, ledgerpb.Consistency_LINEARIZABLE)
		checkSeats(t, "via "+c.peers[i].ID, sm, states(nil, ledgerpb.SeatState_HELD, "A1", "A2"))
		if sm.Held != 2 || sm.Booked != 0 {
			t.Errorf("seat map via %s: held %d booked %d, want 2 and 0", c.peers[i].ID, sm.Held, sm.Booked)
		}
	}
	h := c.getHold(1, show, w.res.HoldId)
	if h.ClientId != w.client || h.State != ledgerpb.HoldState_HOLD_STATE_HELD || !slices.Equal(h.SeatIds, []string{"A1", "A2"}) {
		t.Errorf("GetHold(%s) = client %s state %v seats %v, want %s HOLD_STATE_HELD [A1 A2]", w.res.HoldId, h.ClientId, h.State, h.SeatIds, w.client)
	}
	c.converge()
}

// ackedHold is an acknowledged hold, and whether its confirm was
// acknowledged too.
type ackedHold struct {
	client, id string
	seats      []string
	confirmed  bool
}

// seatStates is what the acknowledged holds promise: confirmed seats
// BOOKED, the others HELD.
func seatStates(holds []ackedHold) map[string]ledgerpb.SeatState {
	want := map[string]ledgerpb.SeatState{}
	for _, h := range holds {
		st := ledgerpb.SeatState_HELD
		if h.confirmed {
			st = ledgerpb.SeatState_BOOKED
		}
		states(want, st, h.seats...)
	}
	return want
}

// checkHolds fails unless every acknowledged hold reads HELD, or CONFIRMED
// when its confirm was acknowledged.
func (c *testCluster) checkHolds(via int, show string, holds []ackedHold) {
	c.t.Helper()
	for _, h := range holds {
		want := ledgerpb.HoldState_HOLD_STATE_HELD
		if h.confirmed {
			want = ledgerpb.HoldState_HOLD_STATE_CONFIRMED
		}
		if got := c.getHold(via, show, h.id).State; got != want {
			c.t.Errorf("GetHold(%s) via %s = %v, want %v", h.id, c.peers[via].ID, got, want)
		}
	}
}

func TestClusterKillLeader(t *testing.T) {
	c := startCluster(t, false)
	const show = "kill-1"
	c.createShow(1, show)
	var holds []ackedHold
	for k := range 6 {
		client := fmt.Sprintf("c%d", k)
		seats := []string{fmt.Sprintf("A%d", 2*k+1), fmt.Sprintf("A%d", 2*k+2)}
		res := c.mustHold(k%clusterNodes, show, client, "hold", 0, seats...)
		holds = append(holds, ackedHold{client: client, id: res.HoldId, seats: seats})
	}
	for k := range 3 {
		c.mustConfirm((k+1)%clusterNodes, show, holds[k].id, holds[k].client, "confirm", "pay-"+holds[k].client)
		holds[k].confirmed = true
	}

	// Kill the leader while a writer load runs through all three nodes.
	old := c.leaderOf(show)
	load := c.startWriters(show)
	time.Sleep(50 * time.Millisecond) // let some writes land before the kill
	c.kill(old)
	c.waitLeaders()
	writes := load.wait()
	leader := c.leaderOf(show)
	if leader == old {
		t.Fatalf("group of %s still led by the killed node %s", show, c.peers[old].ID)
	}
	follower := 3 - old - leader // the survivor that does not lead
	t.Logf("killed %s, the leader of group %d; %s leads it now", c.peers[old].ID, c.smap.GroupFor(show), c.peers[leader].ID)
	c.settleWrites(show, writes, []int{leader, follower})
	want := seatStates(holds)
	for _, w := range writes {
		states(want, ledgerpb.SeatState_HELD, w.seat)
	}
	for _, i := range []int{leader, follower} {
		checkSeats(t, fmt.Sprintf("after killing leader %s, via %s", c.peers[old].ID, c.peers[i].ID),
			c.seatMap(i, show, ledgerpb.Consistency_LINEARIZABLE), want)
	}
	c.checkHolds(follower, show, holds)

	// The new leader confirms an acknowledged hold, replays an old confirm,
	// takes new holds and keeps refusing taken seats.
	if res := c.mustConfirm(leader, show, holds[3].id, holds[3].client, "confirm", "pay-"+holds[3].client); res.Replayed {
		t.Errorf("Confirm(%s) after failover replayed = true, want a new confirm", holds[3].id)
	}
	holds[3].confirmed = true
	if again := c.mustConfirm(follower, show, holds[0].id, holds[0].client, "confirm", "pay-"+holds[0].client); !again.Replayed {
		t.Errorf("retried Confirm(%s) after failover replayed = false, want true (S4)", holds[0].id)
	}
	c.mustHold(follower, show, "late", "hold", 0, "B1", "B2")
	_, err := c.hold(leader, show, "thief", "hold", 0, "A1", "A9")
	wantRejected(t, "Hold(A1,A9) after failover", err, "SEATS_TAKEN", codes.Aborted)
	states(want, ledgerpb.SeatState_BOOKED, holds[3].seats...)
	states(want, ledgerpb.SeatState_HELD, "B1", "B2")
	checkSeats(t, "after new writes", c.seatMap(follower, show, ledgerpb.Consistency_LINEARIZABLE), want)

	// The old leader comes back as a follower and converges.
	c.restart(old)
	c.waitLeaders()
	c.converge()
	checkSeats(t, "stale read via restarted "+c.peers[old].ID, c.seatMap(old, show, ledgerpb.Consistency_STALE), want)
	c.checkHolds(old, show, holds)
}

// writer load: writersN clients each hold writeSeatsN seats of rows D and E
// one at a time, through different nodes, while a leader is killed.
const (
	writersN    = 4
	writeSeatsN = 10
	writePause  = 25 * time.Millisecond
)

// write is one hold of the writer load and its first outcome.
type write struct {
	client, request, seat string
	via                   int
	holdID                string // "" unless acknowledged
	err                   error
}

type writers struct {
	wg  sync.WaitGroup
	out [writersN][]write // one slice per writer: no sharing
}

// startWriters starts the writer load on show.
func (c *testCluster) startWriters(show string) *writers {
	ws := &writers{}
	for w := range writersN {
		ws.wg.Add(1)
		go func() {
			defer ws.wg.Done()
			for k := range writeSeatsN {
				// A fan per hold: a client may hold at most
				// fsm.HoldsPerClientPerShowMax live holds of a show.
				wr := write{client: fmt.Sprintf("w%d-%d", w, k), request: fmt.Sprintf("h%d", k), via: (w + k) % clusterNodes,
					seat: fmt.Sprintf("%c%d", 'D'+w/2, (w%2)*writeSeatsN+k+1)}
				// One attempt: a write whose outcome is unknown is settled
				// after the failover.
				ctx, cancel := callCtx(c.t)
				res, err := c.holdOnce(ctx, wr.via, show, wr.client, wr.request, 0, wr.seat)
				cancel()
				if err == nil {
					wr.holdID = res.HoldId
				}
				wr.err = err
				ws.out[w] = append(ws.out[w], wr)
				time.Sleep(writePause)
			}
		}()
	}
	return ws
}

// wait returns every write of the load once it is done.
func (ws *writers) wait() []write {
	ws.wg.Wait()
	var all []write
	for _, o := range ws.out {
		all = append(all, o...)
	}
	return all
}

// settleWrites retries every write with its request_id through the given
// nodes. An acknowledged write must come back replayed with the same hold;
// one that failed may have taken effect or not, but its retry must succeed
// (its seat is nobody else's) and from then on it is acknowledged.
func (c *testCluster) settleWrites(show string, writes []write, via []int) {
	c.t.Helper()
	var wg sync.WaitGroup
	for k := range writes {
		wg.Add(1)
		go func() { // each goroutine owns writes[k]
			defer wg.Done()
			w := &writes[k]
			i := via[k%len(via)]
			res, err := c.hold(i, show, w.client, w.request, 0, w.seat)
			switch {
			case err != nil:
				c.t.Errorf("retried Hold(%s) by %s/%s via %s = %s, want OK (first outcome %s)", w.seat, w.client, w.request, c.peers[i].ID, outcomeOf(err), outcomeOf(w.err))
			case w.holdID != "" && (res.HoldId != w.holdID || !res.Replayed):
				c.t.Errorf("retried Hold(%s) by %s/%s = hold %s replayed %v, want the acknowledged hold %s replayed (S4)", w.seat, w.client, w.request, res.HoldId, res.Replayed, w.holdID)
			}
		}()
	}
	wg.Wait()
	unknown := 0
	for _, w := range writes {
		if w.holdID == "" {
			unknown++
		}
	}
	c.t.Logf("writer load: %d holds, %d not acknowledged before the kill and settled by retry", len(writes), unknown)
}

func TestClusterRestartCatchesUp(t *testing.T) {
	c := startCluster(t, false)
	shows := make([]string, clusterGroups)
	for g := range uint32(clusterGroups) {
		shows[g] = c.showInGroup("catchup", g)
		c.createShow(int(g)%clusterNodes, shows[g])
	}
	// Stop a node that does not lead the first show's group.
	down := (c.leaderOf(shows[0]) + 1) % clusterNodes
	before := map[uint32]uint64{}
	for g := range uint32(clusterGroups) {
		before[g] = c.group(down, g).Machine().Applied()
	}
	c.kill(down)
	c.waitLeaders()
	up := []int{(down + 1) % clusterNodes, (down + 2) % clusterNodes}

	// Writes the stopped node misses: per show, four holds, two confirmed,
	// one released.
	want := map[string]map[string]ledgerpb.SeatState{}
	for si, show := range shows {
		want[show] = map[string]ledgerpb.SeatState{}
		for k := range 4 {
			client, seats := fmt.Sprintf("c%d", k), []string{fmt.Sprintf("B%d", k+1), fmt.Sprintf("C%d", k+1)}
			res := c.mustHold(up[(si+k)%2], show, client, "hold", 0, seats...)
			switch k {
			case 0, 1:
				c.mustConfirm(up[k%2], show, res.HoldId, client, "confirm", "pay")
				states(want[show], ledgerpb.SeatState_BOOKED, seats...)
			case 2:
				c.mustRelease(up[0], show, res.HoldId, client, "release")
			default:
				states(want[show], ledgerpb.SeatState_HELD, seats...)
			}
		}
	}

	c.restart(down)
	c.waitLeaders()
	digests := c.converge()
	for g := range uint32(clusterGroups) {
		if got := c.group(down, g).Machine().Applied(); got <= before[g] {
			t.Errorf("restarted %s group %d applied %d, was %d before the stop: want the missed writes", c.peers[down].ID, g, got, before[g])
		}
		t.Logf("group %d: %v", g, digests[g])
	}
	for _, show := range shows {
		sm := c.seatMap(down, show, ledgerpb.Consistency_STALE)
		if sm.ServedBy != c.peers[down].ID || sm.Consistency != ledgerpb.Consistency_STALE {
			t.Errorf("STALE GetSeatMap(%s) via %s served by %q as %v, want %s STALE", show, c.peers[down].ID, sm.ServedBy, sm.Consistency, c.peers[down].ID)
		}
		checkSeats(t, "stale read via restarted "+c.peers[down].ID, sm, want[show])
	}
}

func TestClusterExpiredHoldCannotConfirm(t *testing.T) {
	c := startCluster(t, false)
	const show = "expire-1"
	c.createShow(0, show)
	// A hold confirmed within its TTL: it must outlive the TTL as a booking.
	kept := c.mustHold(1, show, "keeper", "hold", 3, "B1", "B2")
	c.mustConfirm(2, show, kept.HoldId, "keeper", "confirm", "pay-1")
	// A hold left to expire.
	lapsed := c.mustHold(0, show, "dawdler", "hold", 1, "A1", "A2")

	// The seats free up once the leader's expiry driver has proposed an
	// Expire entry: nothing else writes to this group, so only that entry
	// moves the log clock past the hold's expiry.
	g := c.smap.GroupFor(show)
	deadline := time.Now().Add(clusterWaitMax)
	for {
		sm := c.seatMap(1, show, ledgerpb.Consistency_LINEARIZABLE)
		got := map[string]ledgerpb.SeatState{}
		for _, s := range sm.Seats {
			got[s.SeatId] = s.State
		}
		if got["A1"] == ledgerpb.SeatState_FREE && got["A2"] == ledgerpb.SeatState_FREE && !c.expiryPending(g) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hold %s (ttl 1s): A1 %v A2 %v, expiry pending %v after %v; want FREE, expired by the leader",
				lapsed.HoldId, got["A1"], got["A2"], c.expiryPending(g), clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
	_, err := c.confirm(2, show, lapsed.HoldId, "dawdler", "confirm", "pay-2")
	wantRejected(t, "Confirm(expired "+lapsed.HoldId+")", err, "HOLD_EXPIRED", codes.FailedPrecondition)
	if d := detailOf(err); d == nil || d.HoldState != ledgerpb.HoldState_HOLD_STATE_EXPIRED {
		t.Errorf("Confirm(expired %s) detail = %v, want hold_state HOLD_STATE_EXPIRED", lapsed.HoldId, d)
	}
	if h := c.getHold(0, show, lapsed.HoldId); h.State != ledgerpb.HoldState_HOLD_STATE_EXPIRED {
		t.Errorf("GetHold(%s) = %v, want HOLD_STATE_EXPIRED", lapsed.HoldId, h.State)
	}

	// Move the log clock past the confirmed hold's expiry with a write.
	keptExpiry := kept.ExpiresAt.AsTime()
	time.Sleep(time.Until(keptExpiry) + 50*time.Millisecond)
	later := c.mustHold(0, show, "later", "hold", 0, "C1")
	if !later.AppliedAt.AsTime().After(keptExpiry) {
		t.Fatalf("Hold(C1) applied at %v, not after %v: the log clock did not pass the TTL", later.AppliedAt.AsTime(), keptExpiry)
	}
	sm := c.seatMap(2, show, ledgerpb.Consistency_LINEARIZABLE)
	want := states(states(nil, ledgerpb.SeatState_BOOKED, "B1", "B2"), ledgerpb.SeatState_HELD, "C1")
	checkSeats(t, "after the TTL of a confirmed hold", sm, want)
	if h := c.getHold(1, show, kept.HoldId); h.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		t.Errorf("GetHold(%s) after its TTL = %v, want HOLD_STATE_CONFIRMED (S2)", kept.HoldId, h.State)
	}
	c.converge()
}

// expiryPending reports whether the leader of group id still has live holds
// in its expiry index.
func (c *testCluster) expiryPending(id uint32) bool {
	c.t.Helper()
	v, err := c.group(c.waitLeader(id), id).Machine().View()
	if err != nil {
		c.t.Fatalf("view of group %d: %v", id, err)
	}
	defer v.Close()
	_, pending, err := v.NextExpiry()
	if err != nil {
		c.t.Fatalf("NextExpiry of group %d: %v", id, err)
	}
	return pending
}

func TestClusterRetrySameRequestID(t *testing.T) {
	c := startCluster(t, false)
	const show = "retry-1"
	c.createShow(0, show)
	first := c.mustHold(0, show, "c", "r", 0, "A1", "A2")
	if first.Replayed {
		t.Errorf("first Hold(A1,A2) replayed = true, want false")
	}
	for _, i := range []int{1, 2} {
		again := c.mustHold(i, show, "c", "r", 0, "A1", "A2")
		if again.HoldId != first.HoldId || !again.ExpiresAt.AsTime().Equal(first.ExpiresAt.AsTime()) || !again.Replayed ||
			again.Revision != first.Revision {
			t.Errorf("retried Hold(A1,A2) via %s = hold %s expires %v revision %d replayed %v; want hold %s expires %v revision %d replayed true",
				c.peers[i].ID, again.HoldId, again.ExpiresAt.AsTime(), again.Revision, again.Replayed,
				first.HoldId, first.ExpiresAt.AsTime(), first.Revision)
		}
	}
	_, err := c.hold(2, show, "c", "r", 0, "B1", "B2")
	wantRejected(t, "Hold(B1,B2) reusing request r", err, "REQUEST_ID_REUSED", codes.AlreadyExists)
	// Another client may use the same request_id: ids are per client.
	c.mustHold(1, show, "d", "r", 0, "C1")
	checkSeats(t, "after retries", c.seatMap(1, show, ledgerpb.Consistency_LINEARIZABLE),
		states(states(nil, ledgerpb.SeatState_HELD, "A1", "A2"), ledgerpb.SeatState_HELD, "C1"))
}

// ---- HTTP ----

// httpResult is a response: status, decoded JSON body and raw body.
type httpResult struct {
	code int
	body map[string]any
	raw  string
}

// httpCall makes one HTTP call, retrying a 503 (the contract's "retry")
// until clusterWaitMax has passed.
func httpCall(t *testing.T, method, url, body string) httpResult {
	t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		r := httpCallOnce(t, method, url, body)
		if r.code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			return r
		}
		t.Logf("%s %s = 503 %s: retrying", method, url, r.raw)
		time.Sleep(retryPause)
	}
}

func httpCallOnce(t *testing.T, method, url, body string) httpResult {
	t.Helper()
	ctx, cancel := callCtx(t)
	defer cancel()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testAdminToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, url, err)
	}
	r := httpResult{code: resp.StatusCode, raw: string(raw)}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("%s %s = %d with Content-Type %q, want application/json", method, url, resp.StatusCode, ct)
	}
	if err := json.Unmarshal(raw, &r.body); err != nil {
		t.Fatalf("%s %s = %d with a body that is not a JSON object: %v: %q", method, url, resp.StatusCode, err, raw)
	}
	return r
}

// wantStatus fails the test unless the response has the status.
func (r httpResult) wantStatus(t *testing.T, call string, code int) httpResult {
	t.Helper()
	if r.code != code {
		t.Fatalf("%s = %d %s, want %d", call, r.code, r.raw, code)
	}
	return r
}

// str returns a top-level string field.
func (r httpResult) str(field string) string {
	s, _ := r.body[field].(string)
	return s
}

// details returns the error body's details by their "@type" suffix.
func (r httpResult) details(typeSuffix string) []map[string]any {
	var out []map[string]any
	ds, _ := r.body["details"].([]any)
	for _, d := range ds {
		m, _ := d.(map[string]any)
		if t, _ := m["@type"].(string); strings.HasSuffix(t, typeSuffix) {
			out = append(out, m)
		}
	}
	return out
}

// httpSeats reads the seat map over HTTP: seat_id -> state name.
func httpSeats(t *testing.T, base, show string) map[string]string {
	t.Helper()
	r := httpCall(t, "GET", base+"/v1/shows/"+show+"/seats", "").wantStatus(t, "GET seats", http.StatusOK)
	out := map[string]string{}
	seats, _ := r.body["seats"].([]any)
	for _, s := range seats {
		m, _ := s.(map[string]any)
		id, _ := m["seat_id"].(string)
		st, _ := m["state"].(string)
		out[id] = st
	}
	if len(out) != showSeats {
		t.Fatalf("GET seats listed %d seats with seat_id, want %d: %.300s", len(out), showSeats, r.raw)
	}
	// The layout-less map for pollers says the same, one letter per seat
	// in the full map's order.
	rs := httpCall(t, "GET", base+"/v1/shows/"+show+"/seats?states_only=true", "").wantStatus(t, "GET seats?states_only", http.StatusOK)
	letters, _ := rs.body["seat_states"].(string)
	if listed, _ := rs.body["seats"].([]any); len(listed) > 0 || len(letters) != len(seats) {
		t.Fatalf("GET seats?states_only: %d letters (want %d) and %d seats listed (want none): %.300s", len(letters), len(seats), len(listed), rs.raw)
	}
	for i, s := range seats {
		m, _ := s.(map[string]any)
		if got, want := fsm.SeatStateOfLetter(letters[i]).String(), m["state"]; got != want {
			t.Fatalf("GET seats?states_only: seat %v is %q (%c), the full map says %v", m["seat_id"], got, letters[i], want)
		}
	}
	return out
}

func wantHTTPSeats(t *testing.T, when string, got map[string]string, want map[string]string) {
	t.Helper()
	for id, st := range got {
		w, ok := want[id]
		if !ok {
			w = "FREE"
		}
		if st != w {
			t.Errorf("%s: seat %s = %q, want %q", when, id, st, w)
		}
	}
}

func TestClusterHTTP(t *testing.T) {
	c := startCluster(t, true)
	const show = "http-1"
	base := "http://" + c.httpAddr[0]
	body, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&ledgerpb.CreateShowRequest{Show: testShow(show)})
	if err != nil {
		t.Fatal(err)
	}
	r := httpCall(t, "POST", base+"/v1/shows", string(body)).wantStatus(t, "POST /v1/shows", http.StatusOK)
	if r.str("show_id") != show || r.body["seat_count"] != float64(showSeats) {
		t.Errorf("POST /v1/shows = %s, want show_id %s and seat_count %d", r.raw, show, showSeats)
	}
	wantHTTPSeats(t, "new show", httpSeats(t, base, show), nil)
	httpHoldConflictConfirm(t, base, show)
	httpInputsAndRelease(t, base, show)
}

// httpHoldConflictConfirm: a hold, a conflicting hold (409 naming the taken
// seat), a confirm, and a confirm of an unknown hold (410).
func httpHoldConflictConfirm(t *testing.T, base, show string) {
	holds := base + "/v1/shows/" + show + "/holds"
	r := httpCall(t, "POST", holds, `{"seat_ids":["A1","A2"],"client_id":"alice","request_id":"r1"}`).
		wantStatus(t, "POST holds A1,A2", http.StatusOK)
	holdID := r.str("hold_id")
	if holdID == "" || r.str("revision") == "" || r.str("revision") == "0" {
		t.Errorf("POST holds A1,A2 = %s, want hold_id and a revision", r.raw)
	}
	if _, err := time.Parse(time.RFC3339Nano, r.str("expires_at")); err != nil {
		t.Errorf("POST holds A1,A2: expires_at %q is not a timestamp: %v", r.str("expires_at"), err)
	}

	r = httpCall(t, "POST", holds, `{"seat_ids":["A2","A3"],"client_id":"bob","request_id":"r1"}`).
		wantStatus(t, "POST holds A2,A3 by bob", http.StatusConflict)
	if !strings.Contains(r.raw, "A2") {
		t.Errorf("409 body %s does not name A2", r.raw)
	}
	var taken, suggested []any
	for _, d := range r.details("seatledger.v1.ErrorDetail") {
		taken, _ = d["taken_seat_ids"].([]any)
		suggested, _ = d["suggested_seat_ids"].([]any)
	}
	if len(taken) != 1 || taken[0] != "A2" {
		t.Errorf("409 body %s: taken_seat_ids %v, want [A2]", r.raw, taken)
	}
	if len(suggested) != 2 {
		t.Errorf("409 body %s: suggested_seat_ids %v, want two seats", r.raw, suggested)
	}

	token := r0token(t, holds, holdID)
	httpCall(t, "POST", holds+"/"+holdID+":confirm", `{"payment_ref":"p1","client_id":"alice","request_id":"r2"}`).
		wantStatus(t, "POST confirm without hold_token", http.StatusBadRequest)
	httpCall(t, "POST", holds+"/"+holdID+":confirm", `{"payment_ref":"p1","client_id":"alice","request_id":"r2","hold_token":"forged"}`).
		wantStatus(t, "POST confirm with another token", http.StatusForbidden)
	r = httpCall(t, "POST", holds+"/"+holdID+":confirm", `{"payment_ref":"p1","client_id":"alice","request_id":"r2b","hold_token":"`+token+`"}`).
		wantStatus(t, "POST confirm", http.StatusOK)
	if r.str("state") != "HOLD_STATE_CONFIRMED" {
		t.Errorf("POST confirm = %s, want state HOLD_STATE_CONFIRMED", r.raw)
	}
	wantHTTPSeats(t, "after confirm", httpSeats(t, base, show), map[string]string{"A1": "BOOKED", "A2": "BOOKED"})
	r = httpCall(t, "GET", holds+"/"+holdID, "").wantStatus(t, "GET hold", http.StatusOK)
	if r.str("state") != "HOLD_STATE_CONFIRMED" || r.str("payment_ref") != "p1" {
		t.Errorf("GET hold = %s, want state HOLD_STATE_CONFIRMED and payment_ref p1", r.raw)
	}

	httpCall(t, "POST", holds+"/h0-99999-0:confirm", `{"payment_ref":"p1","client_id":"alice","request_id":"r3","hold_token":"x"}`).
		wantStatus(t, "POST confirm of an unknown hold", http.StatusGone)

	// Refund: the booking's seats are free again.
	r = httpCall(t, "POST", holds+"/"+holdID+":refund", `{"client_id":"alice","request_id":"r4","hold_token":"`+token+`","reason":"sick"}`).
		wantStatus(t, "POST refund", http.StatusOK)
	if r.str("state") != "HOLD_STATE_REFUNDED" {
		t.Errorf("POST refund = %s, want state HOLD_STATE_REFUNDED", r.raw)
	}
	wantHTTPSeats(t, "after refund", httpSeats(t, base, show), nil)
	// Re-book A1,A2 so the next steps find them booked.
	r = httpCall(t, "POST", holds, `{"seat_ids":["A1","A2"],"client_id":"alice","request_id":"r5"}`).
		wantStatus(t, "POST holds A1,A2 again", http.StatusOK)
	again, againToken := r.str("hold_id"), r.str("hold_token")
	httpCall(t, "POST", holds+"/"+again+":confirm", `{"payment_ref":"p2","client_id":"alice","request_id":"r6","hold_token":"`+againToken+`"}`).
		wantStatus(t, "POST confirm again", http.StatusOK)
}

// r0token re-reads a hold's token the way a client that lost the first
// answer would: by retrying the hold with the same request id.
func r0token(t *testing.T, holds, holdID string) string {
	t.Helper()
	r := httpCall(t, "POST", holds, `{"seat_ids":["A1","A2"],"client_id":"alice","request_id":"r1"}`).
		wantStatus(t, "POST holds A1,A2 retried", http.StatusOK)
	if r.str("hold_id") != holdID || r.str("hold_token") == "" || r.body["replayed"] != true {
		t.Fatalf("retried POST holds = %s, want hold %s replayed with its hold_token", r.raw, holdID)
	}
	return r.str("hold_token")
}

// httpInputsAndRelease: a missing field is a 400 naming it; lowerCamel names
// and unknown fields are accepted; DELETE and POST :release free a hold.
func httpInputsAndRelease(t *testing.T, base, show string) {
	holds := base + "/v1/shows/" + show + "/holds"
	booked := map[string]string{"A1": "BOOKED", "A2": "BOOKED"}
	r := httpCall(t, "POST", holds, `{"seat_ids":["A5"],"client_id":"alice"}`).
		wantStatus(t, "POST holds without request_id", http.StatusBadRequest)
	named := false
	for _, d := range r.details("google.rpc.BadRequest") {
		vs, _ := d["field_violations"].([]any)
		for _, v := range vs {
			m, _ := v.(map[string]any)
			named = named || m["field"] == "request_id"
		}
	}
	if !named || !strings.Contains(r.str("message"), "request_id") {
		t.Errorf("400 body %s does not name request_id (message and field violation)", r.raw)
	}

	// An unknown field is refused with its name, never ignored: a typo
	// ("ttl") must not become a silent default.
	r = httpCall(t, "POST", holds, `{"seatIds":["B1","B2"],"clientId":"carol","requestId":"r1","ttlSeconds":60,"surprise":{"x":1}}`).
		wantStatus(t, "POST holds with an unknown field", http.StatusBadRequest)
	if !strings.Contains(r.str("message"), "surprise") {
		t.Errorf("POST holds with an unknown field = %s, want the message to name surprise", r.raw)
	}
	r = httpCall(t, "POST", holds, `{"seatIds":["B1","B2"],"clientId":"carol","requestId":"r1","ttlSeconds":60}`).
		wantStatus(t, "POST holds with lowerCamel names", http.StatusOK)
	carol, carolToken := r.str("hold_id"), r.str("hold_token")
	wantHTTPSeats(t, "after carol's hold", httpSeats(t, base, show),
		map[string]string{"A1": "BOOKED", "A2": "BOOKED", "B1": "HELD", "B2": "HELD"})
	r = httpCall(t, "DELETE", holds+"/"+carol+"?client_id=carol&request_id=r2&hold_token="+carolToken, "").
		wantStatus(t, "DELETE carol's hold", http.StatusOK)
	if r.str("state") != "HOLD_STATE_CANCELLED" {
		t.Errorf("DELETE carol's hold = %s, want state HOLD_STATE_CANCELLED", r.raw)
	}
	wantHTTPSeats(t, "after DELETE", httpSeats(t, base, show), booked)

	r = httpCall(t, "POST", holds, `{"seat_ids":["C1"],"client_id":"dave","request_id":"r1"}`).
		wantStatus(t, "POST holds C1 by dave", http.StatusOK)
	dave, daveToken := r.str("hold_id"), r.str("hold_token")
	r = httpCall(t, "POST", holds+"/"+dave+":extend", `{"client_id":"dave","request_id":"r2","hold_token":"`+daveToken+`","ttl_seconds":600}`).
		wantStatus(t, "POST :extend of dave's hold", http.StatusOK)
	if exp, err := time.Parse(time.RFC3339Nano, r.str("expires_at")); err != nil || time.Until(exp) < 9*time.Minute {
		t.Errorf("POST :extend by 600 s = %s, want expires_at about 10 minutes ahead", r.raw)
	}
	httpCall(t, "POST", holds+"/"+dave+":release", `{"client_id":"dave","request_id":"r3","hold_token":"`+daveToken+`"}`).
		wantStatus(t, "POST :release of dave's hold", http.StatusOK)
	wantHTTPSeats(t, "after POST :release", httpSeats(t, base, show), booked)

	// Best available: two seats side by side, returned with their price.
	r = httpCall(t, "POST", holds, `{"count":2,"client_id":"erin","request_id":"r1"}`).
		wantStatus(t, "POST holds count=2", http.StatusOK)
	seats, _ := r.body["seat_ids"].([]any)
	if len(seats) != 2 || r.str("amount_minor") == "" || r.str("amount_minor") == "0" {
		t.Errorf("POST holds count=2 = %s, want two seats and an amount", r.raw)
	}
	httpCall(t, "POST", holds, `{"count":11,"client_id":"erin","request_id":"r2"}`).
		wantStatus(t, "POST holds count=11", http.StatusBadRequest)
}

// A follower learns that an entry is committed with the leader's next
// append, a CommitTimeout or two later when nothing else is written: a stale
// seat map read through it right after CreateShow must still find the show
// (the follower asks its leader instead of answering "not found").
func TestStaleSeatMapFindsAShowJustCreated(t *testing.T) {
	c := startCluster(t, false, func(cfg *nodeConfig) { cfg.Raft.CommitTimeout = 3 * time.Second })
	for k := 0; k < 3; k++ {
		show := fmt.Sprintf("fresh-%d", k)
		c.createShow(k, show)
		for i := range c.peers {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			sm, err := c.clients[i].GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show, Consistency: ledgerpb.Consistency_STALE, StatesOnly: true})
			cancel()
			if err != nil {
				t.Fatalf("STALE GetSeatMap(%s) via %s right after CreateShow: %s", show, c.peers[i].ID, outcomeOf(err))
			}
			if len(sm.SeatStates) == 0 || sm.Free == 0 {
				t.Fatalf("STALE GetSeatMap(%s) via %s: %d seat states, %d free", show, c.peers[i].ID, len(sm.SeatStates), sm.Free)
			}
		}
	}
}
