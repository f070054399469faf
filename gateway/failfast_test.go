package gateway

// A node that has known no leader of a group for two election timeouts
// answers that group's writes and linearizable reads at once, over HTTP with
// 503 UNAVAILABLE and Retry-After and over gRPC with Unavailable, instead of
// holding them until the client gives up (DESIGN 4, Outcomes); stale reads
// are still served from its replica. Here the node can never elect a
// leader: its group's other replica never starts.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestLeaderlessNodeFailsFast(t *testing.T) {
	const election = 100 * time.Millisecond
	hs, grpcAddr := startLeaderlessNode(t, election)
	// Past two election timeouts without a leader (and then some).
	time.Sleep(3 * election)

	// fast bounds each answer: the backoff of one retry and the test's
	// scheduling, far below the seconds a call used to wait.
	const fast = 500 * time.Millisecond
	for _, c := range []struct{ what, method, path, body string }{
		{"hold", "POST", "/v1/shows/s/holds", `{"seat_ids":["A1"],"client_id":"c","request_id":"r1"}`},
		{"linearizable seat map", "GET", "/v1/shows/s/seats", ""},
	} {
		start := time.Now()
		a := httpDo(t, hs.URL, c.method, c.path, c.body)
		took := time.Since(start)
		if a.code != http.StatusServiceUnavailable || !strings.Contains(a.body, `"reason":"UNAVAILABLE"`) || a.header.Get("Retry-After") == "" {
			t.Errorf("%s at a leaderless node = %d Retry-After %q %s, want 503 UNAVAILABLE with Retry-After", c.what, a.code, a.header.Get("Retry-After"), a.body)
		}
		if took > fast {
			t.Errorf("%s at a leaderless node answered in %v, want under %v", c.what, took, fast)
		}
	}
	// A stale read is served by the replica, unless it must ask the leader:
	// here, of a show the replica does not have (shard/read.go).
	start := time.Now()
	a := httpDo(t, hs.URL, "GET", "/v1/shows/s/seats?consistency=STALE", "")
	if took := time.Since(start); a.code != http.StatusServiceUnavailable || took > fast {
		t.Errorf("stale seat map of an unknown show at a leaderless node = %d after %v, want 503 at once", a.code, took)
	}

	conn, err := grpc.NewClient(grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start = time.Now()
	_, err = ledgerpb.NewBookingClient(conn).Hold(ctx, &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A1"}, ClientId: "c", RequestId: "r2"})
	if status.Code(err) != codes.Unavailable || time.Since(start) > fast {
		t.Errorf("gRPC Hold at a leaderless node = %v after %v, want Unavailable at once", err, time.Since(start))
	}
}
