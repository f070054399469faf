// This file proves how a batch's calls run on the goroutine that serves
// the batch (batchRun): a batch whose ctx is cancelled, or whose deadline
// passes, while its calls run answers every call, each through the
// interceptors, with the call's own answer or a status that says to retry
// with the same request_id, and a retry then finds every hold applied
// once and none half-applied, in both groups; an interceptor that calls
// its handler again after the batch proposed gets the call's answer (sent
// alone, a replay); a batch of BatchCallsMax calls, nested that deep,
// answers each; and the Batch's first send time metadata, read once,
// answers each call that states none of its own as that metadata answers
// the call alone.
package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// withInterceptor is ctx carrying in as the gRPC server's interceptor
// chain, as withChain hands it to Server.Batch.
func withInterceptor(ctx context.Context, in grpc.UnaryServerInterceptor) context.Context {
	return context.WithValue(ctx, chainKey{}, in)
}

// mixedHolds are holds of seats A1..A4 of both groups' shows, alternating
// groups, with a bad call (no client_id) in the middle.
func mixedHolds(bc *batchCluster, rid string) []*ledgerpb.BatchCall {
	var calls []*ledgerpb.BatchCall
	for i := range 8 {
		calls = append(calls, holdCall(bc.show[i%2], fmt.Sprintf("fan%d", i), rid, fmt.Sprintf("A%d", i/2+1)))
	}
	return slices.Insert(calls, 4, holdCall(bc.show[0], "", rid, "A9"))
}

// checkEndedBatch wants each call of mixedHolds answered: the bad one
// InvalidArgument, each other a hold or a status telling its caller to
// retry with the same request_id.
func checkEndedBatch(t *testing.T, res []*ledgerpb.BatchResult) {
	t.Helper()
	for i, r := range res {
		if i == 4 {
			if status.Code(errOf(r)) != codes.InvalidArgument {
				t.Errorf("the call without client_id = %v, want InvalidArgument", r)
			}
			continue
		}
		if r.GetHold() != nil {
			continue // proposed before the ctx ended was noticed
		}
		switch st := status.Convert(errOf(r)); {
		case st.Code() == codes.Unavailable && (reasonOf(st) == "OUTCOME_UNKNOWN" || reasonOf(st) == "UNAVAILABLE"):
		case st.Code() == codes.DeadlineExceeded || st.Code() == codes.Canceled:
		default:
			t.Errorf("call %d in a batch whose ctx ended = %v, want a hold, or Unavailable, DeadlineExceeded or Canceled", i, r)
		}
	}
}

// checkRetried sends mixedHolds again with a live ctx and wants every hold
// applied exactly once: each answered OK, and each show's A1..A4 held.
func checkRetried(t *testing.T, bc *batchCluster, rid string) {
	t.Helper()
	res := bc.batch(mixedHolds(bc, rid)...)
	for i, r := range res {
		if i != 4 && r.GetHold() == nil {
			t.Errorf("retried hold %d = %v, want a hold", i, r)
		}
	}
	for g := range 2 {
		if got := bc.seats(g); got != "HHHHFFFFFF" {
			t.Errorf("show of group %d after the retry = %s, want A1..A4 held", g, got)
		}
	}
}

func TestBatchCtxCancelledWhileCallsRun(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen []string
	in := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		seen = append(seen, info.FullMethod)
		if len(seen) == 6 {
			cancel() // after the bad call, before the proposal
		}
		return h(ctx, req)
	}
	resp, err := bc.nodes[0].srv.Batch(withInterceptor(ctx, in), &ledgerpb.BatchRequest{Calls: mixedHolds(bc, "c1")})
	if err != nil {
		t.Fatalf("Batch with its ctx cancelled midway = %v, want an answer per call", err)
	}
	if len(seen) != 9 || len(resp.Results) != 9 {
		t.Fatalf("the interceptor saw %d calls, Batch answered %d; want 9 and 9", len(seen), len(resp.Results))
	}
	checkEndedBatch(t, resp.Results)
	checkRetried(t, bc, "c1")
}

func TestBatchDeadlinePassesWhileCallsRun(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	calls := 0
	in := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if calls++; calls == 3 {
			<-ctx.Done() // a slow call: the batch's deadline passes here
		}
		return h(ctx, req)
	}
	resp, err := bc.nodes[0].srv.Batch(withInterceptor(ctx, in), &ledgerpb.BatchRequest{Calls: mixedHolds(bc, "d1")})
	if err != nil {
		t.Fatalf("Batch past its deadline = %v, want an answer per call", err)
	}
	if calls != 9 || len(resp.Results) != 9 {
		t.Fatalf("the interceptor saw %d calls, Batch answered %d; want 9 and 9", calls, len(resp.Results))
	}
	checkEndedBatch(t, resp.Results)
	for i, r := range resp.Results {
		if r.GetHold() != nil {
			t.Errorf("call %d answered a hold though the batch's deadline had passed before it proposed: %v", i, r)
		}
	}
	checkRetried(t, bc, "d1")
}

func TestBatchInterceptorCallsHandlerAgain(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	again := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if hr, ok := req.(*ledgerpb.HoldRequest); ok && hr.ClientId == "fan0" {
			if _, err := h(ctx, req); err != nil {
				return nil, err
			}
		}
		return h(ctx, req)
	}
	resp, err := bc.nodes[0].srv.Batch(withInterceptor(t.Context(), again), &ledgerpb.BatchRequest{Calls: mixedHolds(bc, "a1")})
	if err != nil {
		t.Fatal(err)
	}
	if h := resp.Results[0].GetHold(); h == nil || !h.Replayed {
		t.Errorf("the call whose handler ran twice = %v, want its hold, replayed", resp.Results[0])
	}
	for i, r := range resp.Results[1:] {
		if i+1 != 4 && r.GetHold() == nil {
			t.Errorf("hold %d = %v, want a hold", i+1, r)
		}
	}
}

func TestBatchOfCallsMax(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	calls := make([]*ledgerpb.BatchCall, BatchCallsMax)
	for i := range calls {
		calls[i] = holdCall(bc.show[i%2], fmt.Sprintf("fan%d", i), "m", fmt.Sprintf("A%d", i%20/2+1))
	}
	bc.mu.Lock()
	bc.seen = nil
	bc.mu.Unlock()
	res := bc.batch(calls...)
	held := [2]int{}
	for i, r := range res {
		if r.GetHold() != nil {
			held[i%2]++
		} else if reasonOf(status.Convert(errOf(r))) != "SEATS_TAKEN" {
			t.Errorf("hold %d = %v, want a hold or SEATS_TAKEN", i, r)
		}
	}
	if held != [2]int{10, 10} {
		t.Errorf("holds won per group = %v, want 10 of each show's 10 seats", held)
	}
	bc.mu.Lock()
	seen := strings.Join(bc.seen, " ")
	bc.mu.Unlock()
	if n := strings.Count(seen, methodHold); n != BatchCallsMax {
		t.Errorf("the interceptor saw %d holds, want %d", n, BatchCallsMax)
	}
}

func TestBatchFirstSentMetadataPerCall(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	a := bc.show[0]
	ctx := metadata.AppendToOutgoingContext(t.Context(), FirstSentKey, "soon")
	n1 := bc.nodes[0].client
	_, alone := n1.Hold(ctx, holdCall(a, "c", "f1", "A1").GetHold())
	if status.Code(alone) != codes.InvalidArgument {
		t.Fatalf("Hold with first send time \"soon\" = %v, want InvalidArgument", alone)
	}
	own := holdCall(a, "c", "f3", "A3")
	own.FirstSentAtMs = time.Now().UnixMilli()
	resp, err := n1.Batch(ctx, &ledgerpb.BatchRequest{Calls: []*ledgerpb.BatchCall{
		holdCall(a, "c", "f1", "A1"), own, holdCall(a, "c", "f2", "A2")}})
	if err != nil {
		t.Fatal(err)
	}
	want := status.Convert(alone).Proto()
	for _, i := range []int{0, 2} {
		if got := resp.Results[i].GetError(); !proto.Equal(got, want) {
			t.Errorf("call %d in a batch with first send time \"soon\" = %v, want %v", i, got, want)
		}
	}
	if resp.Results[1].GetHold() == nil {
		t.Errorf("the call with its own first send time = %v, want a hold", resp.Results[1])
	}
}
