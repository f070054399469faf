// These tests run every seatbench workload for a couple of seconds against a
// real 3-node cluster of seatd processes and check that the results are
// sane: calls succeed, the stampede books exactly its 200 seats with no
// double grant with either kind of fan, watchers miss no change, expired holds cannot be confirmed, and --compare-batch runs
// both clusters, and the tool reaches a TLS cluster over gRPC and https with
// --cacert. They prove the tool works, not how fast the ledger is.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
)

var seatdBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seatbench-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	seatdBin = filepath.Join(dir, "seatd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err = proccluster.Build(ctx, seatdBin)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// runJSON runs seatbench with args and returns its JSON summary.
func runJSON(t *testing.T, out any, args ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "summary.json")
	var stdout, stderr bytes.Buffer
	args = append(args, "--json", path)
	if code := run(args, &stdout, &stderr); code != 0 {
		t.Fatalf("seatbench %s = exit %d\n%s\n%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("summary: %v\n%s", err, b)
	}
}

func call(s *Summary, name string) CallSummary {
	for _, c := range s.Calls {
		if c.Name == name {
			return c
		}
	}
	return CallSummary{Name: name}
}

func TestWorkloads(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := proccluster.Start(ctx, proccluster.Config{Binary: seatdBin, Nodes: 3, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Creating shows is an admin call: seatbench reads the token from the
	// environment, as an operator's shell would provide it.
	t.Setenv("SEATCTL_ADMIN_TOKEN", cl.AdminToken())
	var grpcEPs, httpEPs []string
	for _, n := range cl.Nodes() {
		grpcEPs, httpEPs = append(grpcEPs, n.GRPCAddr), append(httpEPs, n.HTTPAddr)
	}
	eps := "--endpoints=" + strings.Join(grpcEPs, ",")

	t.Run("uniform", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, eps, "--workload=uniform", "--shows=500", "--clients=64", "--duration=2s")
		if h := call(&s, "hold"); h.OK == 0 || h.OK+h.Conflicts != h.Attempts || call(&s, "confirm").OK == 0 {
			t.Errorf("uniform: hold %+v, confirm %+v: want successes and no errors", h, call(&s, "confirm"))
		}
		if s.Mode != "a client id per fan" {
			t.Errorf("uniform: mode %q, want %q", s.Mode, "a client id per fan")
		}
		if s.ClientBatch != "on, 1 in flight" || s.Extra["calls_per_client_batch"] == nil {
			t.Errorf("uniform: client batching %q, extra %v: want on, with calls_per_client_batch", s.ClientBatch, s.Extra)
		}
		if y := s.Machine.Yardstick; runtime.GOOS == "linux" && (y == nil || y.SyscallNs <= 0 || y.PageFaultUs <= 0 || y.FdatasyncUs <= 0 || y.LoopbackRoundTripUs <= 0 || y.MemoryLatencyNs <= 0 || y.SHA256MBs <= 0) {
			t.Errorf("uniform: machine yardstick %+v: want every figure measured", y)
		}
	})
	t.Run("uniform-unbatched", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, eps, "--workload=uniform", "--shows=200", "--clients=32", "--duration=1s", "--client-batch=false")
		if h := call(&s, "hold"); h.OK == 0 || s.ClientBatch != "off" || s.Extra["calls_per_client_batch"] != nil {
			t.Errorf("uniform --client-batch=false: hold %+v, client batching %q, extra %v: want successes, off, no Batch calls", h, s.ClientBatch, s.Extra)
		}
	})
	t.Run("uniform-http", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, "--http", "--endpoints="+strings.Join(httpEPs, ","), "--workload=uniform", "--shows=200", "--clients=32", "--duration=2s")
		if h := call(&s, "hold"); h.OK == 0 || s.Transport != "http" {
			t.Errorf("uniform over HTTP: hold %+v, transport %s", h, s.Transport)
		}
	})
	t.Run("stampede", func(t *testing.T) {
		var both Fans
		runJSON(t, &both, eps, "--workload=stampede", "--fans=both", "--duration=20s")
		for _, s := range []*Summary{both.Map, both.Skip} {
			if s == nil {
				t.Fatalf("stampede --fans both: summaries %+v, want map and skip", both)
			}
			for _, c := range s.Checks {
				if !c.OK {
					t.Errorf("%s: check %s: %s", s.Mode, c.Name, c.Detail)
				}
			}
			if len(s.Checks) < 3 || s.Extra["winners"].(float64) < 100 {
				t.Errorf("%s: checks %+v, extra %v: want 3 checks and at least 100 winners of 200 seats", s.Mode, s.Checks, s.Extra)
			}
		}
		if both.Map.Mode != "map fans" || both.Skip.Mode != "skip fans" {
			t.Errorf("stampede --fans both: modes %q, %q; want map fans, skip fans", both.Map.Mode, both.Skip.Mode)
		}
	})
	t.Run("watchers", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, "--http", "--endpoints="+strings.Join(httpEPs, ","), "--workload=watchers", "--clients=300", "--watch-nodes=3", "--duration=2s")
		for _, c := range s.Checks {
			if !c.OK {
				t.Errorf("watchers: check %s: %s", c.Name, c.Detail)
			}
		}
		// 300 watchers, each of about 30 changes (a change every 50 ms and
		// its call).
		if d, _ := s.Extra["delivered_events"].(float64); len(s.Checks) < 2 || d < 300*10 {
			t.Errorf("watchers: checks %+v, %v events delivered: want 2 checks and at least 3,000 events", s.Checks, d)
		}
	})
	t.Run("browse", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, eps, "--workload=browse", "--shows=20", "--clients=16", "--duration=2s")
		if call(&s, "seatmap_stale").OK == 0 || call(&s, "seatmap_lin").OK == 0 {
			t.Errorf("browse: calls %+v: want stale and linearizable reads", s.Calls)
		}
	})
	t.Run("lifecycle", func(t *testing.T) {
		var s Summary
		runJSON(t, &s, eps, "--workload=lifecycle", "--shows=50", "--clients=32", "--ttl=1s", "--duration=3s")
		if call(&s, "confirm_expired").OK == 0 || call(&s, "release").OK == 0 {
			t.Errorf("lifecycle: calls %+v: want expired confirms and releases", s.Calls)
		}
	})
}

func TestTLSEndpoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := proccluster.Start(ctx, proccluster.Config{Binary: seatdBin, Nodes: 3, Dir: t.TempDir(),
		TLS: &proccluster.TLS{PeerMTLS: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	t.Setenv("SEATCTL_ADMIN_TOKEN", cl.AdminToken())
	var grpcEPs, httpEPs []string
	for _, n := range cl.Nodes() {
		grpcEPs, httpEPs = append(grpcEPs, n.GRPCAddr), append(httpEPs, n.HTTPAddr)
	}
	ca := "--cacert=" + cl.TLSDir().CA()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"grpc+tls", []string{ca, "--endpoints=" + strings.Join(grpcEPs, ",")}},
		{"http+tls", []string{ca, "--http", "--endpoints=" + strings.Join(httpEPs, ",")}},
	} {
		var s Summary
		runJSON(t, &s, append(tc.args, "--workload=uniform", "--shows=100", "--clients=16", "--duration=1s")...)
		if h := call(&s, "hold"); h.OK == 0 || h.OK+h.Conflicts != h.Attempts || s.Transport != tc.name {
			t.Errorf("uniform over %s: hold %+v, transport %q; want successes, no errors, transport %s", tc.name, h, s.Transport, tc.name)
		}
	}
}

func TestCompareBatch(t *testing.T) {
	var c Compare
	runJSON(t, &c, "--seatd="+seatdBin, "--compare-batch", "--workload=uniform", "--shows=200", "--clients=32", "--duration=1s")
	if c.Batched.Cluster.MaxBatch != 1024 || c.NoBatch.Cluster.MaxBatch != 1 || c.Ratio <= 0 {
		t.Errorf("compare: batched %+v, no batch %+v, ratio %v", c.Batched.Cluster, c.NoBatch.Cluster, c.Ratio)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--endpoints=10.0.0.1:9090"},
		{"--endpoints=example.com:9090"},
		{"--endpoints=127.0.0.1:9090", "--no-batch"},
		{"--endpoints=127.0.0.1:9090", "--workload=recovery"},
		{"--workload=nope"},
		{"--duration=11m"},
		{"--ttl=1500ms"},
		{"--endpoints=127.0.0.1:9090", "--tls"},
		{"--cacert=ca.pem"},
		{"--endpoints=127.0.0.1:9090", "--cert=client.pem"},
		{"--workload=stampede", "--fixed-clients"},
		{"--workload=uniform", "--fans=map"},
		{"--workload=stampede", "--fans=nope"},
		{"--workload=stampede", "--fans=both", "--compare-batch"},
		{"--http", "--client-batch=false"},
		{"--route=any", "--client-batch=false"},
		{"--client-batches-in-flight=0"},
	} {
		var stdout, stderr bytes.Buffer
		if code := run(args, &stdout, &stderr); code != 2 {
			t.Errorf("seatbench %v = exit %d, want 2 (usage)", args, code)
		}
	}
	if err := checkEndpoints([]string{"127.0.0.2:1", "[::1]:2", "localhost:3"}, false); err != nil {
		t.Errorf("checkEndpoints(loopback) = %v", err)
	}
	if err := checkEndpoints([]string{"10.0.0.1:1"}, true); err != nil {
		t.Errorf("checkEndpoints(remote, allowed) = %v", err)
	}
}

func TestHistogram(t *testing.T) {
	var h histogram
	for i := 1; i <= 1000; i++ {
		h.record(time.Duration(i) * time.Millisecond)
	}
	s := h.snapshot()
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := s.quantile(tc.q)
		if got < tc.want || float64(got) > float64(tc.want)*1.01 {
			t.Errorf("quantile(%v) = %v, want %v within 1%%", tc.q, got, tc.want)
		}
	}
	for v := uint64(0); v < 1<<36; v = v*3/2 + 1 {
		if b := bucketOf(v); bucketHigh(b) < v || (b > 0 && bucketHigh(b-1) >= v) {
			t.Fatalf("value %d in bucket %d [%d, %d]", v, b, bucketHigh(b-1)+1, bucketHigh(b))
		}
	}
}
