// This file proves seatd's observability endpoints on real in-process
// nodes: after holds, confirms and a conflict through all three nodes of a
// cluster, /metrics (Prometheus text on the HTTP listener, and each node's
// registry) shows the ledger counters at least as high as the acknowledged
// calls, exactly one leader per group, commit latency observed, the
// leader's view of its two followers, gRPC calls by method and code
// (forwards between nodes included, and the forwarding node's count of its
// forwarded calls), HTTP calls by route pattern, a node
// label on every series and no show or client id in any label; and pprof is
// served only on the admin listener, never on the public one.
package main

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/grpc/codes"

	"github.com/seatledger/seatledger/raftnode"
)

// families is one node's metrics by name.
type families map[string]*dto.MetricFamily

// value sums the series of name whose labels include want: counters and
// gauges by value, histograms by observation count. n is how many matched.
func (f families) value(name string, want map[string]string) (sum float64, n int) {
	mf := f[name]
	if mf == nil {
		return 0, 0
	}
next:
	for _, m := range mf.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		n++
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum, n
}

// httpGet fetches a URL and returns its status, Content-Type and body.
func httpGet(t *testing.T, url string) (int, string, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(body)
}

// scrape reads every node's metrics: n1's over HTTP in the text format a
// Prometheus server reads, the others' from their registries.
func (c *testCluster) scrape() []families {
	c.t.Helper()
	code, ctype, body := httpGet(c.t, "http://"+c.httpAddr[0]+"/metrics")
	if code != http.StatusOK || !strings.HasPrefix(ctype, "text/plain; version=0.0.4") {
		c.t.Fatalf("GET /metrics on n1 = %d %q, want 200 in the text format", code, ctype)
	}
	var p expfmt.TextParser
	first, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		c.t.Fatalf("n1's /metrics does not parse: %v", err)
	}
	out := []families{first}
	for _, n := range c.nodes[1:] {
		mfs, err := n.gather.Gather()
		if err != nil {
			c.t.Fatalf("gather %s: %v", n.cfg.ID, err)
		}
		f := families{}
		for _, mf := range mfs {
			f[mf.GetName()] = mf
		}
		out = append(out, f)
	}
	return out
}

// leadersWrong says which group does not have exactly one node reporting
// itself leader, or "" when all do.
func leadersWrong(fs []families) string {
	for id := 0; id < clusterGroups; id++ {
		leaders := 0.0
		for _, f := range fs {
			v, _ := f.value("seatledger_raft_is_leader", map[string]string{"group": strconv.Itoa(id)})
			leaders += v
		}
		if leaders != 1 {
			return fmt.Sprintf("group %d has %v nodes with seatledger_raft_is_leader 1, want 1", id, leaders)
		}
	}
	return ""
}

func TestClusterMetrics(t *testing.T) {
	c := startCluster(t, true)
	const show = "metrics-show"
	c.createShow(0, show)
	group := map[string]string{"group": strconv.Itoa(int(c.smap.GroupFor(show)))}
	const holds, confirms = 6, 3
	for i := 0; i < holds; i++ {
		client := fmt.Sprintf("fan%d", i)
		res := c.mustHold(i%clusterNodes, show, client, "r1", 0, fmt.Sprintf("A%d", i+1))
		if i < confirms {
			c.mustConfirm(i%clusterNodes, show, res.HoldId, client, "r2", "pay")
		}
	}
	_, err := c.hold(1, show, "late", "r1", 0, "A1")
	wantRejected(t, "Hold(A1) by late", err, "SEATS_TAKEN", codes.Aborted)
	httpCall(t, "POST", "http://"+c.httpAddr[0]+"/v1/shows/"+show+"/holds",
		`{"seat_ids":["E20"],"client_id":"web","request_id":"r1"}`).wantStatus(t, "POST holds E20", http.StatusOK)

	// Leadership may move between two nodes' scrapes (elections, the
	// balancer): scrape again until the picture is consistent.
	fs := c.scrape()
	for deadline := time.Now().Add(clusterWaitMax); leadersWrong(fs) != ""; fs = c.scrape() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", clusterWaitMax, leadersWrong(fs))
		}
		time.Sleep(pollInterval)
	}
	total := func(name string, labels map[string]string) float64 {
		sum := 0.0
		for _, f := range fs {
			v, _ := f.value(name, labels)
			sum += v
		}
		return sum
	}
	for _, w := range []struct {
		name   string
		labels map[string]string
		min    float64
	}{
		{"seatledger_ledger_holds_total", group, holds + 1},
		{"seatledger_ledger_confirms_total", group, confirms},
		{"seatledger_ledger_conflicts_total", group, 1},
		{"seatledger_ledger_rejections_total", map[string]string{"op": "hold", "code": "SEATS_TAKEN"}, 1},
		{"seatledger_raft_commit_latency_seconds", group, holds + confirms + 2},
		{"seatledger_raft_log_store_latency_seconds", group, 1},
		{"seatledger_grpc_requests_total", map[string]string{"method": "/seatledger.v1.Booking/Hold", "code": "OK"}, holds},
		{"seatledger_grpc_requests_total", map[string]string{"method": "/seatledger.v1.Booking/Hold", "code": "Aborted"}, 1},
		{"seatledger_grpc_requests_total", map[string]string{"method": "/seatledger.v1.Peer/ProposeBatch", "code": "OK"}, 1},
		{"seatledger_forward_batch_commands", nil, 1},
		{"seatledger_http_requests_total", map[string]string{"route": "POST /v1/shows/{show_id}/holds", "code": "200"}, 1},
	} {
		if got := total(w.name, w.labels); got < w.min {
			t.Errorf("%s%v summed over the nodes = %v, want at least %v", w.name, w.labels, got, w.min)
		}
	}
	for i, f := range fs {
		id := c.peers[i].ID
		if v, _ := f.value("seatledger_raft_applied_index", group); v <= 0 {
			t.Errorf("%s: seatledger_raft_applied_index%v = %v, want > 0", id, group, v)
		}
		lead, _ := f.value("seatledger_raft_is_leader", group)
		if _, n := f.value("seatledger_raft_follower_lag_entries", group); lead == 1 && n != clusterNodes-1 {
			t.Errorf("leader %s reports lag for %d followers, want %d", id, n, clusterNodes-1)
		} else if lead == 0 && n != 0 {
			t.Errorf("follower %s reports lag for %d followers, want none", id, n)
		}
		checkLabels(t, id, f, show, "fan", "late", "web")
	}
	if _, n := fs[0].value("go_goroutines", nil); n != 1 {
		t.Errorf("n1's /metrics has %d go_goroutines series, want 1 (the process's runtime metrics)", n)
	}
	if v, n := fs[0].value("seatledger_build_info", nil); n != 1 || v != 1 {
		t.Errorf("n1's /metrics has %d seatledger_build_info series (value %v), want one of 1 per process", n, v)
	}
}

// checkLabels wants a node label naming the node on every seatledger series
// but the build's (one per process, like go_*: seatd dev's nodes are one
// binary), and no label value containing any of ids.
func checkLabels(t *testing.T, node string, f families, ids ...string) {
	t.Helper()
	for name, mf := range f {
		if !strings.HasPrefix(name, "seatledger_") || name == "seatledger_build_info" {
			continue
		}
		for _, m := range mf.Metric {
			hasNode := false
			for _, l := range m.Label {
				hasNode = hasNode || (l.GetName() == "node" && l.GetValue() == node)
				for _, id := range ids {
					if strings.Contains(l.GetValue(), id) {
						t.Errorf("%s: %s has label %s=%q: unbounded label values", node, name, l.GetName(), l.GetValue())
					}
				}
			}
			if !hasNode {
				t.Errorf("%s: a %s series lacks node=%q: %v", node, name, node, m.Label)
			}
		}
	}
}

func TestAdminListenerServesPprof(t *testing.T) {
	raftLn, grpcLn := listenLoopback(t, "127.0.0.1:0"), listenLoopback(t, "127.0.0.1:0")
	httpLn, adminLn := listenLoopback(t, "127.0.0.1:0"), listenLoopback(t, "127.0.0.1:0")
	cfg := nodeConfig{ID: "n1", DataDir: filepath.Join(t.TempDir(), "n1"), Groups: 1, Replicas: 1,
		Peers:  []raftnode.Peer{{ID: "n1", RaftAddr: raftLn.Addr().String(), GRPCAddr: grpcLn.Addr().String()}},
		RaftLn: raftLn, GRPCLn: grpcLn, HTTPLn: httpLn, AdminLn: adminLn,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	n, err := startNode(cfg)
	if err != nil {
		t.Fatalf("startNode: %v", err)
	}
	t.Cleanup(func() { n.close() })
	public, admin := "http://"+httpLn.Addr().String(), "http://"+adminLn.Addr().String()
	for _, c := range []struct {
		url      string
		code     int
		contains string
	}{
		{public + "/debug/pprof/", http.StatusNotFound, ""},
		{public + "/debug/pprof/goroutine?debug=1", http.StatusNotFound, ""},
		{public + "/metrics", http.StatusOK, "seatledger_raft_is_leader"},
		{public + "/metrics", http.StatusOK, `seatledger_build_info{commit="unknown",goversion="go`},
		{admin + "/debug/pprof/", http.StatusOK, "goroutine"},
		{admin + "/debug/pprof/goroutine?debug=1", http.StatusOK, "goroutine profile"},
		{admin + "/debug/pprof/cmdline", http.StatusOK, ""},
		{admin + "/metrics", http.StatusOK, "seatledger_raft_is_leader"},
		{admin + "/v1/shows/x/seats", http.StatusNotFound, ""},
	} {
		code, _, body := httpGet(t, c.url)
		if code != c.code || !strings.Contains(body, c.contains) {
			t.Errorf("GET %s = %d (body has %q: %v), want %d", c.url, code, c.contains, strings.Contains(body, c.contains), c.code)
		}
	}
}
