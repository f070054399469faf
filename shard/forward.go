package shard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Forwarding batches the commands this node forwards to a group leader on
// another node: commands for the same node that wait at the same time go in
// one Peer.ProposeBatch call, so gRPC's per-call cost (an HTTP/2 stream,
// headers, a handler goroutine, the interceptors, on both nodes) is paid
// once per batch rather than once per command.
//
// One forwarder per target node queues the commands. Senders are
// goroutines that send what is queued as one call and, when it returns,
// whatever queued meanwhile, until they find the queue empty. A command
// starts a sender unless one is about to take the queue or forwardCallsMax
// calls to the node are already in flight; so a lone command is sent at
// once (no timer holds it back), and under load commands pile up while
// calls are in flight and go together in the next. A call in flight longer
// than forwardStallAfter stops counting against forwardCallsMax: one group
// that cannot commit on the target (no quorum) must not hold back the
// commands of its other groups.
//
// Each waiter gets its own answer with Propose's meaning, learns leaders
// as before, and leaves when its ctx ends whatever the call does.

// Limits of forwarding.
const (
	// forwardBatchMax bounds the commands of one ProposeBatch call; a peer
	// refuses a larger batch whole.
	forwardBatchMax = 512
	// forwardBatchBytesMax bounds the encoded requests of one call, well
	// below a node's gRPC message limit (4 MiB) so that a few large
	// commands (CreateShow with a big layout) never make a call the peer
	// must refuse; a single larger command goes alone, as it always did.
	forwardBatchBytesMax = 1 << 20
	// forwardCallsMax bounds the calls in flight to one node that are not
	// stalled.
	forwardCallsMax = 4
	// forwardStallAfter is when a call in flight stops counting against
	// forwardCallsMax. Commits take milliseconds; a call this old waits
	// for a group in trouble.
	forwardStallAfter = 100 * time.Millisecond
)

// forwarder batches the commands forwarded to one node.
type forwarder struct {
	r      *Router
	target string // node id

	mu struct {
		sync.Mutex
		// queue holds the commands waiting for a sender, in arrival order
		// (some may be abandoned: take skips them).
		queue []*forward
		// senders are the goroutines sending to target now.
		senders []*sender
		// starting counts senders not yet past their first take: they
		// will take what is queued now, so no other need start.
		starting int
		// closed: the router closed; nothing more is queued or sent.
		closed bool
	}
}

// sender is one goroutine sending batches to a forwarder's target.
// Its fields are guarded by the forwarder's mu.
type sender struct {
	since time.Time // when its call in flight began (or it was started)
	took  bool      // past its first take
}

// forward is one command waiting for a forwarded call's answer.
type forward struct {
	req      *ledgerpb.ProposeRequest
	bytes    int       // proto.Size(req), for forwardBatchBytesMax
	deadline time.Time // when its waiter gives up
	done     chan forwardOutcome
	// state is guarded by forwarder.mu.
	state forwardState
}

type forwardState int

const (
	forwardQueued    forwardState = iota
	forwardSent                   // taken into a call: it may be applied
	forwardAnswered               // answered without being sent (closed)
	forwardAbandoned              // its waiter left first: never sent
)

type forwardOutcome struct {
	resp *ledgerpb.ProposeResponse
	err  error
}

// forwarder returns the forwarder to a node, or ErrUnavailable once the
// router is closed.
func (r *Router) forwarder(target string) (*forwarder, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return nil, fmt.Errorf("%w: router closed", raftnode.ErrUnavailable)
	}
	if f, ok := r.mu.forwarders[target]; ok {
		return f, nil
	}
	f := &forwarder{r: r, target: target}
	r.mu.forwarders[target] = f
	return f, nil
}

// propose forwards req to the target and returns its result, or the error
// Propose's answer means (forwardErr). The wait is bounded by ctx and
// forwardTimeoutMax.
func (f *forwarder) propose(ctx context.Context, req *ledgerpb.ProposeRequest) (*ledgerpb.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, forwardTimeoutMax)
	defer cancel()
	deadline, _ := ctx.Deadline()
	fw := &forward{req: req, bytes: proto.Size(req), deadline: deadline, done: make(chan forwardOutcome, 1)}
	var o forwardOutcome
	if err := f.enqueue(fw, time.Now()); err != nil {
		o.err = err
	} else {
		select {
		case o = <-fw.done:
		case <-ctx.Done():
			o = f.abandon(fw, ctx.Err())
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	return o.resp.Result, forwardErr(o.resp.Status, o.resp.Message)
}

// enqueue queues fw and starts a sender if none is about to take the queue
// and fewer than forwardCallsMax calls are in flight and not stalled.
func (f *forwarder) enqueue(fw *forward, now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.mu.closed:
		return fmt.Errorf("%w: router closed", raftnode.ErrUnavailable)
	}
	f.mu.queue = append(f.mu.queue, fw)
	if f.mu.starting > 0 || f.youngLocked(now) >= forwardCallsMax {
		return nil
	}
	s := &sender{since: now}
	f.mu.senders = append(f.mu.senders, s)
	f.mu.starting++
	// Added under mu while not closed: Close marks every forwarder closed
	// under its mu before it waits, so no Add can race its Wait.
	f.r.senders.Add(1)
	go f.run(s)
	return nil
}

// youngLocked counts the senders whose call is not stalled.
func (f *forwarder) youngLocked(now time.Time) int {
	n := 0
	for _, s := range f.mu.senders {
		if now.Sub(s.since) < forwardStallAfter {
			n++
		}
	}
	return n
}

// abandon is a waiter leaving before its answer came: a command still
// queued is never sent (a definite failure), one sent may yet be applied.
func (f *forwarder) abandon(fw *forward, cause error) forwardOutcome {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case o := <-fw.done:
		return o // answered meanwhile
	default:
	}
	if fw.state == forwardQueued {
		fw.state = forwardAbandoned
		return forwardOutcome{err: fmt.Errorf("%w: %w to %s: not sent: %v", raftnode.ErrUnavailable, errForward, f.target, cause)}
	}
	return forwardOutcome{err: fmt.Errorf("%w: %w to %s: %v", raftnode.ErrOutcomeUnknown, errForward, f.target, cause)}
}

// run is a sender: it sends batches until the queue is empty.
func (f *forwarder) run(s *sender) {
	defer f.r.senders.Done()
	for {
		batch := f.take(s, time.Now())
		if batch == nil {
			return
		}
		f.send(batch)
	}
}

// take removes the next batch from the queue for sender s: the queued
// commands in order, at most forwardBatchMax of them and
// forwardBatchBytesMax bytes (but at least one). It returns nil, and s
// leaves, when there is none. While the target takes no batches, it hands
// every queued command back to its waiter to send alone.
func (f *forwarder) take(s *sender, now time.Time) []*forward {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !s.took {
		s.took = true
		f.mu.starting--
	}
	var batch []*forward
	bytes, i := 0, 0
	for ; i < len(f.mu.queue) && len(batch) < forwardBatchMax; i++ {
		fw := f.mu.queue[i]
		if fw.state == forwardAbandoned {
			continue
		}
		if len(batch) > 0 && bytes+fw.bytes > forwardBatchBytesMax {
			break
		}
		fw.state = forwardSent
		bytes += fw.bytes
		batch = append(batch, fw)
	}
	n := copy(f.mu.queue, f.mu.queue[i:])
	clear(f.mu.queue[n:]) // no stale pointers keep answered commands alive
	f.mu.queue = f.mu.queue[:n]
	if len(batch) == 0 {
		f.leaveLocked(s)
		return nil
	}
	s.since = now
	return batch
}

// leaveLocked removes a sender that found nothing to send.
func (f *forwarder) leaveLocked(s *sender) {
	if i := slices.Index(f.mu.senders, s); i >= 0 {
		f.mu.senders = slices.Delete(f.mu.senders, i, i+1)
	}
}

// send makes one ProposeBatch call for batch and hands each command its
// answer. A call that failed in transit may have been applied in part or
// whole: each of its commands' outcome is unknown (retryable, with the same
// request id).
func (f *forwarder) send(batch []*forward) {
	client, err := f.r.peer(f.target)
	if err != nil {
		f.r.learnLeaders(batch, nil) // a node that left the peer table: ask another
		finish(batch, nil, err)
		return
	}
	f.r.observeForward(len(batch))
	req := &ledgerpb.ProposeBatchRequest{Requests: make([]*ledgerpb.ProposeRequest, len(batch))}
	last := batch[0].deadline
	for i, fw := range batch {
		req.Requests[i] = fw.req
		if fw.deadline.After(last) {
			last = fw.deadline
		}
	}
	// Not any waiter's ctx: the call serves them all, until the last gives
	// up (each waits at most forwardTimeoutMax).
	ctx, cancel := context.WithDeadline(context.Background(), last)
	defer cancel()
	resp, err := client.ProposeBatch(ctx, req)
	switch {
	case err != nil:
		f.r.learnLeaders(batch, nil)
		finish(batch, nil, fmt.Errorf("%w: %w to %s: %v", raftnode.ErrOutcomeUnknown, errForward, f.target, err))
	case resp.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK:
		finish(batch, nil, forwardErr(resp.Status, resp.Message)) // refused whole: nothing was proposed
	case len(resp.Responses) != len(batch):
		f.r.learnLeaders(batch, nil)
		finish(batch, nil, fmt.Errorf("%w: %w to %s: %d answers to %d commands", raftnode.ErrOutcomeUnknown, errForward, f.target, len(resp.Responses), len(batch)))
	default:
		f.r.learnLeaders(batch, resp.Responses)
		finish(batch, resp.Responses, nil)
	}
}

// finish hands each command of batch its answer: resps[i], or err.
func finish(batch []*forward, resps []*ledgerpb.ProposeResponse, err error) {
	for i, fw := range batch {
		if err != nil {
			fw.done <- forwardOutcome{err: err}
		} else {
			fw.done <- forwardOutcome{resp: resps[i]}
		}
	}
}

// close fails the queued commands (never sent) and stops all sending.
func (f *forwarder) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.closed = true
	for _, fw := range f.mu.queue {
		if fw.state == forwardQueued {
			fw.state = forwardAnswered
			fw.done <- forwardOutcome{err: fmt.Errorf("%w: %w to %s: not sent: router closed", raftnode.ErrUnavailable, errForward, f.target)}
		}
	}
	clear(f.mu.queue)
	f.mu.queue = f.mu.queue[:0]
}

// learnLeaders records the leaders a forwarded call's answers named, in one
// hold of the lock; nil resps forgets the batch's groups' leaders.
func (r *Router) learnLeaders(batch []*forward, resps []*ledgerpb.ProposeResponse) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, fw := range batch {
		leader := ""
		if resps != nil {
			leader = resps[i].GetLeaderId()
		}
		r.setHintLocked(fw.req.GroupId, leader)
	}
}
