// This file proves that seatctl's booking calls go through the Go client
// (client/): a hold goes to the leader the routing table names, not to an
// endpoint, and when that leader answers that it is cut off from the
// show's group, to another endpoint within the same command. Fake nodes
// script the answers.
package main

import (
	"bytes"
	"context"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// fakeNode answers Hold with holdErr (nil: a hold) and GetRouting with
// leader as group 0's leader of one group ("" answers Unavailable).
type fakeNode struct {
	ledgerpb.UnimplementedBookingServer
	holdErr error
	leader  string
	holds   atomic.Int64
}

func (f *fakeNode) Hold(context.Context, *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	f.holds.Add(1)
	if f.holdErr != nil {
		return nil, f.holdErr
	}
	return &ledgerpb.HoldResponse{HoldId: "h1", ShowId: "s", SeatIds: []string{"A1"}}, nil
}

func (f *fakeNode) GetRouting(context.Context, *ledgerpb.GetRoutingRequest) (*ledgerpb.Routing, error) {
	if f.leader == "" {
		return nil, status.Error(codes.Unavailable, "no routing here")
	}
	return &ledgerpb.Routing{Groups: 1, Routes: []*ledgerpb.GroupRoute{{GroupId: 0, LeaderId: "c", LeaderGrpcAddr: f.leader}}}, nil
}

// serveFake serves f on a loopback port and returns its address.
func serveFake(t *testing.T, f *fakeNode) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	ledgerpb.RegisterBookingServer(s, f)
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return ln.Addr().String()
}

func TestBookingCallsGoThroughTheClient(t *testing.T) {
	cutOff := status.New(codes.Unavailable, "this node has known no leader of the shard")
	cutOff, _ = cutOff.WithDetails(&errdetails.ErrorInfo{Reason: "UNAVAILABLE", Domain: "seatledger"})
	// c leads by the table but has since been cut off; a and b are the
	// endpoints, and only b can take the hold.
	c := &fakeNode{holdErr: cutOff.Err()}
	cAddr := serveFake(t, c)
	a := &fakeNode{holdErr: cutOff.Err(), leader: cAddr}
	b := &fakeNode{leader: cAddr}
	eps := serveFake(t, a) + "," + serveFake(t, b)

	var out, errOut bytes.Buffer
	code := run(t.Context(), []string{"--endpoints", eps, "--timeout", "5s", "hold", "s", "A1", "--request-id", "r1"}, &out, &errOut, func(string) string { return "" })
	if code != exitOK || tableValue(out.String(), "hold_id") != "h1" {
		t.Fatalf("seatctl hold = exit %d\nstdout:\n%s\nstderr:\n%s\nwant the hold b made", code, out.String(), errOut.String())
	}
	if c.holds.Load() != 1 || b.holds.Load() != 1 {
		t.Errorf("holds asked of the table's leader %d, of the healthy endpoint %d (of the cut-off endpoint %d); want 1 and 1: routed to the leader, then past it",
			c.holds.Load(), b.holds.Load(), a.holds.Load())
	}
}
