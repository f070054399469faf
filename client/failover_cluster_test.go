// This file proves the fail-fast retry against real seatd processes: three
// nodes whose peer links run through jepsen/netproxy. The client learns
// the routing table while n-leader leads the show's group; then every link
// to and from that node is cut. The other two elect a leader, the cut-off
// node fails fast (503 UNAVAILABLE at once), and the client, whose table
// still names the cut-off node, gets its holds and reads answered by
// another node within one call.
package client

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/jepsen/netproxy"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// Raft timing of the cut-off test: short, so the cut-off node fails fast
// within a second or two.
var cutArgs = []string{"--election-timeout", "300ms", "--heartbeat-timeout", "300ms"}

// proxied routes every node's raft and gRPC dials to each peer through its
// own netproxy link: links[from][to].
type proxied struct {
	links map[string]map[string][]*netproxy.Link
}

// prepare makes the links once the nodes' addresses are chosen
// (proccluster.Config.Prepare; again on a retried start).
func (p *proxied) prepare(c *proccluster.Cluster) error {
	p.closeAll()
	p.links = map[string]map[string][]*netproxy.Link{}
	for i, from := range c.Nodes() {
		p.links[from.ID] = map[string][]*netproxy.Link{}
		for j, to := range c.Nodes() {
			if i == j {
				continue
			}
			for k, target := range []string{to.RaftAddr, to.GRPCAddr} {
				l, err := netproxy.Listen(from.ID+"->"+to.ID, target, uint64(100*i+10*j+k))
				if err != nil {
					return err
				}
				p.links[from.ID][to.ID] = append(p.links[from.ID][to.ID], l)
			}
		}
	}
	return nil
}

// dialArgs is a node's --dial flag: its peers through its links.
func (p *proxied) dialArgs(n *proccluster.Node) []string {
	var parts []string
	for to, ls := range p.links[n.ID] {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", to, ls[0].Addr(), ls[1].Addr()))
	}
	return []string{"--dial", strings.Join(parts, ",")}
}

// cut cuts every link to and from node id.
func (p *proxied) cut(id string) {
	for from, tos := range p.links {
		for to, ls := range tos {
			if from == id || to == id {
				for _, l := range ls {
					l.Cut()
				}
			}
		}
	}
}

func (p *proxied) closeAll() {
	for _, tos := range p.links {
		for _, ls := range tos {
			for _, l := range ls {
				l.Close()
			}
		}
	}
}

func TestClientStepsPastCutOffNode(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "seatd")
	// A fault build, as the jepsen harness uses: --dial, which puts the
	// proxies between the nodes, is a test-only flag.
	if err := proccluster.BuildFaults(ctx, bin); err != nil {
		t.Fatal(err)
	}
	p := &proxied{}
	// Last in, first out: the links close after the nodes stop.
	t.Cleanup(p.closeAll)
	c, err := proccluster.Start(ctx, proccluster.Config{Binary: bin, Nodes: 3, Dir: dir, Groups: 1, Args: cutArgs,
		Prepare: p.prepare, NodeArgs: p.dialArgs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(c.AdminToken()))}
	var eps []string
	for _, n := range c.Nodes() {
		eps = append(eps, n.GRPCAddr)
	}
	cl, err := New(ctx, Config{Endpoints: eps, DialOptions: opts, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b := cl.Booking()
	show := &ledgerpb.Show{ShowId: "cut", Title: "t", Rows: []*ledgerpb.Row{{Name: "A", Seats: 20, Category: "std"}},
		Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}}}
	if _, err := b.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: show, ClientId: "admin", RequestId: "create"}); err != nil {
		t.Fatalf("CreateShow: %v", err)
	}
	// The table the client routes by names the group's leader now; the
	// hourly refresh keeps it until a call fails.
	if err := cl.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	victim := leaderOf(t, cl, c)
	t.Logf("cutting off %s, the group's leader", victim.ID)
	p.cut(victim.ID)

	waitFailFast(t, ctx, victim.GRPCAddr, opts)
	route, _, _ := cl.route(&ledgerpb.HoldRequest{ShowId: "cut"})
	if route.Target() != victim.GRPCAddr {
		t.Fatalf("the client routes show cut to %s, want the cut-off %s (its stale table)", route.Target(), victim.GRPCAddr)
	}
	const fast = 3 * time.Second // an answer from another node, not a wait on the cut-off one
	start := time.Now()
	cctx, ccancel := context.WithTimeout(ctx, fast)
	defer ccancel()
	if _, err := b.Hold(cctx, &ledgerpb.HoldRequest{ShowId: "cut", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "after-cut"}); err != nil {
		t.Fatalf("Hold(A1) through the client after %s was cut off = %v after %v, want OK from another node", victim.ID, err, time.Since(start))
	}
	sm, err := b.GetSeatMap(cctx, &ledgerpb.GetSeatMapRequest{ShowId: "cut"})
	if err != nil {
		t.Fatalf("GetSeatMap through the client after %s was cut off = %v, want OK from another node", victim.ID, err)
	}
	if st := seatState(sm, "A1"); st != ledgerpb.SeatState_HELD {
		t.Errorf("seat A1 after the hold = %v, want HELD", st)
	}
}

// leaderOf is the node the client's table names as the group's leader.
func leaderOf(t *testing.T, cl *Client, c *proccluster.Cluster) *proccluster.Node {
	t.Helper()
	if tb := cl.table.Load(); tb != nil && tb.leaders[0] != nil {
		for _, n := range c.Nodes() {
			if n.GRPCAddr == tb.leaders[0].Target() {
				return n
			}
		}
	}
	t.Fatal("the client's table names no node of the cluster as group 0's leader")
	return nil
}

// waitFailFast waits until the node at addr answers a hold UNAVAILABLE
// (its fail-fast answer) rather than forwarding it or holding it.
func waitFailFast(t *testing.T, ctx context.Context, addr string, opts []grpc.DialOption) {
	t.Helper()
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	b := ledgerpb.NewBookingClient(cc)
	var last error
	for i, deadline := 0, time.Now().Add(20*time.Second); time.Now().Before(deadline); i++ {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		_, last = b.Hold(pctx, &ledgerpb.HoldRequest{ShowId: "cut", SeatIds: []string{fmt.Sprintf("A%d", 11+i%10)}, ClientId: "probe", RequestId: fmt.Sprintf("probe-%d", i)})
		cancel()
		if Reason(last) == "UNAVAILABLE" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the cut-off node at %s never failed fast: last answer %v", addr, last)
}

func seatState(sm *ledgerpb.SeatMap, id string) ledgerpb.SeatState {
	for _, s := range sm.Seats {
		if s.SeatId == id {
			return s.State
		}
	}
	return ledgerpb.SeatState_SEAT_STATE_UNSPECIFIED
}
