package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Bounds on the parts of a run that are not measured.
const (
	clusterStartTimeout = 90 * time.Second
	setupTimeout        = 5 * time.Minute
	// setupClients bounds concurrent calls while creating shows.
	setupClients = 128
)

// workload is one kind of load.
type workload interface {
	// setup creates what the run needs (shows); it is not measured.
	setup(ctx context.Context, e *env) error
	// run is the measured part; it returns how long it took.
	run(ctx context.Context, e *env) time.Duration
	// check verifies the outcome and adds checks and figures to e.
	check(ctx context.Context, e *env)
	// mainCall names the call whose rate --compare-batch compares.
	mainCall() string
}

// env is one run: its config, the API clients, the counters and results.
type env struct {
	cfg     *config
	apis    []api
	stats   *stats
	out     io.Writer // progress and summary
	cluster *proccluster.Cluster
	// healthc reads the local cluster's /healthz (https with --tls).
	healthc *http.Client
	// tls is what the APIs dial with; nil is plaintext.
	tls    *tls.Config
	extra  map[string]any
	checks []Check
	// goClients are the run's Go clients (nil when none is in use: HTTP,
	// --route any).
	goClients goClients
}

func (e *env) addCheck(name string, ok bool, format string, args ...any) {
	e.checks = append(e.checks, Check{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
}

// runOnce runs the workload once, on its own cluster if no endpoints were
// given, and prints and returns the summary.
func runOnce(ctx context.Context, cfg *config, noBatch bool, stdout, stderr io.Writer) (*Summary, error) {
	w := workloads[cfg.workload]()
	e := &env{cfg: cfg, stats: &stats{}, out: stdout, extra: map[string]any{}, tls: cfg.clientTLS}
	sum := &Summary{Workload: cfg.workload, Mode: modeOf(cfg), Transport: "grpc", Clients: cfg.clients, Shows: cfg.shows, Seats: cfg.seats,
		DurationS: cfg.duration.Seconds(), Machine: machineInfo()}
	if !cfg.http {
		sum.Route = cfg.route
	}
	if !cfg.http && cfg.route == "leader" {
		sum.ClientBatch = "off"
		if cfg.clientBatch {
			sum.ClientBatch = fmt.Sprintf("on, %d in flight", cfg.clientBatches)
		}
	}
	if cfg.http {
		sum.Transport = "http"
	}
	sum.Machine.Yardstick = measureYardstick(cmp.Or(cfg.dir, os.TempDir()))
	endpoints := cfg.endpoints
	if len(endpoints) == 0 {
		cl, cleanup, err := startCluster(ctx, cfg, noBatch, stderr)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		e.cluster, e.tls = cl, cl.ClientTLS()
		e.healthc = cl.HTTPClient()
		defer e.healthc.CloseIdleConnections()
		cfg.adminToken = cl.AdminToken()
		for _, n := range cl.Nodes() {
			if cfg.http {
				endpoints = append(endpoints, n.HTTPAddr)
			} else {
				endpoints = append(endpoints, n.GRPCAddr)
			}
		}
		sum.Cluster = ClusterInfo{Own: true, Nodes: cfg.nodes, Groups: cfg.groups, MaxBatch: 1024, Args: clusterArgs(cfg, noBatch)}
		if noBatch {
			sum.Cluster.MaxBatch = 1
		}
	}
	sum.Cluster.Endpoints = endpoints
	if e.tls != nil {
		sum.Transport += "+tls" // so summaries with and without TLS compare
	}
	closeAPIs, err := e.dial(endpoints)
	if err != nil {
		return nil, err
	}
	defer closeAPIs()

	setupStart := time.Now()
	sctx, cancel := context.WithTimeout(ctx, setupTimeout)
	err = w.setup(sctx, e)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	if e.cluster != nil {
		e.settleLeaders(ctx)
	}
	sum.SetupS = time.Since(setupStart).Seconds()
	e.stats = &stats{} // setup calls are not part of the figures
	cpu0, idx0 := e.cpuNow(), e.appliedTotal(ctx)
	calls0, fwd0 := e.forwardTotals(ctx)
	leaders0, leadersErr := e.leaderChanges(ctx)
	mallocs0, mallocsErr := e.metricSums(ctx, "go_memstats_mallocs_total")
	batches0, batched0 := e.clientBatches()
	elapsed := w.run(ctx, e)
	if batches1, batched1 := e.clientBatches(); batches1 > batches0 {
		e.extra["calls_per_client_batch"] = fmt.Sprintf("%.1f", float64(batched1-batched0)/float64(batches1-batches0))
	}
	sum.CPU = e.cpuUse(cpu0, elapsed)
	if idx1 := e.appliedTotal(ctx); idx0 > 0 && idx1 > idx0 {
		e.extra["raft_entries_per_s"] = fmt.Sprintf("%.0f", float64(idx1-idx0)/elapsed.Seconds())
		e.extra["commands_per_entry"] = fmt.Sprintf("%.1f", float64(e.mutations())/float64(idx1-idx0))
	}
	if calls1, fwd1 := e.forwardTotals(ctx); calls1 > calls0 {
		e.extra["forwarded_per_s"] = fmt.Sprintf("%.0f", (fwd1-fwd0)/elapsed.Seconds())
		e.extra["forwarded_per_call"] = fmt.Sprintf("%.1f", (fwd1-fwd0)/(calls1-calls0))
	}
	// Elections under load: a run without faults adds only leadership
	// balancing's moves (balance.go); a leader kill adds an election in
	// each group the victim led, and the restarted node's own views.
	if leaders1, err := e.leaderChanges(ctx); err == nil && leadersErr == nil {
		e.extra["leader_changes"] = fmt.Sprintf("%.0f", leaders1-leaders0)
	}
	// The stable figures for A/B runs (docs/PERFORMANCE.md): the nodes'
	// CPU and allocations per client command, all nodes together. A node
	// restarted during the run starts its allocation count again, so a
	// negative difference reports nothing.
	if n := e.mutations(); n > 0 {
		if sum.CPU != nil && len(sum.CPU.Nodes) > 0 {
			cores := 0.0
			for _, c := range sum.CPU.Nodes {
				cores += c
			}
			e.extra["node_cpu_us_per_command"] = fmt.Sprintf("%.0f", cores*elapsed.Seconds()/float64(n)*1e6)
		}
		if m1, err := e.metricSums(ctx, "go_memstats_mallocs_total"); err == nil && mallocsErr == nil {
			if d := m1["go_memstats_mallocs_total"] - mallocs0["go_memstats_mallocs_total"]; d > 0 {
				e.extra["node_allocs_per_command"] = fmt.Sprintf("%.0f", d/float64(n))
			}
		}
	}
	sum.ElapsedS = elapsed.Seconds()
	sum.Calls = e.stats.summarize(elapsed)
	w.check(ctx, e)
	sum.Machine.LoadAvgEnd = loadAvg()
	sum.Extra, sum.Checks, sum.Passed = e.extra, e.checks, ctx.Err() == nil
	for _, c := range e.checks {
		sum.Passed = sum.Passed && c.OK
	}
	printSummary(stdout, sum)
	return sum, nil
}

// clientBatches is the Go clients' Batch calls and the calls they carried
// so far (zeros without Go clients).
func (e *env) clientBatches() (batches, calls uint64) {
	return e.goClients.batchStats()
}

// appliedTotal is the sum of every group's applied index on the first local
// node (0 without a local cluster): the raft entries the cluster applied.
func (e *env) appliedTotal(ctx context.Context) uint64 {
	if e.cluster == nil {
		return 0
	}
	applied, err := e.healthApplied(ctx, e.cluster.Nodes()[0])
	if err != nil {
		return 0
	}
	var sum uint64
	for _, a := range applied {
		sum += a
	}
	return sum
}

// forwardTotals sums, over the local nodes, the Peer calls they made to
// forward commands and the commands those carried
// (seatledger_forward_batch_commands' count and sum); zeros without a local
// cluster or from a seatd that does not export it.
func (e *env) forwardTotals(ctx context.Context) (calls, commands float64) {
	m, _ := e.metricSums(ctx, "seatledger_forward_batch_commands_count", "seatledger_forward_batch_commands_sum")
	return m["seatledger_forward_batch_commands_count"], m["seatledger_forward_batch_commands_sum"]
}

// leaderChanges sums seatledger_raft_leader_changes_total over the local
// nodes: every replica counts each new leader it sees, so one election in
// a group of three replicas counts up to three. A restarted node's count
// starts again from its own elections.
func (e *env) leaderChanges(ctx context.Context) (float64, error) {
	m, err := e.metricSums(ctx, "seatledger_raft_leader_changes_total")
	return m["seatledger_raft_leader_changes_total"], err
}

// metricSums sums each named metric over its labels and the local nodes'
// /metrics; an error without a local cluster, or when a node does not
// answer.
func (e *env) metricSums(ctx context.Context, names ...string) (map[string]float64, error) {
	sums := map[string]float64{}
	if e.cluster == nil {
		return sums, errors.New("no local cluster")
	}
	for _, n := range e.cluster.Nodes() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.cluster.HTTPURL(n, "/metrics"), nil)
		if err != nil {
			return map[string]float64{}, err
		}
		resp, err := e.healthc.Do(req)
		if err != nil {
			return map[string]float64{}, err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return map[string]float64{}, err
		}
		for line := range strings.Lines(string(b)) {
			// name{labels} value, or name value without labels.
			name, rest, labelled := strings.Cut(line, "{")
			var val string
			if labelled {
				_, val, _ = strings.Cut(rest, "} ")
			} else {
				name, val, _ = strings.Cut(line, " ")
			}
			if slices.Contains(names, name) {
				v, _ := strconv.ParseFloat(strings.TrimSpace(val), 64)
				sums[name] += v
			}
		}
	}
	return sums, nil
}

// mutations counts the client commands sent (every call but reads).
func (e *env) mutations() uint64 {
	var n uint64
	for _, c := range e.stats.calls() {
		if !strings.HasPrefix(c.name, "seatmap") && !strings.HasPrefix(c.name, "seatstates") && c.name != "final_read" {
			n += c.attempts.Load()
		}
	}
	return n
}

func (e *env) dial(endpoints []string) (func(), error) {
	if e.cfg.http {
		apis, closeFn := newHTTPAPIs(endpoints, e.cfg.clients, e.cfg.adminToken, e.tls)
		e.apis = apis
		return closeFn, nil
	}
	apis, closeFn, gc, err := dialGRPC(endpoints, e.cfg.conns, e.cfg.route == "leader", !e.cfg.clientBatch, e.cfg.clientBatches, e.cfg.adminToken, e.tls)
	e.apis, e.goClients = apis, gc
	return closeFn, err
}

func clusterArgs(cfg *config, noBatch bool) []string {
	args := append([]string(nil), cfg.seatdArgs...)
	if noBatch {
		args = append(args, "--max-batch", "1")
	}
	return args
}

// buildSeatd builds ./cmd/seatd into a temporary directory.
func buildSeatd(ctx context.Context) (string, func(), error) {
	dir, err := os.MkdirTemp("", "seatbench-bin-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	bin := filepath.Join(dir, "seatd")
	bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := proccluster.Build(bctx, bin); err != nil {
		cleanup()
		return "", nil, err
	}
	return bin, cleanup, nil
}

// startCluster starts a local cluster of cfg.seatd processes (fsync on:
// seatd always syncs its raft log).
func startCluster(ctx context.Context, cfg *config, noBatch bool, stderr io.Writer) (*proccluster.Cluster, func(), error) {
	var cleanups []func()
	cleanup := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	dir := cfg.dir
	if dir == "" {
		d, err := os.MkdirTemp("", "seatbench-")
		if err != nil {
			return nil, nil, err
		}
		dir = d
		if !cfg.keep {
			cleanups = append(cleanups, func() { os.RemoveAll(d) })
		}
	} else {
		// A fresh sub-directory per run, so batched and no-batch runs of
		// --compare-batch do not share state.
		d, err := os.MkdirTemp(dir, "run-")
		if err != nil {
			return nil, nil, err
		}
		dir = d
	}
	bin := cfg.seatd
	sctx, cancel := context.WithTimeout(ctx, clusterStartTimeout)
	defer cancel()
	start := time.Now()
	var tlsOpts *proccluster.TLS
	if cfg.tls {
		tlsOpts = &proccluster.TLS{PeerMTLS: true}
	}
	cl, err := proccluster.Start(sctx, proccluster.Config{Binary: bin, Nodes: cfg.nodes, Dir: filepath.Join(dir, "cluster"),
		Groups: cfg.groups, Args: clusterArgs(cfg, noBatch), TLS: tlsOpts})
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	fmt.Fprintf(stderr, "seatbench: started %d seatd nodes in %s (data in %s)\n", cfg.nodes, time.Since(start).Round(time.Millisecond), dir)
	if cfg.storeUsage {
		// Runs after Close (cleanups run last first), before the removal.
		state := filepath.Join(dir, "cluster", "n1", "data", "state")
		cleanups = append(cleanups, func() { printStoreUsage(stderr, state) })
	}
	cleanups = append(cleanups, func() { cl.Close() })
	return cl, cleanup, nil
}

// worker is one simulated client.
type worker struct {
	id     int
	api    api
	rng    *rand.Rand
	client string
	seq    uint64
	stop   *atomic.Bool
}

// requestID returns the worker's next request id.
func (w *worker) requestID() string {
	w.seq++
	return "r" + strconv.FormatUint(w.seq, 36)
}

func (w *worker) stopped() bool { return w.stop.Load() }

// runWorkers runs n workers until d passes (each finishes its current call)
// or every worker returns, printing progress each second. It returns the
// time until the last worker returned.
func (e *env) runWorkers(ctx context.Context, n int, d time.Duration, fn func(ctx context.Context, w *worker)) time.Duration {
	var stop atomic.Bool
	start := time.Now()
	progressDone := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		e.stats.progress(e.out, start, progressDone)
	}()
	timer := time.AfterFunc(d, func() { stop.Store(true) })
	defer timer.Stop()
	cancelWatch := context.AfterFunc(ctx, func() { stop.Store(true) })
	defer cancelWatch()
	var wg sync.WaitGroup
	for i := range n {
		w := &worker{id: i, api: e.apis[i%len(e.apis)], rng: rand.New(rand.NewPCG(uint64(i), uint64(start.UnixNano()))),
			client: fmt.Sprintf("%s-c%d", e.cfg.prefix, i), stop: &stop}
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(ctx, w)
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(progressDone)
	pwg.Wait()
	return elapsed
}

// newShow returns a show of seats seats in rows of up to 20 (rows A, B, ...).
func newShow(id string, seats int) *ledgerpb.Show {
	s := &ledgerpb.Show{ShowId: id, Title: "seatbench " + id,
		Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 1200, Currency: "EUR"}}}
	for r := 0; seats > 0; r++ {
		n := min(seats, rowSeats)
		s.Rows = append(s.Rows, &ledgerpb.Row{Name: rowName(r), Seats: uint32(n), Category: "std"})
		seats -= n
	}
	return s
}

// rowSeats is the width of every row seatbench creates.
const rowSeats = 20

// rowName names row r: A..Z, then AA, AB, ...
func rowName(r int) string {
	if r < 26 {
		return string(rune('A' + r))
	}
	return rowName(r/26-1) + string(rune('A'+r%26))
}

// seatID names seat n (0-based) of row r.
func seatID(r, n int) string { return rowName(r) + strconv.Itoa(n+1) }

// showID names show i of this run.
func (e *env) showID(kind string, i int) string {
	return fmt.Sprintf("%s-%s-%d", e.cfg.prefix, kind, i)
}

// createShows creates the shows with setupClients concurrent calls.
func (e *env) createShows(ctx context.Context, ids []string, seats int) error {
	cs := e.stats.call("create_show")
	next := atomic.Int64{}
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range min(setupClients, len(ids)) {
		a := e.apis[i%len(e.apis)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1)) - 1
				if j >= len(ids) || firstErr.Load() != nil {
					return
				}
				req := &ledgerpb.CreateShowRequest{Show: newShow(ids[j], seats)}
				if err := cs.run(ctx, func(ctx context.Context) error { return a.CreateShow(ctx, req) }); err != nil {
					firstErr.CompareAndSwap(nil, fmt.Errorf("create show %s: %w", ids[j], err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return err
	}
	return nil
}

// CPUUse is CPU time spent during the measured run, as a share of one core.
type CPUUse struct {
	Seatbench float64            `json:"seatbench_core_share"`
	Nodes     map[string]float64 `json:"node_core_share,omitempty"`
	Total     float64            `json:"total_core_share"`
	// NodeKernel is the share of the nodes' CPU spent in the kernel:
	// syscalls, page faults, the network stack. It tells the machine's
	// hour from the code's cost (docs/PERFORMANCE.md, "The machine's
	// hour").
	NodeKernel float64 `json:"node_kernel_share,omitempty"`
}

// cpuSample is CPU seconds of this process and of each local node.
type cpuSample struct {
	self  float64
	nodes map[string]float64
	// nodesSys is the nodes' CPU seconds in the kernel, together.
	nodesSys float64
}

func (e *env) cpuNow() cpuSample {
	s := cpuSample{self: selfCPU(), nodes: map[string]float64{}}
	if e.cluster != nil {
		for _, n := range e.cluster.Nodes() {
			if pid := n.PID(); pid != 0 {
				user, sys := procCPUSplit(pid)
				s.nodes[n.ID] = user + sys
				s.nodesSys += sys
			}
		}
	}
	return s
}

func (e *env) cpuUse(before cpuSample, elapsed time.Duration) *CPUUse {
	after := e.cpuNow()
	sec := elapsed.Seconds()
	if sec <= 0 {
		return nil
	}
	u := &CPUUse{Seatbench: (after.self - before.self) / sec}
	u.Total = u.Seatbench
	if len(after.nodes) > 0 {
		u.Nodes = map[string]float64{}
		for id, v := range after.nodes {
			if b, ok := before.nodes[id]; ok && v >= b {
				u.Nodes[id] = (v - b) / sec
				u.Total += u.Nodes[id]
			}
		}
		if all := (u.Total - u.Seatbench) * sec; all > 0 && after.nodesSys >= before.nodesSys {
			u.NodeKernel = (after.nodesSys - before.nodesSys) / all
		}
	}
	return u
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times (100 on every
// Linux build that matters here).
const clockTicks = 100

// procCPU returns user+system CPU seconds of a process from /proc.
func procCPU(pid int) float64 {
	user, sys := procCPUSplit(pid)
	return user + sys
}

// procCPUSplit returns a process's user and system CPU seconds from /proc.
func procCPUSplit(pid int) (user, sys float64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0, 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return ut / clockTicks, st / clockTicks
}

// procRSSMiB returns a process's resident set in MiB from /proc.
func procRSSMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseFloat(f[0], 64)
				return kb / 1024
			}
		}
	}
	return 0
}

// nodeRSS records each local node's RSS under extra[key].
func (e *env) nodeRSS(key string) map[string]float64 {
	if e.cluster == nil {
		return nil
	}
	out := map[string]float64{}
	for _, n := range e.cluster.Nodes() {
		if pid := n.PID(); pid != 0 {
			out[n.ID] = procRSSMiB(pid)
		}
	}
	e.extra[key] = out
	return out
}

func printSummary(w io.Writer, s *Summary) {
	name := s.Workload
	if s.Mode != "" {
		name += " (" + s.Mode + ")"
	}
	over := s.Transport
	if s.Route != "" {
		over += ", calls to " + map[string]string{"leader": "their leaders", "any": "any node"}[s.Route]
	}
	if s.ClientBatch != "" {
		over += ", client batching " + s.ClientBatch
	}
	fmt.Fprintf(w, "\nseatbench %s over %s: %d clients, %d shows x %d seats, measured %.1fs (setup %.1fs), load %s -> %s\n",
		name, over, s.Clients, s.Shows, s.Seats, s.ElapsedS, s.SetupS, s.Machine.LoadAvgStart, s.Machine.LoadAvgEnd)
	if y := s.Machine.Yardstick; y != nil {
		fmt.Fprintf(w, "machine at the start: syscall %.0f ns, page fault %.1f µs, 4 KiB write+fdatasync %.0f µs, loopback round trip %.1f µs, memory load %.0f ns, sha256 %.0f MB/s\n",
			y.SyscallNs, y.PageFaultUs, y.FdatasyncUs, y.LoopbackRoundTripUs, y.MemoryLatencyNs, y.SHA256MBs)
	}
	printCalls(w, s.Calls)
	if s.CPU != nil {
		fmt.Fprintf(w, "cpu (share of one core): seatbench %.2f, nodes %v, total %.2f of %d", s.CPU.Seatbench, roundMap(s.CPU.Nodes), s.CPU.Total, s.Machine.CPUs)
		if s.CPU.NodeKernel > 0 {
			fmt.Fprintf(w, "; the nodes' in the kernel %.0f %%", 100*s.CPU.NodeKernel)
		}
		fmt.Fprintln(w)
	}
	for k, v := range s.Extra {
		fmt.Fprintf(w, "%s: %v\n", k, v)
	}
	for _, c := range s.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "check %s %s: %s\n", mark, c.Name, c.Detail)
	}
}

func roundMap(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(int(v*100+0.5)) / 100
	}
	return out
}

// printStoreUsage prints what a stopped node's store holds, by kind of
// record (--store-usage).
func printStoreUsage(w io.Writer, state string) {
	usage, err := fsm.StoreUsage(state)
	if err != nil {
		fmt.Fprintf(w, "seatbench: store usage: %v\n", err)
		return
	}
	var records, bytes int64
	for _, u := range usage {
		records += u.Records
		bytes += u.KeyBytes + u.ValueBytes
	}
	fmt.Fprintf(w, "seatbench: n1's store (%s): %d records, %.1f MB of keys and values before compression\n", state, records, float64(bytes)/1e6)
	fmt.Fprintf(w, "%-24s %10s %10s %12s %12s\n", "kind", "records", "MB", "key B/rec", "value B/rec")
	for _, u := range usage {
		fmt.Fprintf(w, "%-24s %10d %10.1f %12.0f %12.0f\n", u.Kind, u.Records, float64(u.KeyBytes+u.ValueBytes)/1e6,
			float64(u.KeyBytes)/float64(u.Records), float64(u.ValueBytes)/float64(u.Records))
	}
}
