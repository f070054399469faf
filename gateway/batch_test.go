// This file proves Booking.Batch on two nodes, each the only voter of one
// of two groups, so that a batch sent to n1 holds calls n1 leads and calls
// it must forward to n2: a batch mixing every kind and both groups answers
// each call in order with what the call alone answers, and applies each;
// the same bad input sent alone and in a batch fails with the same code,
// message and details; a malformed batch (no calls, too many, an empty
// call, too large) is refused whole with nothing applied; each call goes
// through the server's interceptors as its own method (metrics, or any
// policy an interceptor applies) and through the per-client rate limit;
// the calls of one group share a raft entry; and POST /v1/batch answers
// the same over HTTP. BenchmarkBatchRaftEntries reports how many raft
// entries a batch's calls for one group take.
package gateway

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// batchNode is one node of batchCluster.
type batchNode struct {
	srv    *Server
	client ledgerpb.BookingClient
	http   *httptest.Server
}

// batchCluster is n1 leading group 0 and n2 leading group 1; show[g] is a
// show of group g. n1's gRPC server counts into reg and runs seen, an
// interceptor that records every method it is called for.
type batchCluster struct {
	t     testing.TB
	nodes []*batchNode
	show  [2]string
	reg   *prometheus.Registry
	mu    sync.Mutex
	seen  []string
	admit Admission
}

func startBatchCluster(t testing.TB, admit Admission) *batchCluster {
	t.Helper()
	bc := &batchCluster{t: t, reg: prometheus.NewRegistry(), admit: admit}
	metrics, err := NewMetrics(bc.reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		bc.mu.Lock()
		bc.seen = append(bc.seen, info.FullMethod)
		bc.mu.Unlock()
		return h(ctx, req)
	}
	dir := t.TempDir()
	var raftLns, grpcLns []net.Listener
	var peers []raftnode.Peer
	for i := range 2 {
		raftLns = append(raftLns, listen(t))
		grpcLns = append(grpcLns, listen(t))
		peers = append(peers, raftnode.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: raftLns[i].Addr().String(), GRPCAddr: grpcLns[i].Addr().String()})
	}
	smap := shard.Map{Groups: 2}
	for i, p := range peers {
		rn, err := raftnode.Start(raftnode.Config{
			NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, Listener: raftLns[i], ClusterID: raftnode.ClusterID{1},
			Peers: peers, Groups: map[uint32][]string{0: {"n1"}, 1: {"n2"}}, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("raftnode.Start(%s): %v", p.ID, err)
		}
		router := shard.NewRouter(rn, smap)
		srv := NewServer(router)
		srv.SetAdmission(admit)
		var opts []grpc.ServerOption
		if i == 0 {
			opts = []grpc.ServerOption{grpc.ChainUnaryInterceptor(metrics.unary, seen)}
		}
		gs := NewGRPCServer(srv, router, opts...)
		go gs.Serve(grpcLns[i])
		h, err := NewHTTPHandler(context.Background(), srv, router, HTTPConfig{})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		n := &batchNode{srv: srv, client: ledgerpb.NewBookingClient(conn), http: httptest.NewServer(h)}
		bc.nodes = append(bc.nodes, n)
		t.Cleanup(func() {
			n.http.Close()
			conn.Close()
			gs.Stop()
			router.Close()
			rn.Close()
		})
	}
	for g := range bc.show {
		for i := 0; bc.show[g] == ""; i++ {
			if id := fmt.Sprintf("batch-%d", i); smap.GroupFor(id) == uint32(g) {
				bc.show[g] = id
			}
		}
		show := &ledgerpb.Show{ShowId: bc.show[g], Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}},
			Rows: []*ledgerpb.Row{{Name: "A", Seats: 10, Category: "std"}}}
		call(t, "CreateShow("+bc.show[g]+")", func(ctx context.Context) (*ledgerpb.CreateShowResponse, error) {
			return bc.nodes[g].srv.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: show})
		})
	}
	return bc
}

// batch sends calls to n1 over gRPC and wants an answer per call.
func (bc *batchCluster) batch(calls ...*ledgerpb.BatchCall) []*ledgerpb.BatchResult {
	bc.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	resp, err := bc.nodes[0].client.Batch(ctx, &ledgerpb.BatchRequest{Calls: calls})
	if err != nil {
		bc.t.Fatalf("Batch of %d calls: %v", len(calls), err)
	}
	if len(resp.Results) != len(calls) {
		bc.t.Fatalf("Batch of %d calls answered %d results", len(calls), len(resp.Results))
	}
	return resp.Results
}

// seats returns the states of a show's seats ("FFHB…"), read at its leader.
func (bc *batchCluster) seats(g int) string {
	bc.t.Helper()
	sm, err := bc.nodes[g].srv.GetSeatMap(context.Background(), &ledgerpb.GetSeatMapRequest{ShowId: bc.show[g], StatesOnly: true})
	if err != nil {
		bc.t.Fatal(err)
	}
	return sm.SeatStates
}

func holdCall(show, client, rid string, seats ...string) *ledgerpb.BatchCall {
	return &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Hold{Hold: &ledgerpb.HoldRequest{ShowId: show, SeatIds: seats, ClientId: client, RequestId: rid}}}
}

func errOf(r *ledgerpb.BatchResult) error {
	if e := r.GetError(); e != nil {
		return status.FromProto(e).Err()
	}
	return nil
}

func TestBatchMixesKindsAndGroups(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	a, b := bc.show[0], bc.show[1]
	res := bc.batch(holdCall(a, "c", "h1", "A1"), holdCall(b, "c", "h1", "A1"), holdCall(b, "c", "h2", "A2"),
		holdCall(a, "c", "h2", "A3"), holdCall(a, "c", "h3", "A9"))
	for i, r := range res {
		if r.GetHold() == nil {
			t.Fatalf("batch result %d = %v, want a hold", i, r)
		}
	}
	ha, hb, hb2, ha3, ha9 := res[0].GetHold(), res[1].GetHold(), res[2].GetHold(), res[3].GetHold(), res[4].GetHold()
	if ha.ShowId != a || hb.ShowId != b || !slices.Equal(hb2.SeatIds, []string{"A2"}) || !slices.Equal(ha3.SeatIds, []string{"A3"}) {
		t.Errorf("holds answered out of order: %v / %v / %v / %v", ha, hb, hb2, ha3)
	}
	// n1 does not host group 1: its holds were forwarded to n2.
	if got := bc.seats(1); got != "HHFFFFFFFF" {
		t.Errorf("show of group 1 after the batch via n1 = %s, want A1 and A2 held", got)
	}
	res = bc.batch(
		&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: a, HoldId: ha.HoldId, HoldToken: ha.HoldToken, PaymentRef: "p", ClientId: "c", RequestId: "c1"}}},
		&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{ShowId: b, HoldId: hb.HoldId, HoldToken: hb.HoldToken, ClientId: "c", RequestId: "r1"}}},
		&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Extend{Extend: &ledgerpb.ExtendRequest{ShowId: b, HoldId: hb2.HoldId, HoldToken: hb2.HoldToken, TtlSeconds: 600, ClientId: "c", RequestId: "e1"}}},
		&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{ShowId: a, HoldId: ha9.HoldId, HoldToken: "wrong", ClientId: "c", RequestId: "r2"}}},
	)
	if res[0].GetConfirm().GetState() != ledgerpb.HoldState_HOLD_STATE_CONFIRMED || res[1].GetRelease() == nil || res[2].GetExtend() == nil {
		t.Fatalf("confirm, release, extend = %v", res[:3])
	}
	if status.Code(errOf(res[3])) != codes.PermissionDenied {
		t.Errorf("release with a wrong token in a batch = %v, want PermissionDenied", res[3])
	}
	res = bc.batch(&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Refund{Refund: &ledgerpb.RefundRequest{ShowId: a, HoldId: ha.HoldId, HoldToken: ha.HoldToken, ClientId: "c", RequestId: "f1"}}})
	if res[0].GetRefund().GetState() != ledgerpb.HoldState_HOLD_STATE_REFUNDED {
		t.Errorf("refund = %v, want REFUNDED", res[0])
	}
	if got, want := bc.seats(0), "FFHFFFFFHF"; got != want {
		t.Errorf("show of group 0 = %s, want %s", got, want)
	}
	if got, want := bc.seats(1), "FHFFFFFFFF"; got != want {
		t.Errorf("show of group 1 = %s, want %s", got, want)
	}
}

func TestBatchCallsOfOneGroupShareAnEntry(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	g, err := bc.nodes[0].srv.router.Node().Group(0)
	if err != nil {
		t.Fatal(err)
	}
	calls := []*ledgerpb.BatchCall{holdCall(bc.show[0], "c", "bad id!", "A1")} // refused before it proposes
	for i := range 16 {
		calls = append(calls, holdCall(bc.show[0], fmt.Sprintf("fan%d", i), "r", fmt.Sprintf("A%d", i%10+1)))
	}
	calls = append(calls, holdCall(bc.show[1], "c", "r", "A1")) // another group's, forwarded
	before := g.Machine().Applied()
	res := bc.batch(calls...)
	// At most one more entry, should a leader-issued one come between.
	if got := g.Machine().Applied() - before; got > 2 {
		t.Errorf("16 holds of one show in a batch took %d entries of its group, want 1", got)
	}
	won := 0
	for _, r := range res[1:17] {
		if r.GetHold() != nil {
			won++
		} else if reasonOf(status.Convert(errOf(r))) != "SEATS_TAKEN" {
			t.Errorf("hold = %v, want OK or SEATS_TAKEN", r)
		}
	}
	if won != 10 || status.Code(errOf(res[0])) != codes.InvalidArgument || res[17].GetHold() == nil {
		t.Errorf("%d of 16 holds of 10 seats won, the bad call = %v, the other group's = %v; want 10, InvalidArgument, a hold", won, res[0], res[17])
	}
}

// Each bad input goes alone and then in a batch with the same request id:
// the ledger answers a repeated request with its first result, so even
// the revision in a rejection's details must be the same.
func TestBatchErrorsMatchUnary(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	a, b := bc.show[0], bc.show[1]
	held := bc.batch(holdCall(b, "owner", "x1", "A5"))[0].GetHold()
	ahead := time.Now().Add(time.Hour).UnixMilli()
	for _, tt := range []struct {
		name      string
		call      *ledgerpb.BatchCall
		firstSent int64
	}{
		{"no client_id", holdCall(a, "", "e1", "A1"), 0},
		{"too many seats", holdCall(a, "c", "e2", "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10", "A11"), 0},
		{"unknown seat, forwarded", holdCall(b, "c", "e3", "Z99"), 0},
		{"seat taken, forwarded", holdCall(b, "c", "e4", "A5"), 0},
		{"unknown show", holdCall("no-such-show", "c", "e5", "A1"), 0},
		{"first sent ahead", holdCall(a, "c", "e6", "A1"), ahead},
		{"wrong token", &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: b, HoldId: held.HoldId, HoldToken: "bad", PaymentRef: "p", ClientId: "owner", RequestId: "e7"}}}, 0},
		{"not the owner", &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Extend{Extend: &ledgerpb.ExtendRequest{ShowId: b, HoldId: held.HoldId, HoldToken: held.HoldToken, ClientId: "thief", RequestId: "e8"}}}, 0},
		{"refund unconfirmed", &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Refund{Refund: &ledgerpb.RefundRequest{ShowId: b, HoldId: held.HoldId, HoldToken: held.HoldToken, ClientId: "owner", RequestId: "e9"}}}, 0},
		{"unknown hold", &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{ShowId: a, HoldId: "h0-999-0", HoldToken: held.HoldToken, ClientId: "c", RequestId: "e10"}}}, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
			defer cancel()
			uctx := ctx
			if tt.firstSent != 0 {
				uctx = metadata.AppendToOutgoingContext(ctx, FirstSentKey, fmt.Sprint(tt.firstSent))
			}
			n1 := bc.nodes[0].client
			var alone error
			switch c := tt.call.Call.(type) {
			case *ledgerpb.BatchCall_Hold:
				_, alone = n1.Hold(uctx, c.Hold)
			case *ledgerpb.BatchCall_Confirm:
				_, alone = n1.Confirm(uctx, c.Confirm)
			case *ledgerpb.BatchCall_Release:
				_, alone = n1.Release(uctx, c.Release)
			case *ledgerpb.BatchCall_Extend:
				_, alone = n1.Extend(uctx, c.Extend)
			case *ledgerpb.BatchCall_Refund:
				_, alone = n1.Refund(uctx, c.Refund)
			}
			if alone == nil {
				t.Fatal("the call alone succeeded, want an error")
			}
			tt.call.FirstSentAtMs = tt.firstSent
			res := bc.batch(tt.call, holdCall(a, "c", "ok-"+strings.NewReplacer(" ", "-", ",", "").Replace(tt.name), "A10"))
			got, want := res[0].GetError(), status.Convert(alone).Proto()
			equal := proto.Equal(got, want)
			if tt.firstSent != 0 {
				// The message says how far ahead the stamp is of the node's
				// clock, read at each call: the same but for the figures.
				equal = digits.ReplaceAllString(prototext.Format(got), "N") == digits.ReplaceAllString(prototext.Format(want), "N")
			}
			if !equal {
				t.Errorf("in a batch: %v\nalone:       %v", got, want)
			}
			if res[1].GetHold() == nil && status.Code(errOf(res[1])) != codes.Aborted {
				t.Errorf("the good call next to it = %v, want a hold (or A10 taken by an earlier case)", res[1])
			}
		})
	}
}

func TestBatchMalformedIsRefusedWhole(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	a := bc.show[0]
	many := make([]*ledgerpb.BatchCall, BatchCallsMax+1)
	for i := range many {
		many[i] = holdCall(a, "c", fmt.Sprintf("m%d", i), "A1")
	}
	big := make([]*ledgerpb.BatchCall, 6)
	for i := range big {
		big[i] = &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: a, HoldId: "h", PaymentRef: strings.Repeat("x", batchBytesMax/4), ClientId: "c", RequestId: "b"}}}
	}
	big[0] = holdCall(a, "c", "big", "A1")
	for _, tt := range []struct {
		name   string
		calls  []*ledgerpb.BatchCall
		reason string
		field  string
	}{
		{"no calls", nil, "INVALID_ARGUMENT", "calls"},
		{"too many calls", many, "INVALID_ARGUMENT", "calls"},
		{"an empty call", []*ledgerpb.BatchCall{holdCall(a, "c", "e1", "A1"), {}, holdCall(a, "c", "e2", "A2")}, "INVALID_ARGUMENT", "calls[1]"},
		{"too large", big, "BODY_TOO_LARGE", "calls"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := bc.nodes[0].client.Batch(t.Context(), &ledgerpb.BatchRequest{Calls: tt.calls})
			if status.Code(err) != codes.InvalidArgument || reasonOf(status.Convert(err)) != tt.reason || batchFieldOf(err) != tt.field {
				t.Errorf("Batch = %v (reason %s, field %q), want InvalidArgument %s naming %s", err, reasonOf(status.Convert(err)), batchFieldOf(err), tt.reason, tt.field)
			}
			if got := bc.seats(0); got != "FFFFFFFFFF" {
				t.Errorf("after a refused batch the seats are %s, want all free", got)
			}
		})
	}
}

func TestBatchCallsGoThroughInterceptorsAndLimits(t *testing.T) {
	bc := startBatchCluster(t, Admission{Rate: 0.001, Burst: 2})
	a, b := bc.show[0], bc.show[1]
	bc.mu.Lock()
	bc.seen = nil
	bc.mu.Unlock()
	res := bc.batch(holdCall(a, "flood", "f1", "A1"), holdCall(b, "flood", "f2", "A1"), holdCall(a, "flood", "f3", "A2"),
		holdCall(a, "calm", "k1", "A3"),
		&ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Confirm{Confirm: &ledgerpb.ConfirmRequest{ShowId: a, ClientId: "calm", RequestId: "k2"}}})
	limited := 0
	for _, r := range res[:3] {
		if reasonOf(status.Convert(errOf(r))) == "RATE_LIMITED" {
			limited++
		} else if r.GetHold() == nil {
			t.Errorf("flood's hold = %v, want OK or RATE_LIMITED", r)
		}
	}
	if limited != 1 {
		t.Errorf("%d of flood's 3 holds (burst 2) were rate limited, want 1", limited)
	}
	if res[3].GetHold() == nil {
		t.Errorf("calm's hold next to the flood = %v, want OK", res[3])
	}
	if status.Code(errOf(res[4])) != codes.InvalidArgument {
		t.Errorf("confirm without a hold = %v, want InvalidArgument", res[4])
	}
	bc.mu.Lock()
	seen := slices.Clone(bc.seen)
	bc.mu.Unlock()
	slices.Sort(seen)
	want := []string{methodBatch, methodConfirm, methodHold, methodHold, methodHold, methodHold}
	if !slices.Equal(seen, want) {
		t.Errorf("interceptor saw %v, want %v", seen, want)
	}
	for _, m := range []struct {
		method, code string
		want         float64
	}{{methodHold, "OK", 3}, {methodHold, "ResourceExhausted", 1}, {methodConfirm, "InvalidArgument", 1}, {methodBatch, "OK", 1}} {
		if got := count(t, bc.reg, "seatledger_grpc_requests_total", map[string]string{"method": m.method, "code": m.code}); got != m.want {
			t.Errorf("requests_total{%s, %s} = %v, want %v", m.method, m.code, got, m.want)
		}
	}
	if got := count(t, bc.reg, "seatledger_grpc_request_duration_seconds", map[string]string{"method": methodHold}); got != 4 {
		t.Errorf("Hold latency observations = %v, want 4", got)
	}
}

func TestBatchOverHTTP(t *testing.T) {
	bc := startBatchCluster(t, Admission{})
	a, b := bc.show[0], bc.show[1]
	body := fmt.Sprintf(`{"calls":[{"hold":{"show_id":%q,"seat_ids":["A1"],"client_id":"c","request_id":"h1"}},`+
		`{"hold":{"show_id":%q,"seat_ids":["Z9"],"client_id":"c","request_id":"h2"}}]}`, a, b)
	got := httpDo(t, bc.nodes[0].http.URL, "POST", "/v1/batch", body)
	if got.code != http.StatusOK || !strings.Contains(got.body, `"hold_id"`) || !strings.Contains(got.body, `"UNKNOWN_SEAT"`) {
		t.Errorf("POST /v1/batch = %d %s, want 200 with a hold and an UNKNOWN_SEAT error", got.code, got.body)
	}
	got = httpDo(t, bc.nodes[0].http.URL, "POST", "/v1/batch", `{"calls":[{}]}`)
	if got.code != http.StatusBadRequest || !strings.Contains(got.body, "calls[0]") {
		t.Errorf("POST /v1/batch with an empty call = %d %s, want 400 naming calls[0]", got.code, got.body)
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// batchFieldOf is the field a status's BadRequest names first.
func batchFieldOf(err error) string {
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok && len(br.FieldViolations) > 0 {
			return br.FieldViolations[0].Field
		}
	}
	return ""
}

// BenchmarkBatchRaftEntries sends batches of 16 holds of one show, on a
// group of one voter with nothing else to do, and reports the raft
// entries they took per batch: the calls run concurrently, and how many
// reach the group's proposer before it takes its queue decides how many
// entries the batch costs (docs/PERFORMANCE.md, "Per entry, not per
// command").
func BenchmarkBatchRaftEntries(b *testing.B) {
	bc := startBatchCluster(b, Admission{})
	g, err := bc.nodes[0].srv.router.Node().Group(0)
	if err != nil {
		b.Fatal(err)
	}
	const calls = 16
	round, entries := 0, uint64(0)
	for b.Loop() {
		cs := make([]*ledgerpb.BatchCall, calls)
		for i := range cs {
			// Each fan asks for the same seat every round: one hold, then
			// rejections, all of them commands.
			cs[i] = holdCall(bc.show[0], fmt.Sprintf("fan%d", i), fmt.Sprintf("r%d", round), fmt.Sprintf("A%d", i%10+1))
		}
		before := g.Machine().Applied()
		bc.batch(cs...)
		entries += g.Machine().Applied() - before
		round++
	}
	b.ReportMetric(float64(entries)/float64(round), "entries/batch")
}

// BenchmarkBatch21 sends Batch RPCs of 21 calls, as a loaded Go client
// does, from several clients at once to n1, which leads their shows'
// group: each round holds 21 seats (one per fan) and then releases them.
// An op is one batch; cpu-µs/call is the process's CPU (client, gateway,
// raft and FSM together) per call, which is what the gateway's share of a
// call changes.
func BenchmarkBatch21(b *testing.B) {
	const calls, workers = 21, 8
	bc := startBatchCluster(b, Admission{})
	shows := make([]string, 0, workers)
	for i := 0; len(shows) < workers; i++ {
		id := fmt.Sprintf("bench-%d", i)
		if (shard.Map{Groups: 2}).GroupFor(id) != 0 {
			continue
		}
		show := &ledgerpb.Show{ShowId: id, Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}},
			Rows: []*ledgerpb.Row{{Name: "A", Seats: calls, Category: "std"}}}
		call(b, "CreateShow("+id+")", func(ctx context.Context) (*ledgerpb.CreateShowResponse, error) {
			return bc.nodes[0].srv.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: show})
		})
		shows = append(shows, id)
	}
	var next atomic.Int32
	b.SetParallelism(workers / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	start := cpuTime(b)
	b.RunParallel(func(pb *testing.PB) {
		w := int(next.Add(1) - 1)
		show := shows[w%len(shows)]
		fans := make([]string, calls)
		for i := range fans {
			fans[i] = fmt.Sprintf("w%d-fan%d", w, i)
		}
		ctx := context.Background()
		holds := make([]*ledgerpb.BatchCall, calls)
		for round := 0; pb.Next(); round++ {
			if round%2 == 0 {
				for i := range holds {
					holds[i] = holdCall(show, fans[i], fmt.Sprintf("h%d", round), fmt.Sprintf("A%d", i+1))
				}
				resp, err := bc.nodes[0].client.Batch(ctx, &ledgerpb.BatchRequest{Calls: holds})
				if err != nil {
					b.Fatal(err)
				}
				for i, r := range resp.Results {
					h := r.GetHold()
					if h == nil {
						b.Fatalf("hold %d = %v, want a hold", i, r)
					}
					holds[i] = &ledgerpb.BatchCall{Call: &ledgerpb.BatchCall_Release{Release: &ledgerpb.ReleaseRequest{
						ShowId: show, HoldId: h.HoldId, HoldToken: h.HoldToken, ClientId: fans[i], RequestId: fmt.Sprintf("r%d", round)}}}
				}
				continue
			}
			resp, err := bc.nodes[0].client.Batch(ctx, &ledgerpb.BatchRequest{Calls: holds})
			if err != nil {
				b.Fatal(err)
			}
			for i, r := range resp.Results {
				if r.GetRelease() == nil {
					b.Fatalf("release %d = %v, want a release", i, r)
				}
			}
		}
	})
	b.ReportMetric(float64((cpuTime(b)-start).Microseconds())/float64(b.N*calls), "cpu-µs/call")
}

// cpuTime is the CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
