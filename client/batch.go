package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Automatic batching, TigerBeetle's way: group commit with no timer. Per
// connection, a Hold, Confirm, Release, Extend or Refund goes out at once
// as a Batch of one when no Batch to that node is in flight; while one is,
// calls queue, and when it returns everything queued goes out as the next
// Batch (up to the node's limits). Config.BatchesInFlight allows more than
// one Batch in flight per node (as shard/forward.go does between nodes): a
// call then goes out at once while fewer are. A lone call on an idle client waits for
// nothing; under load one Batch carries what a node would otherwise take
// as many calls. Each caller gets its own answer, which Invoke treats as
// the unary call's (the same status, the same retries and route
// forgetting). A caller whose ctx ends leaves: a call still queued is
// never sent, one sent may yet be applied, as for a unary call whose ctx
// ended. A node that answers Batch Unimplemented (an older node) gets
// unary calls from then on.

// Limits of a Batch, the nodes' (gateway.BatchCallsMax and its byte bound).
const (
	batchCallsMax = 256
	batchBytesMax = 1 << 20
	// callBytesMax is the largest call that is batched: a larger one
	// (never a valid one) goes alone, to get the answer it would alone.
	callBytesMax = 64 << 10
	// batchTimeoutMax bounds a Batch sent for callers of whom one has no
	// deadline: nodes bound each write (5 s, forwarding included), so only
	// a wedged connection meets it, and it must not hold the calls queued
	// behind it for ever.
	batchTimeoutMax = 30 * time.Second
	// batchesInFlightMax bounds Config.BatchesInFlight: the node's streams
	// per connection are bounded too (256).
	batchesInFlightMax = 64
	// callOverheadBytes bounds what a call adds to a Batch beyond its own
	// encoding (a field tag and a length).
	callOverheadBytes = 8
)

const methodBatch = "/seatledger.v1.Booking/Batch"

// errUnbatched tells a caller to send its call alone: the node does not
// serve Batch.
var errUnbatched = errors.New("client: the node does not serve Batch")

// sizedCall is a call as a Batch carries it, with its size there; call
// nil: the call goes alone.
type sizedCall struct {
	call  *ledgerpb.BatchCall
	bytes int // its encoding, plus callOverheadBytes
}

// batchCall is one caller's call waiting in a batcher, for one attempt.
type batchCall struct {
	call     *ledgerpb.BatchCall
	bytes    int
	deadline time.Time // zero: the caller has none
	done     chan batchOutcome
	// state is guarded by batcher.mu.
	state batchState
}

type batchState int

const (
	batchQueued    batchState = iota
	batchSent                 // in a Batch: it may be applied
	batchAbandoned            // its caller left first: never sent
)

type batchOutcome struct {
	res rawResult
	err error
}

// batcher batches the calls to one connection.
type batcher struct {
	c  *Client
	cc *grpc.ClientConn
	mu struct {
		sync.Mutex
		inflight int          // Batches in flight or about to be, at most c.cfg.BatchesInFlight
		starting int          // senders started that have not taken the queue yet
		queue    []*batchCall // waiting for the next Batch, in arrival order
		unary    bool         // the node answered Batch Unimplemented
	}
}

// batchable returns the call args would be in a Batch and its size, the
// size reckoned once for every attempt, or no call when it goes alone: batching is off, the method is not one a Batch takes, the caller
// passed call options or metadata a Batch cannot carry per call, or the
// call is too large. The call states its first send time: the caller's
// (WithFirstSent) or now.
func (c *Client) batchable(ctx context.Context, method string, args any, opts []grpc.CallOption, now time.Time) sizedCall {
	if c.cfg.NoBatching || !onlyStatic(opts) {
		return sizedCall{}
	}
	call := batchCallOf(method, args)
	if call == nil {
		return sizedCall{}
	}
	sent := now.UnixMilli()
	if md, ok := metadata.FromOutgoingContext(ctx); ok && md.Len() > 0 {
		vs := md.Get(FirstSentKey)
		if md.Len() != 1 || len(vs) != 1 {
			return sizedCall{}
		}
		ms, ok := parseMillis(vs[0])
		if !ok {
			return sizedCall{} // the node's own check answers it
		}
		sent = ms
	}
	call.FirstSentAtMs = sent
	bytes := proto.Size(call) + callOverheadBytes
	if bytes > callBytesMax {
		return sizedCall{}
	}
	return sizedCall{call: call, bytes: bytes}
}

// onlyStatic reports whether opts are at most what generated clients pass
// with every call (grpc.StaticMethod, which a Batch passes too).
func onlyStatic(opts []grpc.CallOption) bool {
	for _, o := range opts {
		if _, ok := o.(grpc.StaticMethodCallOption); !ok {
			return false
		}
	}
	return true
}

// batchCallOf wraps a request of a batchable method, nil for any other.
func batchCallOf(method string, args any) *ledgerpb.BatchCall {
	switch method {
	case ledgerpb.Booking_Hold_FullMethodName:
		if a, ok := args.(*ledgerpb.HoldRequest); ok {
			return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Hold{Hold: a}}
		}
	case ledgerpb.Booking_Confirm_FullMethodName:
		if a, ok := args.(*ledgerpb.ConfirmRequest); ok {
			return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Confirm{Confirm: a}}
		}
	case ledgerpb.Booking_Release_FullMethodName:
		if a, ok := args.(*ledgerpb.ReleaseRequest); ok {
			return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Release{Release: a}}
		}
	case ledgerpb.Booking_Extend_FullMethodName:
		if a, ok := args.(*ledgerpb.ExtendRequest); ok {
			return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Extend{Extend: a}}
		}
	case ledgerpb.Booking_Refund_FullMethodName:
		if a, ok := args.(*ledgerpb.RefundRequest); ok {
			return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Refund{Refund: a}}
		}
	}
	return nil
}

// parseMillis reads a first send time as WithFirstSent writes it.
func parseMillis(v string) (int64, bool) {
	if len(v) == 0 || len(v) > 16 {
		return 0, false
	}
	var ms int64
	for i := range len(v) {
		if v[i] < '0' || v[i] > '9' {
			return 0, false
		}
		ms = ms*10 + int64(v[i]-'0')
	}
	return ms, ms > 0
}

// invoke makes one attempt of a call: alone, or through the batcher of cc
// when call.call is not nil (falling back to alone when the node serves no
// Batch).
func (c *Client) invoke(ctx context.Context, cc *grpc.ClientConn, method string, args, reply any, call sizedCall, opts []grpc.CallOption) error {
	if call.call == nil {
		var header metadata.MD
		err := cc.Invoke(ctx, method, args, reply, append(opts[:len(opts):len(opts)], grpc.Header(&header))...)
		c.noteForwarded(header)
		return err
	}
	res, err := c.batcherOf(cc).do(ctx, call)
	if errors.Is(err, errUnbatched) {
		ctx = stampFirstSent(ctx, args, time.UnixMilli(call.call.FirstSentAtMs))
		return cc.Invoke(ctx, method, args, reply, opts...)
	}
	if err != nil {
		return err
	}
	return answer(res, reply)
}

// batcherOf returns cc's batcher, made on first use.
func (c *Client) batcherOf(cc *grpc.ClientConn) *batcher {
	if b, ok := c.batchers.Load(cc); ok {
		return b.(*batcher)
	}
	b, _ := c.batchers.LoadOrStore(cc, &batcher{c: c, cc: cc})
	return b.(*batcher)
}

// do sends call in the next Batch to b's node and waits for its result;
// errUnbatched says to send it alone.
func (b *batcher) do(ctx context.Context, call sizedCall) (rawResult, error) {
	bc := &batchCall{call: call.call, bytes: call.bytes, done: make(chan batchOutcome, 1)}
	bc.deadline, _ = ctx.Deadline()
	b.mu.Lock()
	if b.mu.unary {
		b.mu.Unlock()
		return rawResult{}, errUnbatched
	}
	if len(b.mu.queue) == 0 && b.mu.inflight < b.c.cfg.BatchesInFlight {
		// Idle: sent now, on this goroutine and with the caller's ctx, so
		// a lone call costs what it cost unbatched, plus the wrapping.
		b.mu.inflight++
		bc.state = batchSent
		b.mu.Unlock()
		b.send(ctx, []*batchCall{bc})
		b.next()
		o := <-bc.done
		return o.res, o.err
	}
	b.mu.queue = append(b.mu.queue, bc)
	if b.mu.starting == 0 && b.mu.inflight < b.c.cfg.BatchesInFlight {
		b.mu.inflight++
		b.startLocked()
	}
	b.mu.Unlock()
	select {
	case o := <-bc.done:
		return o.res, o.err
	case <-ctx.Done():
		o := b.abandon(ctx, bc)
		return o.res, o.err
	}
}

// abandon is a caller leaving before its answer came, with the error a
// unary call whose ctx ended returns (or the answer, if it came
// meanwhile): a call still queued is never sent, one sent may yet be
// applied (retry it with the same request_id).
func (b *batcher) abandon(ctx context.Context, bc *batchCall) batchOutcome {
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case o := <-bc.done:
		return o
	default:
	}
	if bc.state == batchQueued {
		bc.state = batchAbandoned
	}
	return batchOutcome{err: endedCallError(ctx)}
}

// next is a Batch sent on its caller's goroutine returning: a sender takes
// over its slot for what queued meanwhile, unless one is about to.
func (b *batcher) next() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.mu.queue) == 0 || b.mu.starting > 0 {
		b.mu.inflight--
		return
	}
	b.startLocked()
}

// startLocked starts a sender in a slot already counted in inflight.
func (b *batcher) startLocked() {
	b.mu.starting++
	// Added under mu: Close waits for senders after the connections
	// closed, which ends their calls.
	b.c.senders.Add(1)
	go b.run()
}

// run sends the queue as Batches until it is empty.
func (b *batcher) run() {
	defer b.c.senders.Done()
	for first := true; ; first = false {
		batch, deadline := b.take(first)
		if batch == nil {
			return
		}
		// Not any caller's ctx: the Batch serves them all, until the last
		// gives up, and at most batchTimeoutMax when one has no deadline.
		if deadline.IsZero() {
			deadline = time.Now().Add(batchTimeoutMax)
		}
		ctx, cancel := context.WithDeadline(context.Background(), deadline)
		b.send(ctx, batch)
		cancel()
	}
}

// take removes the next Batch from the queue for a sender (on its first
// take, one that was starting): the queued calls in order, at most
// batchCallsMax and batchBytesMax, and the latest deadline among them
// (zero when one has none). It returns nil, and the sender gives up its
// slot, when nothing is queued; once the node is known to serve no Batch
// it hands every queued call back to be sent alone.
func (b *batcher) take(first bool) ([]*batchCall, time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if first {
		b.mu.starting--
	}
	var batch []*batchCall
	var deadline time.Time
	unbounded := false
	bytes, i := 0, 0
	for ; i < len(b.mu.queue) && len(batch) < batchCallsMax; i++ {
		bc := b.mu.queue[i]
		if bc.state == batchAbandoned {
			continue
		}
		if b.mu.unary {
			bc.done <- batchOutcome{err: errUnbatched}
			continue
		}
		if bytes+bc.bytes > batchBytesMax {
			break
		}
		bc.state = batchSent
		bytes += bc.bytes
		batch = append(batch, bc)
		if bc.deadline.IsZero() {
			unbounded = true
		} else if bc.deadline.After(deadline) {
			deadline = bc.deadline
		}
	}
	n := copy(b.mu.queue, b.mu.queue[i:])
	clear(b.mu.queue[n:]) // no stale pointers keep answered calls alive
	b.mu.queue = b.mu.queue[:n]
	if len(batch) == 0 {
		b.mu.inflight--
		return nil, time.Time{}
	}
	if unbounded {
		deadline = time.Time{}
	}
	return batch, deadline
}

// send makes one Batch call of batch and hands each call its outcome. A
// Batch that failed as a whole gives each call that failure, as the call
// alone would have had it from the same connection.
func (b *batcher) send(ctx context.Context, batch []*batchCall) {
	req := &ledgerpb.BatchRequest{Calls: make([]*ledgerpb.BatchCall, len(batch))}
	for i, bc := range batch {
		req.Calls[i] = bc.call
	}
	b.c.batchRPCs.Add(1)
	b.c.batchCalls.Add(uint64(len(batch)))
	resp := &rawBatchResponse{}
	var header metadata.MD
	err := b.cc.Invoke(ctx, methodBatch, req, resp, grpc.StaticMethod(), grpc.Header(&header), grpc.ForceCodecV2(batchCodec{}))
	b.c.noteForwarded(header)
	switch {
	case unimplemented(err):
		b.mu.Lock()
		b.mu.unary = true
		b.mu.Unlock()
		err = errUnbatched // nothing was applied: each goes alone
	case err == nil && len(resp.results) != len(batch):
		err = fmt.Errorf("%w: %d calls answered %d results", ErrBadReply, len(batch), len(resp.results))
	}
	for i, bc := range batch {
		if err != nil {
			bc.done <- batchOutcome{err: err}
		} else {
			bc.done <- batchOutcome{res: resp.results[i]}
		}
	}
}

// BatchStats reports how many Batch calls the client made and how many
// calls they carried in all (their ratio is the average batch size).
func (c *Client) BatchStats() (batches, calls uint64) {
	return c.batchRPCs.Load(), c.batchCalls.Load()
}
