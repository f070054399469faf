package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// Booking.Batch: many independent writes in one gRPC call, so that a busy
// client pays gRPC's per-call cost (an HTTP/2 stream, headers, a context
// and its timer, the status trailer, on both ends) once per batch rather
// than once per command. Each call of a batch runs through the very
// function its unary RPC runs (Server.Hold, …), and on the gRPC port
// through the server's interceptors too, labelled with the call's own
// method: it is validated, rate limited, forwarded, counted and timed as
// the call alone, and answers exactly what the call alone would have. The
// calls run concurrently up to the proposal; there the batch gathers their
// commands (batchProposals) and proposes them together, so that those of
// one group share one raft entry (shard.Router.ProposeAll): run one by
// one, they would reach the group's proposer at different moments and be
// cut into several entries. Only a batch that is malformed as a whole (no
// calls, too many, an empty call, too large) is refused, and then none of
// it runs.

const (
	// BatchCallsMax bounds the calls of one Batch request.
	BatchCallsMax = 256
	// batchBytesMax bounds a Batch request's encoded size: the HTTP body
	// limit, below the gRPC message limit, so that an oversized batch gets
	// this package's precise answer rather than grpc-go's.
	batchBytesMax = httpBodyBytesMax
)

// The methods a batch's calls are counted as.
const (
	methodHold    = "/seatledger.v1.Booking/Hold"
	methodConfirm = "/seatledger.v1.Booking/Confirm"
	methodRelease = "/seatledger.v1.Booking/Release"
	methodExtend  = "/seatledger.v1.Booking/Extend"
	methodRefund  = "/seatledger.v1.Booking/Refund"
	methodBatch   = "/seatledger.v1.Booking/Batch"
)

// Batch answers each call of req as its unary RPC would, in order.
func (s *Server) Batch(ctx context.Context, req *ledgerpb.BatchRequest) (*ledgerpb.BatchResponse, error) {
	if err := checkBatch(req); err != nil {
		return nil, err
	}
	chain, _ := ctx.Value(chainKey{}).(grpc.UnaryServerInterceptor) // nil over HTTP
	n := len(req.Calls)
	resp := &ledgerpb.BatchResponse{Results: make([]*ledgerpb.BatchResult, n)}
	if n == 1 {
		// Nothing to gather: a batch of one costs what the call alone
		// costs, plus the wrapping.
		resp.Results[0] = s.batchCall(ctx, chain, req.Calls[0], nil)
		return resp, nil
	}
	// The commands go together under the batch's ctx, bounded as each
	// write is (propose).
	pctx := ctx
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	bp := &batchProposals{router: s.router, ctx: pctx}
	bp.mu.left = n
	var wg sync.WaitGroup
	for i, call := range req.Calls[:n-1] {
		wg.Go(func() { resp.Results[i] = s.batchCall(ctx, chain, call, bp) })
	}
	resp.Results[n-1] = s.batchCall(ctx, chain, req.Calls[n-1], bp) // one goroutine fewer
	wg.Wait()
	return resp, nil
}

// batchProposals gathers the commands of a batch's calls and proposes them
// together once every call has either handed its command in (send) or
// ended without one (skip). A call does only checks before it hands its
// command in (validation, admission, the first send time), never a wait,
// so no call waits long for the others.
type batchProposals struct {
	router *shard.Router
	ctx    context.Context // the batch's, bounded as a write
	mu     struct {
		sync.Mutex
		left  int // calls that may still hand a command in
		shows []string
		cmds  []*ledgerpb.Command
		done  []chan proposed
	}
}

// proposed is one command's answer.
type proposed struct {
	res *ledgerpb.Result
	err error
}

// send hands a command in and waits for its answer: a send for a call's
// handler, in place of the router's Propose.
func (b *batchProposals) send(_ context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	done := make(chan proposed, 1)
	b.mu.Lock()
	b.mu.shows = append(b.mu.shows, showID)
	b.mu.cmds = append(b.mu.cmds, cmd)
	b.mu.done = append(b.mu.done, done)
	b.mu.left--
	last := b.mu.left == 0
	b.mu.Unlock()
	if last {
		b.flush()
	}
	p := <-done
	return p.res, p.err
}

// skip is a call ending without a command (refused before it proposed).
func (b *batchProposals) skip() {
	b.mu.Lock()
	b.mu.left--
	last := b.mu.left == 0
	b.mu.Unlock()
	if last {
		b.flush()
	}
}

// flush proposes what was handed in and answers each. Only the call that
// brought left to zero calls it, so the slices are no longer appended to.
func (b *batchProposals) flush() {
	if len(b.mu.cmds) == 0 {
		return
	}
	results, errs := b.router.ProposeAll(b.ctx, b.mu.shows, b.mu.cmds)
	for i, done := range b.mu.done {
		done <- proposed{results[i], errs[i]}
	}
}

// checkBatch refuses a batch that is malformed as a whole.
func checkBatch(req *ledgerpb.BatchRequest) error {
	n := len(req.Calls)
	if n == 0 || n > BatchCallsMax {
		return batchError("INVALID_ARGUMENT", "calls", fmt.Sprintf("a batch has 1..%d calls, not %d", BatchCallsMax, n))
	}
	for i, c := range req.Calls {
		if c.GetCall() == nil {
			return batchError("INVALID_ARGUMENT", fmt.Sprintf("calls[%d]", i),
				"names no call: set one of hold, confirm, release, extend, refund")
		}
	}
	if size := proto.Size(req); size > batchBytesMax {
		return batchError("BODY_TOO_LARGE", "calls", fmt.Sprintf("a batch of %d bytes: at most %d", size, batchBytesMax))
	}
	return nil
}

// batchError refuses a whole batch, naming the field at fault.
func batchError(reason, field, msg string) error {
	return newStatus(reason, "batch: "+field+": "+msg, &errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: field, Description: msg}},
	})
}

// batchCall runs one call as its unary RPC would run: through chain (the
// gRPC server's interceptors) when there is one, with the call's own
// first send time and its command sent through bp (nil: alone), and wraps
// what it answers.
func (s *Server) batchCall(ctx context.Context, chain grpc.UnaryServerInterceptor, call *ledgerpb.BatchCall, bp *batchProposals) *ledgerpb.BatchResult {
	via, sent := s.router.Propose, false
	if bp != nil {
		via = func(ctx context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
			sent = true
			return bp.send(ctx, showID, cmd)
		}
	}
	req, info, handler := s.unaryOf(call, via)
	if call.FirstSentAtMs != 0 {
		ctx = context.WithValue(ctx, firstSentCallKey{}, call.FirstSentAtMs)
	}
	var resp any
	var err error
	if chain != nil {
		resp, err = chain(ctx, req, info, handler)
	} else {
		resp, err = handler(ctx, req)
	}
	if bp != nil && !sent {
		bp.skip()
	}
	if err != nil {
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Error{Error: status.Convert(err).Proto()}}
	}
	return batchResult(resp)
}

// The server infos of a batch's calls, made once. Their Server is nil: the
// interceptors read only FullMethod.
var (
	infoHold    = &grpc.UnaryServerInfo{FullMethod: methodHold}
	infoConfirm = &grpc.UnaryServerInfo{FullMethod: methodConfirm}
	infoRelease = &grpc.UnaryServerInfo{FullMethod: methodRelease}
	infoExtend  = &grpc.UnaryServerInfo{FullMethod: methodExtend}
	infoRefund  = &grpc.UnaryServerInfo{FullMethod: methodRefund}
)

// unaryOf returns a call's request, its method's server info and the
// handler that serves it as its unary RPC does, with its command sent by
// via. checkBatch made sure the call names one.
func (s *Server) unaryOf(call *ledgerpb.BatchCall, via send) (any, *grpc.UnaryServerInfo, grpc.UnaryHandler) {
	switch c := call.Call.(type) {
	case *ledgerpb.BatchCall_Hold:
		return c.Hold, infoHold, func(ctx context.Context, r any) (any, error) { return s.hold(ctx, r.(*ledgerpb.HoldRequest), via) }
	case *ledgerpb.BatchCall_Confirm:
		return c.Confirm, infoConfirm, func(ctx context.Context, r any) (any, error) {
			return s.confirm(ctx, r.(*ledgerpb.ConfirmRequest), via)
		}
	case *ledgerpb.BatchCall_Release:
		return c.Release, infoRelease, func(ctx context.Context, r any) (any, error) {
			return s.release(ctx, r.(*ledgerpb.ReleaseRequest), via)
		}
	case *ledgerpb.BatchCall_Extend:
		return c.Extend, infoExtend, func(ctx context.Context, r any) (any, error) { return s.extend(ctx, r.(*ledgerpb.ExtendRequest), via) }
	case *ledgerpb.BatchCall_Refund:
		return c.Refund, infoRefund, func(ctx context.Context, r any) (any, error) { return s.refund(ctx, r.(*ledgerpb.RefundRequest), via) }
	}
	panic(fmt.Sprintf("gateway: batch call of type %T", call.Call)) // checkBatch refused it
}

// batchResult wraps a call's response.
func batchResult(resp any) *ledgerpb.BatchResult {
	switch r := resp.(type) {
	case *ledgerpb.HoldResponse:
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Hold{Hold: r}}
	case *ledgerpb.ConfirmResponse:
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Confirm{Confirm: r}}
	case *ledgerpb.ReleaseResponse:
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Release{Release: r}}
	case *ledgerpb.ExtendResponse:
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Extend{Extend: r}}
	case *ledgerpb.RefundResponse:
		return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Refund{Refund: r}}
	}
	return &ledgerpb.BatchResult{Result: &ledgerpb.BatchResult_Error{
		Error: status.Convert(newStatus("INTERNAL", fmt.Sprintf("batch: a call answered %T", resp))).Proto()}}
}

// chainKey carries the gRPC server's interceptor chain into Batch
// (withChain); firstSentCallKey a batched call's own first send time
// (firstSentAt).
type (
	chainKey         struct{}
	firstSentCallKey struct{}
)

// withChain is a Batch method handler that hands its interceptor chain to
// Server.Batch, which runs each call through it.
func withChain(h grpc.MethodHandler) grpc.MethodHandler {
	return func(srv any, ctx context.Context, dec func(any) error, in grpc.UnaryServerInterceptor) (any, error) {
		if in != nil {
			ctx = context.WithValue(ctx, chainKey{}, in)
		}
		return h(srv, ctx, dec, in)
	}
}
