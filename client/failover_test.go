// This file proves that the client steps past a node that refuses a call
// for want of a leader: a call that is safe to repeat (an exactly-once
// write, a read, or any call refused before anything was appended) is sent
// again to another node, at most attemptsMax in all; a write that may have
// taken effect and has no request_id is not. Fake nodes script the answers
// here; failover_cluster_test.go does the same against real seatd
// processes with one of them cut off.
package client

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// fakeNode answers Hold and GetSeatMap with err (nil: success) and counts
// the calls.
type fakeNode struct {
	ledgerpb.UnimplementedBookingServer
	err   error
	calls atomic.Int64
}

func (f *fakeNode) Hold(context.Context, *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return &ledgerpb.HoldResponse{HoldId: "h1"}, nil
}

func (f *fakeNode) GetSeatMap(context.Context, *ledgerpb.GetSeatMapRequest) (*ledgerpb.SeatMap, error) {
	f.calls.Add(1)
	if f.err != nil {
		return nil, f.err
	}
	return &ledgerpb.SeatMap{ShowId: "s"}, nil
}

// unavailable is a node's Unavailable answer with reason ("" for none, as
// a broken connection has).
func unavailable(reason string) error {
	st := status.New(codes.Unavailable, "unavailable: "+reason)
	if reason != "" {
		st, _ = st.WithDetails(&errdetails.ErrorInfo{Reason: reason, Domain: "seatledger"})
	}
	return st.Err()
}

// startFakes serves each fake on its own port and returns a client whose
// seeds they are.
func startFakes(t *testing.T, fakes ...*fakeNode) *Client {
	t.Helper()
	var addrs []string
	for _, f := range fakes {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := grpc.NewServer()
		ledgerpb.RegisterBookingServer(s, f)
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

func total(fakes ...*fakeNode) int64 {
	var n int64
	for _, f := range fakes {
		n += f.calls.Load()
	}
	return n
}

func TestFailFastIsRetriedAtAnotherNode(t *testing.T) {
	cut, ok := &fakeNode{err: unavailable("UNAVAILABLE")}, &fakeNode{}
	c := startFakes(t, cut, ok)
	// Round robin starts some calls at each node: every one must succeed.
	for i := range 4 {
		resp, err := c.Booking().Hold(t.Context(), &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "r"})
		if err != nil || resp.HoldId != "h1" {
			t.Fatalf("Hold #%d with a cut-off node among two = %v, %v; want the other node's answer", i, resp, err)
		}
	}
	if cut.calls.Load() == 0 || ok.calls.Load() != 4 {
		t.Errorf("cut-off node called %d times, healthy one %d; want some, and 4", cut.calls.Load(), ok.calls.Load())
	}
}

func TestRetryOnlyWhenSafe(t *testing.T) {
	hold := func(rid string) func(ledgerpb.BookingClient) error {
		return func(b ledgerpb.BookingClient) error {
			_, err := b.Hold(t.Context(), &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: rid})
			return err
		}
	}
	seatMap := func(b ledgerpb.BookingClient) error {
		_, err := b.GetSeatMap(t.Context(), &ledgerpb.GetSeatMapRequest{ShowId: "s"})
		return err
	}
	for _, tt := range []struct {
		name   string
		reason string
		call   func(ledgerpb.BookingClient) error
		want   int64 // nodes asked, of five that all answer reason
	}{
		{"fail-fast write without request_id", "UNAVAILABLE", hold(""), attemptsMax},
		{"not-leader write without request_id", "NOT_LEADER", hold(""), attemptsMax},
		{"unknown outcome, exactly-once write", "OUTCOME_UNKNOWN", hold("r"), attemptsMax},
		{"unknown outcome, write without request_id", "OUTCOME_UNKNOWN", hold(""), 1},
		{"broken connection, read", "", seatMap, attemptsMax},
		{"broken connection, write without request_id", "", hold(""), 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fakes := make([]*fakeNode, 5)
			for i := range fakes {
				fakes[i] = &fakeNode{err: unavailable(tt.reason)}
			}
			c := startFakes(t, fakes...)
			err := tt.call(c.Booking())
			if status.Code(err) != codes.Unavailable || Reason(err) != tt.reason {
				t.Errorf("call = %v, want the nodes' Unavailable %q", err, tt.reason)
			}
			if got := total(fakes...); got != tt.want {
				t.Errorf("call asked %d nodes, want %d", got, tt.want)
			}
		})
	}
}

func TestRetryStaysWithinTheSeeds(t *testing.T) {
	a, b := &fakeNode{err: unavailable("UNAVAILABLE")}, &fakeNode{err: unavailable("UNAVAILABLE")}
	c := startFakes(t, a, b)
	_, err := c.Booking().Hold(t.Context(), &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "r"})
	if Reason(err) != "UNAVAILABLE" || a.calls.Load() != 1 || b.calls.Load() != 1 {
		t.Errorf("Hold with both nodes cut off = %v after %d and %d calls, want UNAVAILABLE after one call each", err, a.calls.Load(), b.calls.Load())
	}
}
