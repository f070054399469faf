// This file proves the client's automatic batching against fake nodes: a
// lone call goes out at once as a Batch of one; calls made while a Batch
// is in flight queue and go out together in the next; each caller gets
// its own response or its own status; a call a node answers NOT_LEADER in
// a batch is retried at another node as the unary call is; a caller whose
// ctx ends leaves, and a call still queued is never sent; a node that
// answers Batch Unimplemented gets unary calls from then on; NoBatching,
// call options or extra metadata send a call alone; with BatchesInFlight 2
// a second call goes out at once while one Batch is in flight.
package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// batchNode serves Batch: each Hold answers HoldId = request_id, or, for a
// request id starting "bad", SEATS_TAKEN naming it; with gate set each
// Batch waits for a token from it first. It records each Batch's request
// ids and counts unary Holds.
type batchNode struct {
	ledgerpb.UnimplementedBookingServer
	gate    chan struct{}
	arrived chan []string // each Batch's request ids as it arrives, if set
	// notLeader answers NOT_LEADER to holds whose request id starts "move".
	notLeader bool
	unary     atomic.Int64
	mu        struct {
		sync.Mutex
		batches [][]string
	}
}

func (n *batchNode) Batch(ctx context.Context, req *ledgerpb.BatchRequest) (*ledgerpb.BatchResponse, error) {
	var ids []string
	for _, c := range req.Calls {
		ids = append(ids, c.GetHold().GetRequestId())
	}
	n.mu.Lock()
	n.mu.batches = append(n.mu.batches, ids)
	n.mu.Unlock()
	if n.arrived != nil {
		n.arrived <- ids
	}
	if n.gate != nil {
		select {
		case <-n.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	resp := &ledgerpb.BatchResponse{}
	for _, c := range req.Calls {
		r, err := n.hold(c.GetHold())
		if err != nil {
			resp.Results = append(resp.Results, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Error{Error: status.Convert(err).Proto()}})
			continue
		}
		resp.Results = append(resp.Results, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Hold{Hold: r}})
	}
	return resp, nil
}

func (n *batchNode) Hold(_ context.Context, req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	n.unary.Add(1)
	return n.hold(req)
}

func (n *batchNode) hold(req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	switch {
	case strings.HasPrefix(req.RequestId, "bad"):
		st, _ := status.New(codes.Aborted, "taken for "+req.RequestId).WithDetails(&errdetails.ErrorInfo{Reason: "SEATS_TAKEN", Domain: "seatledger"})
		return nil, st.Err()
	case n.notLeader && strings.HasPrefix(req.RequestId, "move"):
		return nil, unavailable("NOT_LEADER")
	}
	return &ledgerpb.HoldResponse{HoldId: req.RequestId}, nil
}

func (n *batchNode) batches() [][]string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.mu.batches)
}

// oldNode serves no Batch, as a node before it: Unimplemented, counted.
type oldNode struct {
	batchNode
	batchCalls atomic.Int64
}

func (n *oldNode) Batch(context.Context, *ledgerpb.BatchRequest) (*ledgerpb.BatchResponse, error) {
	n.batchCalls.Add(1)
	return nil, status.Error(codes.Unimplemented, "unknown method Batch for service seatledger.v1.Booking")
}

// serve starts each server on its own port and returns a client whose
// seeds they are, configured by cfg's other fields.
func serve(t *testing.T, cfg Config, servers ...ledgerpb.BookingServer) *Client {
	t.Helper()
	for _, srv := range servers {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		ledgerpb.RegisterBookingServer(s, srv)
		go s.Serve(ln)
		t.Cleanup(s.Stop)
		cfg.Endpoints = append(cfg.Endpoints, ln.Addr().String())
	}
	cfg.RefreshInterval = time.Hour
	cfg.DialOptions = []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}
	c, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func holdReq(rid string) *ledgerpb.HoldRequest {
	return &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: rid}
}

// arrival waits for the next Batch to arrive at n.
func arrival(t *testing.T, n *batchNode) []string {
	t.Helper()
	select {
	case ids := <-n.arrived:
		return ids
	case <-time.After(5 * time.Second):
		t.Fatal("no Batch arrived")
		return nil
	}
}

// queued waits until the client's batcher for its only seed has want
// calls queued.
func queued(t *testing.T, c *Client, want int) {
	t.Helper()
	b := c.batcherOf(c.seeds[0])
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		b.mu.Lock()
		n := len(b.mu.queue)
		b.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d calls queued, want %d", n, want)
		}
	}
}

func TestLoneCallIsSentAtOnce(t *testing.T) {
	n := &batchNode{gate: make(chan struct{}), arrived: make(chan []string, 1)}
	c := serve(t, Config{}, n)
	errc := make(chan error, 1)
	go func() {
		_, err := c.Booking().Hold(t.Context(), holdReq("r1"))
		errc <- err
	}()
	// It arrives while the gate holds it: nothing waited for a second call
	// or a timer.
	if ids := arrival(t, n); !slices.Equal(ids, []string{"r1"}) {
		t.Errorf("the lone call arrived as a Batch of %v, want [r1]", ids)
	}
	close(n.gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if b, calls := c.BatchStats(); b != 1 || calls != 1 {
		t.Errorf("BatchStats = %d batches, %d calls; want 1, 1", b, calls)
	}
}

func TestConcurrentCallsShareABatch(t *testing.T) {
	n := &batchNode{gate: make(chan struct{}, 2), arrived: make(chan []string, 2)}
	c := serve(t, Config{}, n)
	const callers = 20
	type answer struct {
		rid string
		r   *ledgerpb.HoldResponse
		err error
	}
	answers := make(chan answer, callers+1)
	hold := func(rid string) {
		r, err := c.Booking().Hold(t.Context(), holdReq(rid))
		answers <- answer{rid, r, err}
	}
	go hold("first")
	arrival(t, n) // in flight: the rest queue behind it
	for i := range callers {
		rid := fmt.Sprintf("ok-%d", i)
		if i%3 == 0 {
			rid = fmt.Sprintf("bad-%d", i)
		}
		go hold(rid)
	}
	queued(t, c, callers)
	n.gate <- struct{}{}
	if ids := arrival(t, n); len(ids) != callers {
		t.Errorf("the second Batch carried %d calls, want the %d queued", len(ids), callers)
	}
	n.gate <- struct{}{}
	for range callers + 1 {
		a := <-answers
		if strings.HasPrefix(a.rid, "bad") {
			if Reason(a.err) != "SEATS_TAKEN" || status.Convert(a.err).Message() != "taken for "+a.rid {
				t.Errorf("Hold(%s) = %v, want its own SEATS_TAKEN", a.rid, a.err)
			}
		} else if a.err != nil || a.r.HoldId != a.rid {
			t.Errorf("Hold(%s) = %v, %v; want hold %s", a.rid, a.r, a.err, a.rid)
		}
	}
	if b, calls := c.BatchStats(); b != 2 || calls != callers+1 {
		t.Errorf("BatchStats = %d batches, %d calls; want 2, %d", b, calls, callers+1)
	}
	if n.unary.Load() != 0 {
		t.Errorf("%d unary Holds, want none", n.unary.Load())
	}
}

func TestBatchedCallOfAMovedLeaderIsRetried(t *testing.T) {
	moved, ok := &batchNode{notLeader: true}, &batchNode{}
	c := serve(t, Config{}, moved, ok)
	var wg sync.WaitGroup
	for i := range 40 {
		rid := fmt.Sprintf("move-%d", i)
		if i%2 == 0 {
			rid = fmt.Sprintf("stay-%d", i)
		}
		wg.Go(func() {
			r, err := c.Booking().Hold(t.Context(), holdReq(rid))
			if err != nil || r.HoldId != rid {
				t.Errorf("Hold(%s) = %v, %v; want hold %s", rid, r, err, rid)
			}
		})
	}
	wg.Wait()
	sawMove := func(n *batchNode) bool {
		for _, b := range n.batches() {
			if slices.ContainsFunc(b, func(id string) bool { return strings.HasPrefix(id, "move") }) {
				return true
			}
		}
		return false
	}
	if !sawMove(moved) || !sawMove(ok) {
		t.Errorf("moved-leader calls at the old node: %t, at the other: %t; want both (a refusal, then the retry)", sawMove(moved), sawMove(ok))
	}
}

func TestCancelledCallerLeavesTheBatch(t *testing.T) {
	n := &batchNode{gate: make(chan struct{}, 2), arrived: make(chan []string, 2)}
	c := serve(t, Config{}, n)
	first := make(chan error, 1)
	firstCtx, cancelFirst := context.WithCancel(t.Context())
	go func() {
		_, err := c.Booking().Hold(firstCtx, holdReq("first"))
		first <- err
	}()
	arrival(t, n)
	ctx, cancel := context.WithCancel(t.Context())
	left := make(chan error, 1)
	go func() {
		_, err := c.Booking().Hold(ctx, holdReq("left"))
		left <- err
	}()
	queued(t, c, 1)
	cancel()
	if err := <-left; status.Code(err) != codes.Canceled {
		t.Errorf("queued call whose ctx ended = %v, want Canceled", err)
	}
	stayed := make(chan error, 1)
	go func() {
		_, err := c.Booking().Hold(t.Context(), holdReq("stayed"))
		stayed <- err
	}()
	queued(t, c, 2) // the abandoned one is still in the queue, marked
	// The call in flight: its caller leaves too (its outcome is unknown).
	cancelFirst()
	if err := <-first; status.Code(err) != codes.Canceled {
		t.Errorf("call in flight whose ctx ended = %v, want Canceled", err)
	}
	n.gate <- struct{}{}
	if ids := arrival(t, n); !slices.Equal(ids, []string{"stayed"}) {
		t.Errorf("next Batch = %v, want only [stayed]: a call whose caller left is never sent", ids)
	}
	n.gate <- struct{}{}
	if err := <-stayed; err != nil {
		t.Errorf("Hold(stayed) = %v", err)
	}
}

func TestOldNodeGetsUnaryCalls(t *testing.T) {
	n := &oldNode{}
	c := serve(t, Config{}, n)
	for i := range 3 {
		rid := fmt.Sprintf("r%d", i)
		r, err := c.Booking().Hold(t.Context(), holdReq(rid))
		if err != nil || r.HoldId != rid {
			t.Fatalf("Hold(%s) at a node without Batch = %v, %v", rid, r, err)
		}
	}
	if n.batchCalls.Load() != 1 || n.unary.Load() != 3 {
		t.Errorf("%d Batch calls and %d unary Holds, want 1 (then never again) and 3", n.batchCalls.Load(), n.unary.Load())
	}
}

func TestCallsThatGoAlone(t *testing.T) {
	n := &batchNode{}
	off := serve(t, Config{NoBatching: true}, n)
	if _, err := off.Booking().Hold(t.Context(), holdReq("a")); err != nil {
		t.Fatal(err)
	}
	on := serve(t, Config{}, n)
	ctx := metadata.AppendToOutgoingContext(t.Context(), "x-trace", "1")
	if _, err := on.Booking().Hold(ctx, holdReq("b")); err != nil {
		t.Fatal(err)
	}
	if _, err := on.Booking().Hold(t.Context(), holdReq("c"), grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	if got := len(n.batches()); n.unary.Load() != 3 || got != 0 {
		t.Errorf("%d unary Holds and %d Batches, want 3 and 0 (batching off, extra metadata, a call option)", n.unary.Load(), got)
	}
	// A first send time the caller fixed travels in the call.
	if _, err := on.Booking().Hold(WithFirstSent(t.Context(), time.UnixMilli(1767225600000)), holdReq("d")); err != nil {
		t.Fatal(err)
	}
	if got := len(n.batches()); got != 1 {
		t.Errorf("a call with WithFirstSent went in %d Batches, want 1", got)
	}
}

func TestBatchesInFlight(t *testing.T) {
	n := &batchNode{gate: make(chan struct{}, 3), arrived: make(chan []string, 3)}
	c := serve(t, Config{BatchesInFlight: 2}, n)
	errs := make(chan error, 4)
	hold := func(rid string) {
		_, err := c.Booking().Hold(t.Context(), holdReq(rid))
		errs <- err
	}
	go hold("r1")
	arrival(t, n)
	go hold("r2")
	if ids := arrival(t, n); !slices.Equal(ids, []string{"r2"}) {
		t.Errorf("with one Batch in flight of 2 allowed, the next call arrived as %v, want [r2] at once", ids)
	}
	go hold("r3")
	go hold("r4")
	queued(t, c, 2)
	n.gate <- struct{}{}
	if ids := arrival(t, n); len(ids) != 2 {
		t.Errorf("after a Batch returned, the next carried %v, want the 2 queued", ids)
	}
	n.gate <- struct{}{}
	n.gate <- struct{}{}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestAnswerRefusesAResultOfAnotherKind: a batch result that does not fit
// its call is the client's ErrBadReply, not a status it made up, and not
// Gone (the node answered).
func TestAnswerRefusesAResultOfAnotherKind(t *testing.T) {
	res := rawOf(t, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Confirm{Confirm: &ledgerpb.ConfirmResponse{}}})
	err := answer(res, &ledgerpb.HoldResponse{})
	if !errors.Is(err, ErrBadReply) {
		t.Fatalf("answer(confirm result, hold reply) = %v, want ErrBadReply", err)
	}
	if Gone(err) {
		t.Errorf("Gone(%v) = true, want false", err)
	}
	if _, ok := status.FromError(err); ok {
		t.Errorf("answer made a status: %v", err)
	}
	if err := answer(rawOf(t, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Hold{Hold: &ledgerpb.HoldResponse{HoldId: "h1"}}}), &ledgerpb.HoldResponse{}); err != nil {
		t.Errorf("answer(hold result, hold reply) = %v", err)
	}
	if err := answer(rawOf(t, &ledgerpb.BatchResult{}), &ledgerpb.HoldResponse{}); !errors.Is(err, ErrBadReply) {
		t.Errorf("answer(no result, hold reply) = %v, want ErrBadReply", err)
	}
	ok := rawOf(t, &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Error{Error: &spb.Status{}}})
	if err := answer(ok, &ledgerpb.HoldResponse{}); !errors.Is(err, ErrBadReply) {
		t.Errorf("answer(an OK status, hold reply) = %v, want ErrBadReply", err)
	}
}

// rawOf is res as a Batch's answer hands it to its caller.
func rawOf(t *testing.T, res *ledgerpb.BatchResult) rawResult {
	t.Helper()
	b, err := proto.Marshal(&ledgerpb.BatchResponse{Results: []*ledgerpb.BatchResult{res}})
	if err != nil {
		t.Fatal(err)
	}
	var r rawBatchResponse
	if err := r.parse(b); err != nil || len(r.results) != 1 {
		t.Fatalf("parse(%v) = %v, %d results", res, err, len(r.results))
	}
	return r.results[0]
}
