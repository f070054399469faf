// This file proves that the client maps shows to groups exactly as the
// nodes do, and that against real seatd processes its calls reach each
// show's leader without a forward, where the same calls through one node
// are forwarded.
package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

func TestGroupForMatchesShardMap(t *testing.T) {
	for _, groups := range []uint32{1, 2, 3, 8, 16, 1024} {
		for i := range 2000 {
			show := fmt.Sprintf("show-%d", i)
			if got, want := GroupFor(show, groups), (shard.Map{Groups: groups}).GroupFor(show); got != want {
				t.Fatalf("GroupFor(%s, %d) = %d, shard.Map says %d", show, groups, got, want)
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []Config{{}, {Endpoints: make([]string, endpointsMax+1)}, {Endpoints: []string{"a"}, RefreshInterval: -1},
		{Endpoints: []string{"a"}, BatchesInFlight: -1}, {Endpoints: []string{"a"}, BatchesInFlight: batchesInFlightMax + 1}} {
		if c.Validate() == nil {
			t.Errorf("Validate(%+v) = nil, want an error", c)
		}
	}
}

func TestCallsGoStraightToLeaders(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "seatd")
	if err := proccluster.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	c, err := proccluster.Start(ctx, proccluster.Config{Binary: bin, Nodes: 3, Dir: dir, Groups: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	opts := []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(c.AdminToken()))}
	n1 := spreadLeaders(t, ctx, c, opts)

	// Through the client, given only n1: it learns the other leaders.
	cl, err := New(ctx, Config{Endpoints: []string{n1}, DialOptions: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	direct := cl.Booking()
	shows := make([]string, 8)
	for i := range shows {
		shows[i] = fmt.Sprintf("route-%d", i)
		show := &ledgerpb.Show{ShowId: shows[i], Title: "t", Rows: []*ledgerpb.Row{{Name: "A", Seats: 30, Category: "std"}},
			Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}}}
		if _, err := direct.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: show, ClientId: "admin", RequestId: shows[i]}); err != nil {
			t.Fatalf("CreateShow(%s): %v", shows[i], err)
		}
	}
	// The leadership balancer may still move a leader between a refresh and
	// the holds (on a loaded machine more than once): a later round with
	// fresh seats must then be clean. Every round below holds seats of its
	// own: rounds A1-A15, stale A16-A18, fresh A19-A24, via-n1 A25-A27.
	const rounds = 5
	for round := range rounds {
		if err := cl.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		before := forwarded(t, c)
		holds(t, ctx, direct, shows, fmt.Sprintf("direct%d", round), 1+3*round)
		n := forwarded(t, c) - before
		if n == 0 {
			break
		}
		if round == rounds-1 {
			t.Errorf("%.0f of %d holds through the client were forwarded in each of %d rounds, want 0 in one", n, len(shows)*3, rounds)
		}
	}

	// A stale table costs a round, not a refresh interval: a client whose
	// table sends every group to n1, and which would not refresh on its own
	// for an hour, is told by n1 that it forwarded, and reads the table
	// afresh.
	stale, err := New(ctx, Config{Endpoints: []string{n1}, DialOptions: opts, RefreshInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close()
	good := stale.table.Load()
	wrong := &table{groups: good.groups, leaders: slices.Repeat([]*grpc.ClientConn{stale.seeds[0]}, int(good.groups))}
	stale.table.Store(wrong)
	before := forwarded(t, c)
	holds(t, ctx, stale.Booking(), shows, "stale", 16)
	if forwarded(t, c) == before {
		t.Fatal("no hold through the stale table was forwarded: n1 leads every group")
	}
	for deadline := time.Now().Add(5 * time.Second); stale.table.Load() == wrong; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the client did not refresh its table within 5 s of a forwarded call")
		}
	}
	// Routed afresh, its holds go straight to the leaders (a second round
	// if the balancer moved a leader meanwhile).
	for round := range 2 {
		before := forwarded(t, c)
		holds(t, ctx, stale.Booking(), shows, fmt.Sprintf("fresh%d", round), 19+3*round)
		n := forwarded(t, c) - before
		if n == 0 {
			break
		}
		if round == 1 {
			t.Errorf("%.0f of %d holds through the refreshed table were forwarded, want 0", n, len(shows)*3)
		}
	}

	// The same calls through that node alone: those of groups it does not
	// lead are forwarded (so the count above could have failed).
	cc, err := grpc.NewClient(n1, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	before = forwarded(t, c)
	holds(t, ctx, ledgerpb.NewBookingClient(cc), shows, "via-n1", 25)
	if n := forwarded(t, c) - before; n == 0 {
		t.Errorf("no hold through n1 alone was forwarded: the cluster's leaders are all on n1, or the count is broken")
	}
}

// spreadLeaders waits until the leadership balancer has given some group's
// leadership to another node than the one a fresh cluster elects first,
// and returns the gRPC address of a node that does not lead every group.
func spreadLeaders(t *testing.T, ctx context.Context, c *proccluster.Cluster, opts []grpc.DialOption) string {
	t.Helper()
	cc, err := grpc.NewClient(c.Nodes()[0].GRPCAddr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		r, err := ledgerpb.NewBookingClient(cc).GetRouting(ctx, &ledgerpb.GetRoutingRequest{})
		if err != nil {
			continue
		}
		leads := map[string]int{}
		for _, route := range r.Routes {
			leads[route.LeaderGrpcAddr]++
		}
		if len(leads) > 1 && leads[""] == 0 {
			for _, n := range c.Nodes() {
				if leads[n.GRPCAddr] < len(r.Routes) {
					return n.GRPCAddr
				}
			}
		}
	}
	t.Fatal("one node still leads every group after 60 s")
	return ""
}

// holds makes three one-seat holds in each show, from seat first on.
func holds(t *testing.T, ctx context.Context, b ledgerpb.BookingClient, shows []string, client string, first int) {
	t.Helper()
	for _, show := range shows {
		for k := range 3 {
			seat := fmt.Sprintf("A%d", first+k)
			_, err := b.Hold(ctx, &ledgerpb.HoldRequest{ShowId: show, SeatIds: []string{seat}, ClientId: client, RequestId: show + seat})
			if err != nil {
				t.Fatalf("Hold(%s %s): %v", show, seat, err)
			}
		}
	}
}

// forwarded sums the commands the nodes forwarded to another node
// (seatledger_forward_batch_commands_sum on each node's /metrics).
func forwarded(t *testing.T, c *proccluster.Cluster) float64 {
	t.Helper()
	sum := 0.0
	for _, n := range c.Nodes() {
		resp, err := c.HTTPClient().Get(c.HTTPURL(n, "/metrics"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /metrics of %s: %d, %v", n.ID, resp.StatusCode, err)
		}
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, "seatledger_forward_batch_commands_sum") {
				f := strings.Fields(line)
				v, _ := strconv.ParseFloat(f[len(f)-1], 64)
				sum += v
			}
		}
	}
	return sum
}

// A route that answered Unavailable is forgotten at once: the retry goes
// to a seed, not to the node that just refused.
func TestUnavailableForgetsTheRoute(t *testing.T) {
	c := &Client{}
	cc := &grpc.ClientConn{}
	t0 := &table{groups: 2, leaders: []*grpc.ClientConn{cc, cc}}
	c.table.Store(t0)
	c.forget(t0, 1, cc)
	if got := c.table.Load(); got.leaders[1] != nil || got.leaders[0] != cc || t0.leaders[1] != cc {
		t.Errorf("after forget(1): leaders %v (old table %v), want group 1 dropped in a new table", got.leaders, t0.leaders)
	}
	newer := &table{groups: 2, leaders: []*grpc.ClientConn{cc, cc}}
	c.table.Store(newer)
	c.forget(t0, 0, cc) // a stale table must not undo a refresh
	if c.table.Load() != newer {
		t.Error("forget on a stale table replaced the newer one")
	}
}
