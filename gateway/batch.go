package gateway

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
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
	ctx = context.WithValue(ctx, firstSentCallKey{}, &batchFirstSent{md: metadata.ValueFromIncomingContext(ctx, FirstSentKey)})
	n := len(req.Calls)
	resp := &ledgerpb.BatchResponse{Results: make([]*ledgerpb.BatchResult, n)}
	if n == 1 {
		// Nothing to gather: a batch of one costs what the call alone
		// costs, plus the wrapping.
		var w batchWraps
		resp.Results[0] = w.result(0, s.batchCall(ctx, chain, req.Calls[0], s.handlers(s.proposeBounded), nil))
		return resp, nil
	}
	// The commands go together under the batch's ctx, bounded as each
	// write is (proposeBounded): one timer for the batch, none per call.
	pctx := ctx
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		pctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	r := &batchRun{s: s, ctx: ctx, pctx: pctx, chain: chain, calls: req.Calls, results: resp.Results, wraps: batchWraps{n: n},
		callCtxs: make([]firstSentCtx, n)}
	r.h = s.handlers(r.send)
	r.run()
	return resp, nil
}

// batchRun runs a batch's calls one after another on the goroutine that
// serves the batch, and gathers their commands to propose them together.
// A call runs (interceptors, validation, admission, the first send time)
// until it hands its command in: send. Its send then runs the calls after
// it, nested on the same stack, so that when the last of them has handed
// its command in or ended without one, every command of the batch is in
// hand: the innermost send proposes them all, and each send returns its
// own command's answer as the calls' handlers and interceptors unwind,
// the last call's first. The nesting is at most BatchCallsMax deep. A
// goroutine per call would cost its start, its stack's growth and a
// wake-up each, only to wait for the others.
//
// The calls run on one goroutine, so the interceptors must call their
// handler on theirs, as grpc-go's chain does. A handler called again after
// the proposal (an interceptor that retries) sends its command alone.
type batchRun struct {
	s       *Server
	ctx     context.Context // the batch's
	pctx    context.Context // the batch's, bounded as a write
	chain   grpc.UnaryServerInterceptor
	h       *callHandlers // sending by r.send, made once
	calls   []*ledgerpb.BatchCall
	results []*ledgerpb.BatchResult
	wraps   batchWraps
	// callCtxs are the contexts of calls that state their own first
	// send time: one allocation a batch.
	callCtxs []firstSentCtx
	next     int // the first call not yet started
	// The commands handed in, in order, then their answers.
	shows    []string
	cmds     []*ledgerpb.Command
	proposed bool
	answers  []*ledgerpb.Result
	errs     []error
}

// run runs the calls not yet started, each to its end.
func (r *batchRun) run() {
	for r.next < len(r.calls) {
		i := r.next
		r.next++
		r.results[i] = r.wraps.result(i, r.s.batchCall(r.ctx, r.chain, r.calls[i], r.h, &r.callCtxs[i]))
	}
}

// send hands a command in, runs the calls after its own, and returns the
// command's answer: a send for a call's handler, in place of
// proposeBounded.
func (r *batchRun) send(ctx context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	if r.proposed {
		return r.s.proposeBounded(ctx, showID, cmd)
	}
	k := len(r.cmds)
	if r.cmds == nil {
		r.shows = make([]string, 0, len(r.calls)-r.next+1)
		r.cmds = make([]*ledgerpb.Command, 0, len(r.calls)-r.next+1)
	}
	r.shows = append(r.shows, showID)
	r.cmds = append(r.cmds, cmd)
	r.run()
	if !r.proposed {
		r.proposed = true
		r.s.noteForwarded(r.ctx, r.shows...)
		r.answers, r.errs = r.s.router.ProposeAll(r.pctx, r.shows, r.cmds)
	}
	return r.answers[k], r.errs[k]
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
// first send time and its command sent by h's, and returns what it
// answered: a response, or the error. fc, if not nil, is where the call's
// context goes when it states its own first send time.
func (s *Server) batchCall(ctx context.Context, chain grpc.UnaryServerInterceptor, call *ledgerpb.BatchCall, h *callHandlers, fc *firstSentCtx) any {
	req, info, handler := h.of(call)
	if call.FirstSentAtMs != 0 {
		if fc == nil {
			fc = new(firstSentCtx)
		}
		*fc = firstSentCtx{Context: ctx, fs: batchFirstSent{ms: call.FirstSentAtMs}}
		ctx = fc
	}
	var resp any
	var err error
	if chain != nil {
		resp, err = chain(ctx, req, info, handler)
	} else {
		resp, err = handler(ctx, req)
	}
	if err != nil {
		return err
	}
	return resp
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

// callHandlers serve a batch's calls as their unary RPCs do, with their
// commands sent by one send: made once per batch, not once per call.
type callHandlers struct {
	hold, confirm, release, extend, refund grpc.UnaryHandler
}

func (s *Server) handlers(via send) *callHandlers {
	return &callHandlers{
		hold: func(ctx context.Context, r any) (any, error) { return s.hold(ctx, r.(*ledgerpb.HoldRequest), via) },
		confirm: func(ctx context.Context, r any) (any, error) {
			return s.confirm(ctx, r.(*ledgerpb.ConfirmRequest), via)
		},
		release: func(ctx context.Context, r any) (any, error) {
			return s.release(ctx, r.(*ledgerpb.ReleaseRequest), via)
		},
		extend: func(ctx context.Context, r any) (any, error) { return s.extend(ctx, r.(*ledgerpb.ExtendRequest), via) },
		refund: func(ctx context.Context, r any) (any, error) { return s.refund(ctx, r.(*ledgerpb.RefundRequest), via) },
	}
}

// of returns a call's request, its method's server info and its handler.
// checkBatch made sure the call names one.
func (h *callHandlers) of(call *ledgerpb.BatchCall) (any, *grpc.UnaryServerInfo, grpc.UnaryHandler) {
	switch c := call.Call.(type) {
	case *ledgerpb.BatchCall_Hold:
		return c.Hold, infoHold, h.hold
	case *ledgerpb.BatchCall_Confirm:
		return c.Confirm, infoConfirm, h.confirm
	case *ledgerpb.BatchCall_Release:
		return c.Release, infoRelease, h.release
	case *ledgerpb.BatchCall_Extend:
		return c.Extend, infoExtend, h.extend
	case *ledgerpb.BatchCall_Refund:
		return c.Refund, infoRefund, h.refund
	}
	panic(fmt.Sprintf("gateway: batch call of type %T", call.Call)) // checkBatch refused it
}

// batchWraps makes a batch's results, the wrappers of the most common
// answers taken from slices made once per batch (of its length, at the
// first answer of their kind) rather than allocated one by one.
type batchWraps struct {
	n        int
	results  []ledgerpb.BatchResult
	holds    []ledgerpb.BatchResult_Hold
	confirms []ledgerpb.BatchResult_Confirm
	releases []ledgerpb.BatchResult_Release
}

// result wraps call i's answer, a response or an error.
func (w *batchWraps) result(i int, answer any) *ledgerpb.BatchResult {
	if w.results == nil {
		w.n = max(w.n, 1)
		w.results = make([]ledgerpb.BatchResult, w.n)
	}
	out := &w.results[i]
	switch r := answer.(type) {
	case *ledgerpb.HoldResponse:
		if w.holds == nil {
			w.holds = make([]ledgerpb.BatchResult_Hold, w.n)
		}
		w.holds[i].Hold = r
		out.Result = &w.holds[i]
	case *ledgerpb.ConfirmResponse:
		if w.confirms == nil {
			w.confirms = make([]ledgerpb.BatchResult_Confirm, w.n)
		}
		w.confirms[i].Confirm = r
		out.Result = &w.confirms[i]
	case *ledgerpb.ReleaseResponse:
		if w.releases == nil {
			w.releases = make([]ledgerpb.BatchResult_Release, w.n)
		}
		w.releases[i].Release = r
		out.Result = &w.releases[i]
	case *ledgerpb.ExtendResponse:
		out.Result = &ledgerpb.BatchResult_Extend{Extend: r}
	case *ledgerpb.RefundResponse:
		out.Result = &ledgerpb.BatchResult_Refund{Refund: r}
	case error:
		out.Result = &ledgerpb.BatchResult_Error{Error: status.Convert(r).Proto()}
	default:
		out.Result = &ledgerpb.BatchResult_Error{Error: status.Convert(
			newStatus("INTERNAL", fmt.Sprintf("batch: a call answered %T", answer))).Proto()}
	}
	return out
}

// chainKey carries the gRPC server's interceptor chain into Batch
// (withChain); firstSentCallKey where a batched call's first send time
// comes from (batchFirstSent).
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
