// This file proves the raft layer's observability on a real 3-node group:
// ledger outcomes are counted from the FSM's results once per command, by
// the proposing leader only (holds, conflicts, replays, confirms, releases,
// rejections by op and code), and every kind of result lands in its
// counter (expiries add the holds an Expire freed, QUEUED is a queue join,
// a replay counts only as a replay); the proposer times every command; every
// replica reports its raft state, exactly one of them as leader, and the
// leader reports each follower's lag, which falls to 0 once they catch up;
// a node restarted in the process registers its metrics again; and
// hashicorp/raft's own lines reach the node's slog logger as structured
// lines carrying node and group once each, formatted as hclog would format
// them, filtered by level.
package raftnode

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// sample sums a metric's series whose labels include want: counters and
// gauges by value, histograms by their count of observations. series is
// how many matched.
func sample(t *testing.T, g prometheus.Gatherer, name string, want map[string]string) (sum float64, series int) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if !hasLabels(m, want) {
				continue
			}
			series++
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum, series
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.Label {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// syncBuffer is a log sink shared by the nodes' goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestMetricsCountOutcomesOnceAndReportState(t *testing.T) {
	regs := map[string]*prometheus.Registry{}
	logs := &syncBuffer{}
	tc := startTestCluster(t, func(c *Config) {
		if regs[c.NodeID] == nil {
			regs[c.NodeID] = prometheus.NewRegistry()
		}
		c.Metrics = regs[c.NodeID]
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	g, li := tc.leader()
	leaderReg := regs[tc.peers[li].ID]
	group0 := map[string]string{"group": "0"}

	mustPropose(t, g, testShow())
	h1 := mustPropose(t, g, holdCmd("c1", "r1", 0, "A1", "A2"))
	h2 := mustPropose(t, g, holdCmd("c2", "r1", 0, "A3"))
	if res := mustPropose(t, g, holdCmd("c3", "r1", 0, "A2")); res.Code != ledgerpb.Code_CODE_SEATS_TAKEN {
		t.Fatalf("Hold(A2) by c3 = %v, want CODE_SEATS_TAKEN", res.Code)
	}
	if res := mustPropose(t, g, holdCmd("c1", "r1", 0, "A1", "A2")); !res.Replayed {
		t.Fatalf("Hold(A1,A2) by c1/r1 again: replayed = false, want true")
	}
	mustPropose(t, g, &ledgerpb.Command{ClientId: "c2", RequestId: "r2", Op: &ledgerpb.Command_Confirm{
		Confirm: &ledgerpb.ConfirmCmd{ShowId: "s1", HoldId: h2.HoldId, PaymentRef: "p", HoldToken: h2.HoldToken}}})
	mustPropose(t, g, &ledgerpb.Command{ClientId: "c1", RequestId: "r2", Op: &ledgerpb.Command_Release{
		Release: &ledgerpb.ReleaseCmd{ShowId: "s1", HoldId: h1.HoldId, HoldToken: h1.HoldToken}}})
	const commands = 7

	// Counted by the leader before Propose returned: no waiting.
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"seatledger_ledger_shows_created_total", group0, 1},
		{"seatledger_ledger_holds_total", group0, 2},
		{"seatledger_ledger_conflicts_total", group0, 1},
		{"seatledger_ledger_replays_total", group0, 1},
		{"seatledger_ledger_confirms_total", group0, 1},
		{"seatledger_ledger_releases_total", group0, 1},
		{"seatledger_ledger_rejections_total", map[string]string{"group": "0", "op": "hold", "code": "SEATS_TAKEN"}, 1},
		{"seatledger_raft_commit_latency_seconds", group0, commands},
	} {
		if got, _ := sample(t, leaderReg, c.name, c.labels); got != c.want {
			t.Errorf("leader's %s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	for id, reg := range regs {
		if id == tc.peers[li].ID {
			continue
		}
		if got, _ := sample(t, reg, "seatledger_ledger_holds_total", group0); got != 0 {
			t.Errorf("follower %s counted %v holds, want 0 (the proposing leader counts)", id, got)
		}
		waitFor(t, "follower "+id+" applies every command", func() bool {
			got, _ := sample(t, reg, "seatledger_raft_apply_batch_commands", group0)
			return got > 0 && g.Machine().Applied() <= uint64(mustGauge(t, reg, "seatledger_raft_applied_index"))
		})
	}
	if got, _ := sample(t, leaderReg, "seatledger_raft_batch_commands", group0); got < 1 {
		t.Errorf("leader's batch_commands count = %v, want at least 1", got)
	}
	for _, name := range []string{"seatledger_raft_log_store_latency_seconds", "seatledger_raft_log_bytes", "seatledger_raft_term"} {
		if got, _ := sample(t, leaderReg, name, group0); got <= 0 {
			t.Errorf("leader's %s = %v, want > 0", name, got)
		}
	}
	leaders := 0.0
	for _, reg := range regs {
		v, _ := sample(t, reg, "seatledger_raft_is_leader", group0)
		leaders += v
	}
	if leaders != 1 {
		t.Errorf("sum of is_leader over the 3 replicas = %v, want 1", leaders)
	}
	waitFor(t, "leader reports 2 followers with lag 0", func() bool {
		lag, series := sample(t, leaderReg, "seatledger_raft_follower_lag_entries", group0)
		return series == 2 && lag == 0
	})
	waitFor(t, "every replica saw a leader", func() bool {
		for _, reg := range regs {
			if v, _ := sample(t, reg, "seatledger_raft_leader_changes_total", group0); v < 1 {
				return false
			}
		}
		return true
	})

	// A restart in the same process registers into the same registry again.
	fi := (li + 1) % 3
	tc.nodes[fi].Close()
	n, err := Start(tc.cfg(fi))
	if err != nil {
		t.Fatalf("restart %s with its registry: %v", tc.peers[fi].ID, err)
	}
	tc.nodes[fi] = n

	checkRaftLines(t, logs.String())
}

// mustGauge returns a gauge of group 0.
func mustGauge(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	v, series := sample(t, reg, name, map[string]string{"group": "0"})
	if series != 1 {
		t.Fatalf("%s{group=0}: %d series, want 1", name, series)
	}
	return v
}

// checkRaftLines wants raft's election warnings among the nodes' JSON lines,
// with node, group and component attributes, and none of raft's INFO lines.
func checkRaftLines(t *testing.T, out string) {
	t.Helper()
	warned := false
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line is not JSON: %v: %q", err, line)
		}
		if rec["component"] != "raft" {
			continue
		}
		if rec["level"] == "INFO" || rec["level"] == "DEBUG" {
			t.Errorf("raft line below WARN passed the default level: %q", line)
		}
		if strings.Count(line, `"node":`) != 1 || strings.Count(line, `"group":`) != 1 {
			t.Errorf("raft line without node and group, or with either twice: %q", line)
		}
		warned = warned || rec["level"] == "WARN"
	}
	if !warned {
		t.Errorf("no WARN line of raft's own (its election warnings) in the node logs:\n%s", out)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

func TestRaftLoggerLevelsAndAttributes(t *testing.T) {
	var buf bytes.Buffer
	base := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})).With("node", "n1", "group", 3)
	l := newRaftLogger(base, slog.LevelWarn)
	if l.IsInfo() || !l.IsWarn() || l.GetLevel() != hclog.Warn {
		t.Errorf("at WARN: IsInfo %v IsWarn %v GetLevel %v, want false true warn", l.IsInfo(), l.IsWarn(), l.GetLevel())
	}
	l.Info("entering follower state", "term", 1)
	// raft logs its *Raft, a Stringer, as "node", and formats with hclog.Fmt.
	l.Warn("entering candidate state", "node", stringer("Node at a:1 [Candidate]"), "term", 7, "servers", hclog.Fmt("%d+%d", 1, 2))
	l.Named("snapshot").With("id", "s1").Error("failed to persist", "error", errors.New("disk full"))
	l.StandardLogger(nil).Print("a standard library line")
	var recs []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line is not JSON: %q", line)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d lines, want 2 (WARN and ERROR; INFO dropped):\n%s", len(recs), buf.String())
	}
	want := []map[string]any{
		{"level": "WARN", "node": "n1", "group": 3.0, "component": "raft", "term": 7.0,
			"raft_node": "Node at a:1 [Candidate]", "servers": "1+2"},
		{"level": "ERROR", "node": "n1", "group": 3.0, "component": "raft.snapshot", "id": "s1", "error": "disk full"},
	}
	for i, w := range want {
		for k, v := range w {
			if recs[i][k] != v {
				t.Errorf("line %d: %s = %v, want %v (%v)", i, k, recs[i][k], v, recs[i])
			}
		}
	}

	buf.Reset()
	off := newRaftLogger(base, RaftLogOff)
	off.Error("dropped")
	if buf.Len() != 0 || off.GetLevel() != hclog.Off {
		t.Errorf("RaftLogOff wrote %q with level %v, want nothing and off", buf.String(), off.GetLevel())
	}
}

func TestCountResultByOpAndCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	nm, err := newNodeMetrics(reg, &Node{})
	if err != nil {
		t.Fatal(err)
	}
	m := nm.group(5)
	ok := func(cmd *ledgerpb.Command, expired uint32) {
		m.countResult(cmd, &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Expired: expired})
	}
	reject := func(cmd *ledgerpb.Command, code ledgerpb.Code) {
		m.countResult(cmd, &ledgerpb.Result{Code: code})
	}
	hold := &ledgerpb.Command{Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{}}}
	ok(&ledgerpb.Command{Op: &ledgerpb.Command_Extend{Extend: &ledgerpb.ExtendCmd{}}}, 0)
	ok(&ledgerpb.Command{Op: &ledgerpb.Command_Refund{Refund: &ledgerpb.RefundCmd{}}}, 0)
	ok(&ledgerpb.Command{Op: &ledgerpb.Command_LeaveQueue{LeaveQueue: &ledgerpb.LeaveQueueCmd{}}}, 0)
	ok(&ledgerpb.Command{Op: &ledgerpb.Command_Expire{Expire: &ledgerpb.ExpireCmd{}}}, 3)
	ok(&ledgerpb.Command{Op: &ledgerpb.Command_Expire{Expire: &ledgerpb.ExpireCmd{}}}, 2)
	reject(hold, ledgerpb.Code_CODE_SOLD_OUT)
	reject(hold, ledgerpb.Code_CODE_QUEUED)
	reject(hold, ledgerpb.Code_CODE_QUEUED)
	reject(&ledgerpb.Command{Op: &ledgerpb.Command_Confirm{Confirm: &ledgerpb.ConfirmCmd{}}}, ledgerpb.Code_CODE_HOLD_EXPIRED)
	m.countResult(hold, &ledgerpb.Result{Code: ledgerpb.Code_CODE_SEATS_TAKEN, Replayed: true})
	m.countResult(hold, nil) // a skipped replay of an entry: nothing to count
	g5 := map[string]string{"group": "5"}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"seatledger_ledger_extends_total", g5, 1},
		{"seatledger_ledger_refunds_total", g5, 1},
		{"seatledger_ledger_queue_leaves_total", g5, 1},
		{"seatledger_ledger_expired_holds_total", g5, 5},
		{"seatledger_ledger_sold_out_total", g5, 1},
		{"seatledger_ledger_queue_joins_total", g5, 2},
		{"seatledger_ledger_conflicts_total", g5, 0},
		{"seatledger_ledger_replays_total", g5, 1},
		{"seatledger_ledger_holds_total", g5, 0},
		{"seatledger_ledger_rejections_total", map[string]string{"group": "5", "op": "hold", "code": "QUEUED"}, 2},
		{"seatledger_ledger_rejections_total", map[string]string{"group": "5", "op": "confirm", "code": "HOLD_EXPIRED"}, 1},
		{"seatledger_ledger_rejections_total", g5, 4},
	} {
		if got, _ := sample(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
}

// TestMetricsReportTheStoreAndItsCheckpoints: with a small checkpoint
// bound, a few holds make every replica checkpoint behind apply; each
// node reports the checkpoints and its Pebble store's levels and writes.
func TestMetricsReportTheStoreAndItsCheckpoints(t *testing.T) {
	regs := map[string]*prometheus.Registry{}
	tc := startTestCluster(t, func(c *Config) {
		if regs[c.NodeID] == nil {
			regs[c.NodeID] = prometheus.NewRegistry()
		}
		c.Metrics = regs[c.NodeID]
		c.CheckpointBytes = 2048
	})
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	for i := range 40 {
		mustPropose(t, g, holdCmd(fmt.Sprintf("c%d", i), "r1", 0, fmt.Sprintf("A%d", i+1)))
	}
	group0 := map[string]string{"group": "0"}
	for id, reg := range regs {
		waitFor(t, id+" checkpoints behind apply", func() bool {
			n, _ := sample(t, reg, "seatledger_store_checkpoint_seconds", group0)
			return n > 0
		})
		if b, _ := sample(t, reg, "seatledger_store_checkpoint_bytes_total", group0); b < 2048 {
			t.Errorf("%s: checkpoint_bytes_total = %v, want at least the bound, 2048", id, b)
		}
		if v, _ := sample(t, reg, "seatledger_store_written_bytes_total", map[string]string{"how": "ingested"}); v <= 0 {
			t.Errorf("%s: the store ingested %v bytes, want > 0 after checkpoints", id, v)
		}
		if v, series := sample(t, reg, "seatledger_store_level_tables", nil); v <= 0 || series != 7 {
			t.Errorf("%s: %v tables in %d level series, want some in 7", id, v, series)
		}
		if v, _ := sample(t, reg, "seatledger_store_disk_bytes", nil); v <= 0 {
			t.Errorf("%s: store_disk_bytes = %v, want > 0", id, v)
		}
	}
	// Closed, a node's store reports nothing, and a scrape does not fail.
	n := tc.nodes[0]
	n.Close()
	if _, series := sample(t, regs[tc.peers[0].ID], "seatledger_store_disk_bytes", nil); series != 0 {
		t.Errorf("a closed node reported its store: %d series", series)
	}
}
