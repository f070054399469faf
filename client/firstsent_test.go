// This file proves that the client states when a write was first sent: a
// write's first attempt is stamped and every node it is retried at sees
// the same stamp; a stamp the caller fixed with WithFirstSent is kept (the
// caller's own retries over several calls); reads carry none.
package client

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// stampNode notes the first send time of each call and answers Hold with
// err (nil: success).
type stampNode struct {
	ledgerpb.UnimplementedBookingServer
	err error
	mu  struct {
		sync.Mutex
		sent []string // one per call, "" without a stamp
	}
}

func (n *stampNode) note(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	n.mu.Lock()
	defer n.mu.Unlock()
	n.mu.sent = append(n.mu.sent, firstOf(md.Get(FirstSentKey)))
}

func firstOf(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

func (n *stampNode) Hold(ctx context.Context, _ *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	n.note(ctx)
	if n.err != nil {
		return nil, n.err
	}
	return &ledgerpb.HoldResponse{HoldId: "h1"}, nil
}

func (n *stampNode) GetSeatMap(ctx context.Context, _ *ledgerpb.GetSeatMapRequest) (*ledgerpb.SeatMap, error) {
	n.note(ctx)
	return &ledgerpb.SeatMap{ShowId: "s"}, nil
}

func (n *stampNode) sent() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.mu.sent...)
}

func startStampNodes(t *testing.T, nodes ...*stampNode) *Client {
	t.Helper()
	var addrs []string
	for _, n := range nodes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		ledgerpb.RegisterBookingServer(s, n)
		go s.Serve(ln)
		t.Cleanup(s.Stop)
		addrs = append(addrs, ln.Addr().String())
	}
	c, err := New(t.Context(), Config{Endpoints: addrs, RefreshInterval: time.Hour,
		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestWriteRetriesKeepTheFirstSendTime(t *testing.T) {
	nodes := []*stampNode{{err: unavailable("OUTCOME_UNKNOWN")}, {err: unavailable("OUTCOME_UNKNOWN")}, {err: unavailable("OUTCOME_UNKNOWN")}}
	c := startStampNodes(t, nodes...)
	before := time.Now().UnixMilli()
	_, err := c.Booking().Hold(t.Context(), &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "r"})
	if Reason(err) != "OUTCOME_UNKNOWN" {
		t.Fatalf("Hold = %v, want the nodes' OUTCOME_UNKNOWN", err)
	}
	var stamps []string
	for _, n := range nodes {
		stamps = append(stamps, n.sent()...)
	}
	if len(stamps) != attemptsMax {
		t.Fatalf("Hold reached %d nodes, want %d", len(stamps), attemptsMax)
	}
	ms, err := strconv.ParseInt(stamps[0], 10, 64)
	if err != nil || ms < before || ms > time.Now().UnixMilli() {
		t.Errorf("first attempt's %s = %q, want the Unix ms of the call (from %d)", FirstSentKey, stamps[0], before)
	}
	for i, s := range stamps {
		if s != stamps[0] {
			t.Errorf("attempt %d's %s = %q, want the first attempt's %q", i+1, FirstSentKey, s, stamps[0])
		}
	}
}

func TestWithFirstSentIsKept(t *testing.T) {
	n := &stampNode{}
	c := startStampNodes(t, n)
	first := time.UnixMilli(1767225600000)
	ctx := WithFirstSent(t.Context(), first)
	for range 2 { // the caller's own retry of the same request_id
		if _, err := c.Booking().Hold(ctx, &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Booking().GetSeatMap(t.Context(), &ledgerpb.GetSeatMapRequest{ShowId: "s"}); err != nil {
		t.Fatal(err)
	}
	want := []string{"1767225600000", "1767225600000", ""}
	got := n.sent()
	if len(got) != len(want) {
		t.Fatalf("calls noted %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d's %s = %q, want %q (a read states none)", i+1, FirstSentKey, got[i], want[i])
		}
	}
}
