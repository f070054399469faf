// This file proves forwarding in batches (forward.go) and the Peer
// service's ProposeBatch (peer.go) on two real nodes over real gRPC on
// 127.0.0.1: many concurrent commands forwarded to one leader arrive in
// fewer calls than commands, each waiter with its own answer; a call cut in
// transit after the leader applied it answers OUTCOME_UNKNOWN for each of
// its commands, and retries with the same request ids get the first
// results (exactly once); a waiter whose ctx ends returns at once while the
// call completes for the others; a node without ProposeBatch (an older
// version) is sent single Proposes; ProposeBatch answers each item as
// Propose does, an empty batch with nothing and a batch over the cap with
// INVALID and nothing proposed. Then, without a network, the queue's rules:
// batches split at forwardBatchMax and forwardBatchBytesMax, a stalled call
// does not hold back new ones, and a command whose waiter left before it
// was sent is never sent.
package shard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// fwdWait bounds every wait of these tests.
const fwdWait = 10 * time.Second

// fwdGroups is the number of groups of the test cluster, all on n1.
const fwdGroups = 2

// fwdCluster is two real nodes: n1 hosts every group (one voter each) and
// serves the Peer service on a real gRPC server; n2 hosts none, so its
// router (via) forwards every command to n1, through a TCP proxy the tests
// can cut.
type fwdCluster struct {
	t     *testing.T
	lead  *Router // n1's
	via   *Router // n2's
	proxy *cutProxy
	// leadAddr is n1's gRPC listener (not through the proxy).
	leadAddr string
	// reg holds via's forwarding metrics.
	reg *prometheus.Registry
	// hook, if set, wraps n1's handling of every Peer call.
	hook atomic.Pointer[grpc.UnaryServerInterceptor]

	mu struct {
		sync.Mutex
		calls    map[string]int // Peer calls n1 served, by method
		commands map[string]int // commands in them
	}
}

// startFwdCluster starts the two nodes.
func startFwdCluster(t *testing.T) *fwdCluster {
	t.Helper()
	c := &fwdCluster{t: t, reg: prometheus.NewRegistry()}
	c.mu.calls, c.mu.commands = map[string]int{}, map[string]int{}
	raftLns := []net.Listener{fwdListen(t), fwdListen(t)}
	grpcLn := fwdListen(t)
	c.leadAddr = grpcLn.Addr().String()
	c.proxy = startCutProxy(t, c.leadAddr)
	n1 := raftnode.Peer{ID: "n1", RaftAddr: raftLns[0].Addr().String(), GRPCAddr: c.leadAddr}
	n2 := raftnode.Peer{ID: "n2", RaftAddr: raftLns[1].Addr().String(), GRPCAddr: fwdListen(t).Addr().String()}
	dialN1 := n1
	dialN1.GRPCDial = c.proxy.addr()
	groups := map[uint32][]string{}
	for g := range uint32(fwdGroups) {
		groups[g] = []string{"n1"}
	}
	dir := t.TempDir()
	for i, peers := range [][]raftnode.Peer{{n1, n2}, {dialN1, n2}} {
		self := peers[i]
		rn, err := raftnode.Start(raftnode.Config{
			NodeID: self.ID, DataDir: filepath.Join(dir, self.ID), RaftAddr: self.RaftAddr, Listener: raftLns[i], ClusterID: raftnode.ClusterID{1},
			Peers: peers, Groups: groups, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("raftnode.Start(%s): %v", self.ID, err)
		}
		r := NewRouter(rn, Map{Groups: fwdGroups})
		t.Cleanup(func() {
			r.Close()
			rn.Close()
		})
		if i == 0 {
			c.lead = r
			continue
		}
		if err := r.SetMetrics(c.reg); err != nil {
			t.Fatal(err)
		}
		c.via = r
	}
	gs := grpc.NewServer(grpc.ChainUnaryInterceptor(c.intercept))
	ledgerpb.RegisterPeerServer(gs, c.lead.PeerServer())
	go gs.Serve(grpcLn)
	t.Cleanup(gs.Stop)
	for g := range uint32(fwdGroups) {
		c.waitLeader(g)
	}
	return c
}

func fwdListen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

func (c *fwdCluster) waitLeader(id uint32) {
	c.t.Helper()
	for deadline := time.Now().Add(fwdWait); ; time.Sleep(10 * time.Millisecond) {
		if g, err := c.lead.node.Group(id); err == nil && g.IsLeader() {
			return
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("n1 does not lead group %d after %v", id, fwdWait)
		}
	}
}

// intercept counts the Peer calls n1 serves and runs the test's hook.
func (c *fwdCluster) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	n := 1
	if b, ok := req.(*ledgerpb.ProposeBatchRequest); ok {
		n = len(b.Requests)
	}
	c.mu.Lock()
	c.mu.calls[info.FullMethod]++
	c.mu.commands[info.FullMethod] += n
	c.mu.Unlock()
	if hook := c.hook.Load(); hook != nil {
		return (*hook)(ctx, req, info, h)
	}
	return h(ctx, req)
}

func (c *fwdCluster) setHook(h grpc.UnaryServerInterceptor) { c.hook.Store(&h) }

// served returns the calls and commands n1 served by method.
func (c *fwdCluster) served(method string) (calls, commands int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.calls[method], c.mu.commands[method]
}

// queued is the number of commands via's forwarder to n1 holds in its queue.
func (c *fwdCluster) queued() int {
	f, err := c.via.forwarder("n1")
	if err != nil {
		c.t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.mu.queue)
}

// shows creates one show in each group (rows A-J of 20 seats) and returns
// their ids, by group.
func (c *fwdCluster) shows(prefix string) []string {
	c.t.Helper()
	ids := make([]string, fwdGroups)
	for i := 0; slices.Contains(ids, ""); i++ {
		id := fmt.Sprintf("%s-%d", prefix, i)
		if g := c.lead.smap.GroupFor(id); ids[g] == "" {
			ids[g] = id
		}
	}
	for _, id := range ids {
		show := &ledgerpb.Show{ShowId: id, Title: "Forwarding test",
			Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 1000, Currency: "EUR"}}}
		for _, r := range "ABCDEFGHIJ" {
			show.Rows = append(show.Rows, &ledgerpb.Row{Name: string(r), Seats: 20, Category: "std"})
		}
		key := make([]byte, fsm.TokenKeyBytes)
		rand.Read(key)
		cmd := &ledgerpb.Command{ClientId: "admin", RequestId: "create-" + id,
			Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show, TokenKey: key}}}
		ctx, cancel := context.WithTimeout(c.t.Context(), fwdWait)
		res, err := c.lead.Propose(ctx, id, cmd)
		cancel()
		if err != nil || res.Code != ledgerpb.Code_CODE_OK {
			c.t.Fatalf("CreateShow(%s) = %v, %v, want OK", id, res, err)
		}
	}
	return ids
}

// fwdHold is command i of a test: a hold of one seat by a client of its
// own, in the show of group i%fwdGroups.
type fwdHold struct {
	show string
	cmd  *ledgerpb.Command
}

func fwdHolds(shows []string, n int) []fwdHold {
	out := make([]fwdHold, n)
	for i := range out {
		k := i / fwdGroups
		seat := fmt.Sprintf("%c%d", 'A'+k/20, k%20+1)
		client := fmt.Sprintf("fan-%d", i)
		out[i] = fwdHold{show: shows[i%fwdGroups], cmd: &ledgerpb.Command{ClientId: client, RequestId: "hold-" + seat,
			Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: shows[i%fwdGroups], SeatIds: []string{seat}}}}}
	}
	return out
}

// concurrently runs f(i) for i in [0, n) on n goroutines and waits.
func concurrently(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

// gate returns a hook that holds every ProposeBatch call until open is
// closed, counting the commands of the calls it holds.
func gate(open <-chan struct{}, held *atomic.Int64) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if b, ok := req.(*ledgerpb.ProposeBatchRequest); ok {
			held.Add(int64(len(b.Requests)))
			select {
			case <-open:
			case <-ctx.Done():
			}
		}
		return h(ctx, req)
	}
}

// waitFor polls cond until it holds, or fails the test after fwdWait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(fwdWait); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", fwdWait, what)
		}
	}
}

func TestForwardBatchesConcurrentCommands(t *testing.T) {
	c := startFwdCluster(t)
	holds := fwdHolds(c.shows("batch"), 200)
	// Hold the calls until every command is in one or queued, so that the
	// test does not depend on how fast this machine starts goroutines.
	open, held := make(chan struct{}), &atomic.Int64{}
	c.setHook(gate(open, held))
	results := make([]*ledgerpb.Result, len(holds))
	errs := make([]error, len(holds))
	done := make(chan struct{})
	go func() {
		defer close(done)
		concurrently(len(holds), func(i int) {
			ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
			defer cancel()
			results[i], errs[i] = c.via.Propose(ctx, holds[i].show, holds[i].cmd)
		})
	}()
	waitFor(t, "not every command reached a call or the queue", func() bool {
		return int(held.Load())+c.queued() >= len(holds)
	})
	close(open)
	<-done
	for i, h := range holds {
		seat := h.cmd.GetHold().SeatIds[0]
		if errs[i] != nil || results[i].Code != ledgerpb.Code_CODE_OK || results[i].Replayed ||
			!slices.Equal(results[i].SeatIds, []string{seat}) || results[i].HoldId == "" {
			t.Fatalf("Hold(%s %s) by %s = %v, %v, want OK with its own seat", h.show, seat, h.cmd.ClientId, results[i], errs[i])
		}
	}
	calls, commands := c.served(ledgerpb.Peer_ProposeBatch_FullMethodName)
	t.Logf("n1 served %d commands in %d ProposeBatch calls", commands, calls)
	if commands != len(holds) || calls > len(holds)/4 {
		t.Errorf("n1 served %d commands in %d ProposeBatch calls, want %d in at most %d", commands, calls, len(holds), len(holds)/4)
	}
	if single, _ := c.served(ledgerpb.Peer_Propose_FullMethodName); single != 0 {
		t.Errorf("n1 served %d Propose calls, want none (n1 takes batches)", single)
	}
	h := histogramOf(t, c.reg, "seatledger_forward_batch_commands")
	if int(h.GetSampleCount()) != calls || int(h.GetSampleSum()) != commands {
		t.Errorf("seatledger_forward_batch_commands: %d calls, %v commands; want %d, %d", h.GetSampleCount(), h.GetSampleSum(), calls, commands)
	}
}

func TestForwardTransportFailureIsUnknownThenExactlyOnce(t *testing.T) {
	c := startFwdCluster(t)
	holds := fwdHolds(c.shows("cut"), 40)
	// While armed, every ProposeBatch call is applied on n1 and then cut
	// in transit: the answers n1 made are lost on the way back. first
	// keeps the first hold n1 made for each client, armed or not (a call
	// n1 read just before a cut may still be served after it).
	var armed atomic.Bool
	armed.Store(true)
	var firstMu sync.Mutex
	first := map[string]string{} // client id -> hold id
	c.setHook(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		resp, err := h(ctx, req)
		if b, ok := resp.(*ledgerpb.ProposeBatchResponse); ok {
			firstMu.Lock()
			for i, r := range b.Responses {
				client := req.(*ledgerpb.ProposeBatchRequest).Requests[i].Command.ClientId
				if _, seen := first[client]; !seen && r.Result.GetCode() == ledgerpb.Code_CODE_OK {
					first[client] = r.Result.HoldId
				}
			}
			firstMu.Unlock()
			if armed.Load() {
				c.proxy.cut()
			}
		}
		return resp, err
	})
	concurrently(len(holds), func(i int) {
		ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
		defer cancel()
		group := c.via.smap.GroupFor(holds[i].show)
		res, err := c.via.proposeOnce(ctx, group, holds[i].cmd)
		if !errors.Is(err, raftnode.ErrOutcomeUnknown) || !errors.Is(err, errForward) || !retryable(err) {
			t.Errorf("proposeOnce(%s) across a cut connection = %v, %v; want a retryable outcome unknown of a failed forward", holds[i].cmd.ClientId, res, err)
		}
	})
	armed.Store(false)
	firstMu.Lock()
	applied := len(first)
	firstMu.Unlock()
	if applied == 0 {
		t.Fatal("n1 applied no command before the cuts: the test proves nothing")
	}
	// The router's retries, with the same request ids, must get the holds
	// n1 made first, never second ones.
	replays := 0
	concurrently(len(holds), func(i int) {
		ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
		defer cancel()
		res, err := c.via.Propose(ctx, holds[i].show, holds[i].cmd)
		client := holds[i].cmd.ClientId
		firstMu.Lock()
		defer firstMu.Unlock()
		switch {
		case err != nil || res.Code != ledgerpb.Code_CODE_OK:
			t.Errorf("retry of %s's hold = %v, %v, want OK", client, res, err)
		case res.HoldId != first[client]:
			t.Errorf("retry of %s's hold = hold %s (replayed %v), want the first hold n1 made, %s", client, res.HoldId, res.Replayed, first[client])
		case res.Replayed:
			replays++
		}
	})
	t.Logf("%d of %d commands applied before the cuts ended; %d retries were replays", applied, len(holds), replays)
	if replays < applied {
		t.Errorf("%d retries were replays, want at least %d (one per command applied before the cuts ended)", replays, applied)
	}
}

func TestForwardWaiterLeavesAlone(t *testing.T) {
	c := startFwdCluster(t)
	holds := fwdHolds(c.shows("leave"), 2)
	open, held := make(chan struct{}), &atomic.Int64{}
	c.setHook(gate(open, held))
	actx, cancelA := context.WithCancel(t.Context())
	type answer struct {
		res *ledgerpb.Result
		err error
	}
	a, b := make(chan answer, 1), make(chan answer, 1)
	for i, ch := range []chan answer{a, b} {
		ctx := t.Context()
		if i == 0 {
			ctx = actx
		}
		go func() {
			res, err := c.via.proposeOnce(ctx, c.via.smap.GroupFor(holds[i].show), holds[i].cmd)
			ch <- answer{res, err}
		}()
	}
	waitFor(t, "the two commands were not sent", func() bool { return held.Load() == 2 })
	cancelA()
	select {
	case got := <-a:
		if !errors.Is(got.err, raftnode.ErrOutcomeUnknown) || !errors.Is(got.err, errForward) {
			t.Errorf("a sent command whose waiter left = %v, %v; want outcome unknown", got.res, got.err)
		}
	case <-time.After(fwdWait):
		t.Fatal("a waiter whose ctx ended is still waiting for its call")
	}
	select {
	case got := <-b:
		t.Fatalf("the other waiter returned before its call was answered: %v, %v", got.res, got.err)
	default:
	}
	close(open)
	if got := <-b; got.err != nil || got.res.Code != ledgerpb.Code_CODE_OK {
		t.Errorf("the other waiter = %v, %v, want OK", got.res, got.err)
	}
	// The call went on without the waiter that left: its hold was made.
	ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
	defer cancel()
	if res, err := c.via.Propose(ctx, holds[0].show, holds[0].cmd); err != nil || !res.Replayed {
		t.Errorf("retry of the left waiter's hold = %v, %v, want a replay of the hold its call made", res, err)
	}
}

func TestProposeBatchAnswersLikePropose(t *testing.T) {
	c := startFwdCluster(t)
	shows := c.shows("serve")
	conn, err := grpc.NewClient(c.leadAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	peer := ledgerpb.NewPeerClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
	defer cancel()
	hold := func(client, seat string) *ledgerpb.Command {
		return &ledgerpb.Command{ClientId: client, RequestId: "r-" + seat,
			Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: shows[0], SeatIds: []string{seat}}}}
	}
	g := c.lead.smap.GroupFor(shows[0])
	reqs := []*ledgerpb.ProposeRequest{
		{GroupId: g, Command: hold("ann", "A1"), Hops: 1},
		{GroupId: g, Command: hold("bob", "A1"), Hops: 1}, // a result: SEATS_TAKEN
		{GroupId: g, Command: &ledgerpb.Command{Op: &ledgerpb.Command_Expire{Expire: &ledgerpb.ExpireCmd{}}}},
		{GroupId: g, Command: &ledgerpb.Command{RequestId: "no-client", Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: shows[0]}}}},
		{GroupId: 99, Command: hold("cay", "A2"), Hops: 1},
		{GroupId: g},
	}
	got, err := peer.ProposeBatch(ctx, &ledgerpb.ProposeBatchRequest{Requests: reqs})
	if err != nil || got.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK || len(got.Responses) != len(reqs) {
		t.Fatalf("ProposeBatch of %d = %v, %v; want OK with %d answers", len(reqs), got, err, len(reqs))
	}
	for i, r := range reqs {
		// Propose again, one at a time: the holds are replays by now.
		want, err := peer.Propose(ctx, r)
		if err != nil {
			t.Fatalf("Propose(%d) = %v", i, err)
		}
		if g := got.Responses[i]; g.Status != want.Status || g.LeaderId != want.LeaderId || g.Result.GetCode() != want.Result.GetCode() {
			t.Errorf("ProposeBatch item %d = %v %q %v, want Propose's %v %q %v", i, g.Status, g.LeaderId, g.Result.GetCode(), want.Status, want.LeaderId, want.Result.GetCode())
		}
	}
	// Two holds of A1 in one batch are proposed concurrently: one wins.
	codes := []ledgerpb.Code{got.Responses[0].Result.GetCode(), got.Responses[1].Result.GetCode()}
	slices.Sort(codes)
	if want := []ledgerpb.Code{ledgerpb.Code_CODE_OK, ledgerpb.Code_CODE_SEATS_TAKEN}; !slices.Equal(codes, want) {
		t.Errorf("two holds of A1 in one batch = %v, want one OK and one SEATS_TAKEN", codes)
	}

	if empty, err := peer.ProposeBatch(ctx, &ledgerpb.ProposeBatchRequest{}); err != nil ||
		empty.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK || len(empty.Responses) != 0 {
		t.Errorf("an empty ProposeBatch = %v, %v, want OK with no answers", empty, err)
	}
	big := &ledgerpb.ProposeBatchRequest{}
	for i := range forwardBatchMax + 1 {
		big.Requests = append(big.Requests, &ledgerpb.ProposeRequest{GroupId: g, Command: hold(fmt.Sprintf("big-%d", i), "J20"), Hops: 1})
	}
	refused, err := peer.ProposeBatch(ctx, big)
	if err != nil || refused.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID || len(refused.Responses) != 0 ||
		!strings.Contains(refused.Message, fmt.Sprint(forwardBatchMax)) {
		t.Errorf("a ProposeBatch of %d = %v, %v; want INVALID naming the cap %d, no answers", forwardBatchMax+1, refused, err, forwardBatchMax)
	}
	if one, err := peer.Propose(ctx, big.Requests[0]); err != nil || one.Result.GetCode() != ledgerpb.Code_CODE_OK || one.Result.Replayed {
		t.Errorf("the refused batch's first hold, proposed alone = %v, %v; want OK and new (the batch proposed nothing)", one, err)
	}
}

// histogramOf returns the one histogram named name in reg.
func histogramOf(t *testing.T, reg *prometheus.Registry, name string) interface {
	GetSampleCount() uint64
	GetSampleSum() float64
} {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 && mf.Metric[0].Histogram != nil {
			return mf.Metric[0].Histogram
		}
	}
	t.Fatalf("no histogram %s", name)
	return nil
}

// cutProxy relays TCP connections to a target until cut closes them all;
// it accepts new ones after a cut.
type cutProxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		conns []net.Conn
	}
}

func startCutProxy(t *testing.T, target string) *cutProxy {
	p := &cutProxy{ln: fwdListen(t), target: target}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		p.ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *cutProxy) addr() string { return p.ln.Addr().String() }

func (p *cutProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		p.mu.Lock()
		p.mu.conns = append(p.mu.conns, in, out)
		p.mu.Unlock()
		for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
			p.wg.Go(func() {
				io.Copy(pair[0], pair[1])
				pair[0].Close()
				pair[1].Close()
			})
		}
	}
}

// cut closes every relayed connection.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.mu.conns {
		c.Close()
	}
	p.mu.conns = nil
}

func TestForwardTakeSplitsBatches(t *testing.T) {
	f := &forwarder{target: "n1"}
	queue := func(sizes ...int) {
		for _, n := range sizes {
			f.mu.queue = append(f.mu.queue, &forward{bytes: n, done: make(chan forwardOutcome, 1)})
		}
	}
	s := &sender{took: true}
	sizes := func(batch []*forward) []int {
		var out []int
		for _, fw := range batch {
			out = append(out, fw.bytes)
		}
		return out
	}
	for range forwardBatchMax + 88 {
		queue(10)
	}
	if b := f.take(s, time.Now()); len(b) != forwardBatchMax {
		t.Errorf("take of %d queued = %d, want forwardBatchMax %d", forwardBatchMax+88, len(b), forwardBatchMax)
	}
	if b := f.take(s, time.Now()); len(b) != 88 {
		t.Errorf("second take = %d, want the 88 left", len(b))
	}
	half := forwardBatchBytesMax / 2
	queue(half, half, 1, 2*forwardBatchBytesMax, 1)
	for i, want := range [][]int{{half, half}, {1}, {2 * forwardBatchBytesMax}, {1}} {
		if got := sizes(f.take(s, time.Now())); !slices.Equal(got, want) {
			t.Errorf("take %d by bytes = %v, want %v", i, got, want)
		}
	}
	if b := f.take(s, time.Now()); b != nil || len(f.mu.queue) != 0 {
		t.Errorf("take of an empty queue = %d commands, queue %d; want nil", len(b), len(f.mu.queue))
	}
}

func TestForwardStalledCallsDoNotCount(t *testing.T) {
	now := time.Now()
	f := &forwarder{}
	for i := range forwardCallsMax {
		since := now.Add(-time.Millisecond)
		if i%2 == 0 {
			since = now.Add(-forwardStallAfter)
		}
		f.mu.senders = append(f.mu.senders, &sender{since: since, took: true})
	}
	if got, want := f.youngLocked(now), forwardCallsMax/2; got != want {
		t.Errorf("youngLocked with half the calls stalled = %d, want %d", got, want)
	}
}

func TestForwardLeftBeforeSentIsNeverSent(t *testing.T) {
	r := NewRouter(nil, Map{Groups: 1}) // no node: nothing here may dial
	f, err := r.forwarder("n1")
	if err != nil {
		t.Fatal(err)
	}
	// forwardCallsMax young calls in flight: the command must queue.
	for range forwardCallsMax {
		f.mu.senders = append(f.mu.senders, &sender{since: time.Now().Add(time.Hour), took: true})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	cmd := &ledgerpb.Command{ClientId: "c", RequestId: "r"}
	_, err = f.propose(ctx, &ledgerpb.ProposeRequest{GroupId: 1, Command: cmd})
	if !errors.Is(err, raftnode.ErrUnavailable) || errors.Is(err, raftnode.ErrOutcomeUnknown) {
		t.Errorf("a queued command whose waiter left = %v, want unavailable (not sent), not outcome unknown", err)
	}
	if b := f.take(&sender{took: true}, time.Now()); b != nil || len(f.mu.queue) != 0 {
		t.Errorf("take after the waiter left = %d commands, want none (never sent)", len(b))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.propose(t.Context(), &ledgerpb.ProposeRequest{GroupId: 1, Command: cmd}); !errors.Is(err, raftnode.ErrUnavailable) {
		t.Errorf("propose after Close = %v, want unavailable", err)
	}
}
