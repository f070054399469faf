// This file proves liveness and readiness: readyReasons names every hosted
// group without a known leader or too far behind in applying; /readyz is
// 200 on a node whose group has a leader and 503 with the reason on a node
// whose group cannot elect one, while /healthz stays 200 on both; the gRPC
// health service (over a real connection) says SERVING and NOT_SERVING to
// match, and NotFound for a service it does not know.
package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

func TestReadyReasons(t *testing.T) {
	tests := []struct {
		groups []groupHealth
		want   string
	}{
		{nil, ""},
		{[]groupHealth{{ID: 0, Leader: "n1", Committed: 10, Applied: 10}}, ""},
		{[]groupHealth{{ID: 0, Leader: "n1", Committed: 1010, Applied: 10}}, ""},
		{[]groupHealth{{ID: 0, Leader: "n1", Committed: 1011, Applied: 10}}, "group 0: 1001 committed entries not applied yet (at most 1000)"},
		{[]groupHealth{{ID: 3, Leader: "", Committed: 5, Applied: 9}}, "group 3: no leader known"},
		{[]groupHealth{{ID: 1, Leader: "n2"}, {ID: 2}}, "group 2: no leader known"},
	}
	for _, tt := range tests {
		if got := strings.Join(readyReasons(tt.groups, readyApplyLagMax), "; "); got != tt.want {
			t.Errorf("readyReasons(%+v) = %q, want %q", tt.groups, got, tt.want)
		}
	}
}

// getJSON GETs a URL and decodes its JSON body.
func getJSON(t *testing.T, url string, out any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode
}

func healthCheck(t *testing.T, addr, service string) (healthpb.HealthCheckResponse_ServingStatus, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
	defer cancel()
	r, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	return r.GetStatus(), err
}

func TestReadyWithLeader(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s") // the group has elected its leader
	n1 := wc.nodes[0]
	var r readiness
	if code := getJSON(t, n1.http.URL+"/readyz", &r); code != http.StatusOK || r.Status != "ready" ||
		len(r.Groups) != 1 || r.Groups[0].Leader != "n1" || len(r.Reasons) != 0 {
		t.Fatalf("GET /readyz on n1 = %d %+v, want 200 ready with group 0 led by n1", code, r)
	}
	// n2 hosts no group: it forwards, and is ready.
	if code := getJSON(t, wc.nodes[1].http.URL+"/readyz", &r); code != http.StatusOK || len(r.Groups) != 0 {
		t.Fatalf("GET /readyz on n2 = %d %+v, want 200 with no hosted group", code, r)
	}
	p, _ := n1.router.Node().Peer("n1")
	for _, svc := range healthServices {
		if st, err := healthCheck(t, p.GRPCAddr, svc); err != nil || st != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("gRPC health Check(%q) on n1 = %v %v, want SERVING", svc, st, err)
		}
	}
	if _, err := healthCheck(t, p.GRPCAddr, "nope"); status.Code(err) != codes.NotFound {
		t.Errorf("gRPC health Check(nope) = %v, want NotFound", err)
	}
}

func TestNotReadyWithoutLeader(t *testing.T) {
	hs, grpcAddr := startLeaderlessNode(t, 100*time.Millisecond)
	var r readiness
	if code := getJSON(t, hs.URL+"/readyz", &r); code != http.StatusServiceUnavailable || r.Status != "not ready" ||
		strings.Join(r.Reasons, ";") != "group 0: no leader known" {
		t.Fatalf("GET /readyz without a leader = %d %+v, want 503 naming group 0", code, r)
	}
	var live map[string]any
	if code := getJSON(t, hs.URL+"/healthz", &live); code != http.StatusOK {
		t.Fatalf("GET /healthz without a leader = %d, want 200 (liveness)", code)
	}
	if st, err := healthCheck(t, grpcAddr, ""); err != nil || st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("gRPC health Check without a leader = %v %v, want NOT_SERVING", st, err)
	}
}

// startLeaderlessNode serves the API of a node n1 whose only group also
// lists n2, which never starts: no quorum, so no leader, ever. It returns
// the HTTP server and n1's gRPC address.
func startLeaderlessNode(t *testing.T, election time.Duration) (*httptest.Server, string) {
	t.Helper()
	raftLn, grpcLn, deadLn := listen(t), listen(t), listen(t)
	dead := deadLn.Addr().String()
	deadLn.Close()
	peers := []raftnode.Peer{{ID: "n1", RaftAddr: raftLn.Addr().String(), GRPCAddr: grpcLn.Addr().String()},
		{ID: "n2", RaftAddr: dead, GRPCAddr: dead}}
	rn, err := raftnode.Start(raftnode.Config{NodeID: "n1", DataDir: filepath.Join(t.TempDir(), "n1"),
		RaftAddr: peers[0].RaftAddr, Listener: raftLn, ClusterID: raftnode.ClusterID{1}, Peers: peers, Groups: map[uint32][]string{0: {"n1", "n2"}},
		Bootstrap: true, HeartbeatTimeout: election, ElectionTimeout: election,
		LeaderLeaseTimeout: election / 2, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	router := shard.NewRouter(rn, shard.Map{Groups: 1})
	srv := NewServer(router)
	gs := NewGRPCServer(srv, router)
	go gs.Serve(grpcLn)
	h, err := NewHTTPHandler(context.Background(), srv, router, HTTPConfig{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() {
		hs.Close()
		gs.Stop()
		router.Close()
		rn.Close()
	})
	return hs, peers[0].GRPCAddr
}
