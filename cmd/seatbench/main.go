// Command seatbench is seatledger's load generator. It drives a running
// cluster (--endpoints) or a 3-node cluster of `seatd serve` processes it
// starts itself on loopback (fsync on), over gRPC or HTTP/JSON (--http), with
// one of these workloads:
//
//	uniform    many shows; hold 1-4 adjacent seats, confirm half, release a fifth;
//	           each hold a new fan with its own client id (--fixed-clients: one per worker)
//	stampede   1,000 fans race for one 200-seat show until it is sold out; after a
//	           conflict a fan reads the map again (--fans map) or skips the seats
//	           the conflict named (skip); --fans both runs both on fresh shows
//	browse     seat-map reads, stale then linearizable
//	lifecycle  hold -> confirm / release / expire with short TTLs
//	recovery   load shows, measure node RSS, kill a node and time its restart
//	idle       CPU used by an idle cluster
//	watchers   SSE clients follow one show while one writer holds and releases
//	waitingroom --joins fans join one show's waiting room in a burst; then the room
//	           admits at --admit-rate for --duration (waitingroom.go); with
//	           --kill-leader the room's leader process is killed halfway
//
// On a local cluster the measured phase starts once the leaderships are
// balanced (every group led, none beyond a node's fair share: settle.go),
// with the Go clients' routing tables read afresh: a cluster that just
// started has most groups on one node until its balancer moves them
// (leaders_at_start and leaders_settled_s in the summary).
//
// Every mutating call carries client_id + request_id and is retried on
// 503/UNAVAILABLE with the same ids (exactly once). It prints a progress line
// each second and a summary at the end (--json FILE for JSON). Load goes to
// loopback addresses only unless --allow-remote. --tls starts the local cluster
// with TLS on every port and peer mTLS; --cacert, --cert and --key (seatctl's
// flags) reach a TLS cluster given by --endpoints. --cpuprofile FILE profiles
// seatbench itself, which shares the machine with the nodes it measures
// (cmd/seatbench/profile.sh profiles the nodes).
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/seatledger/seatledger/internal/certs"
)

// durationMax bounds one measured run; load tests here are short by design.
const durationMax = 10 * time.Minute

type config struct {
	// adminToken authenticates the calls that create shows (all calls
	// carry it: the load tool is an operator's tool).
	adminToken   string
	workload     string
	endpoints    []string
	http         bool
	duration     time.Duration
	clients      int
	shows        int
	seats        int
	conns        int
	ttl          time.Duration
	read         string
	seatStates   bool
	fixedClients bool
	route        string
	fans         string
	fill         float64
	noBatch      bool
	compareBatch bool
	allowRemote  bool
	seatd        string
	dir          string
	keep         bool
	storeUsage   bool
	groups       int
	nodes        int
	jsonPath     string
	cpuProfile   string
	prefix       string
	seatdArgs    []string
	// clientBatch: the Go client batches writes (--client-batch);
	// clientBatches: its Batch calls in flight per node.
	clientBatch   bool
	clientBatches int
	// watchers: SSE watchers of the stampeded show (stampede); watchNodes:
	// how many nodes the watchers connect to, round robin (watchers).
	watchers   int
	watchNodes int
	// tls starts the local cluster with TLS and peer mTLS; clientTLS is
	// what --cacert/--cert/--key give for --endpoints (nil: plaintext).
	tls       bool
	clientTLS *tls.Config
	// joins and admitRate shape the waitingroom workload.
	joins      int
	admitRate  int
	killLeader bool
}

// workloads makes each workload fresh for every run: a workload keeps the
// state of its run (the stampede's winners), and --compare-batch and --fans
// both run twice in one process.
var workloads = map[string]func() workload{
	"uniform":     func() workload { return &uniform{} },
	"stampede":    func() workload { return &stampede{} },
	"browse":      func() workload { return &browse{} },
	"lifecycle":   func() workload { return &lifecycle{} },
	"recovery":    func() workload { return &recovery{} },
	"idle":        func() workload { return &idle{} },
	"watchers":    func() workload { return &watchers{} },
	"waitingroom": func() workload { return &waitingroom{} },
}

// defaults per workload for flags left unset.
var workloadDefaults = map[string]struct{ clients, shows, seats int }{
	"uniform":     {256, 20000, 200},
	"stampede":    {1000, 1, 200},
	"browse":      {64, 100, 200},
	"lifecycle":   {128, 1000, 200},
	"recovery":    {64, 10000, 300},
	"idle":        {0, 0, 0},
	"watchers":    {1000, 1, 20},
	"waitingroom": {256, 1, 200},
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("seatbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	endpoints := fs.String("endpoints", "", "comma-separated gRPC (or, with --http, HTTP) addresses of a running cluster; empty starts a local 3-node cluster")
	fs.StringVar(&c.workload, "workload", "uniform", "uniform, stampede, browse, lifecycle, recovery, idle, watchers or waitingroom")
	fs.BoolVar(&c.http, "http", false, "call the HTTP/JSON API instead of gRPC")
	fs.DurationVar(&c.duration, "duration", 30*time.Second, "how long to measure (at most 10m)")
	fs.IntVar(&c.clients, "clients", 0, "concurrent clients (default: uniform 256, stampede 1000, browse 64, lifecycle 128)")
	fs.IntVar(&c.shows, "shows", 0, "shows (default: uniform 20000, browse 100, lifecycle 1000, recovery 10000)")
	fs.IntVar(&c.watchers, "watchers", 0, "stampede: SSE watchers following the stampeded show, connected before it starts")
	fs.IntVar(&c.watchNodes, "watch-nodes", 1, "watchers (and stampede --watchers): spread the watchers over the first N nodes, round robin")
	fs.IntVar(&c.seats, "seats", 0, "seats per show, in rows of 20 (default 200; recovery 300)")
	fs.IntVar(&c.conns, "conns", 2, "gRPC connections per endpoint")
	tokenFile := fs.String("admin-token-file", "", "with --endpoints: the cluster's admin token (creating shows is an admin call); default $SEATCTL_ADMIN_TOKEN")
	fs.DurationVar(&c.ttl, "ttl", 2*time.Second, "lifecycle: hold TTL (whole seconds, 1s..30m)")
	fs.StringVar(&c.read, "read", "both", "browse: stale, linearizable or both (half the duration each)")
	fs.BoolVar(&c.seatStates, "seat-states", false, "browse: read seat maps without their layout (states_only), as a client polling a map it already has does")
	fs.StringVar(&c.route, "route", "leader", "gRPC: leader sends each call to its show's group leader with the Go client (client/), as a Go backend would; any pins each worker to one node, which forwards what it does not lead")
	fs.BoolVar(&c.fixedClients, "fixed-clients", false, "uniform: each worker sends every hold under its one client id, instead of a new client id per hold (fan); hides the ledger's per-client cost")
	fs.StringVar(&c.fans, "fans", "", "stampede: after a conflict each fan reads the map again, at most every 50 ms (map, the default), or holds the next best seats at once, skipping those the conflict named (skip); both runs map then skip, on fresh shows")
	fs.IntVar(&c.joins, "joins", 100000, "waitingroom: fans that join the room in the burst")
	fs.IntVar(&c.admitRate, "admit-rate", 200, "waitingroom: the room's admissions a second (1..10000)")
	fs.BoolVar(&c.killLeader, "kill-leader", false, "waitingroom, local cluster: halfway through the measurement SIGKILL the seatd process leading the room's group, time until admissions resume and check that no sampled place changed; then restart it")
	fs.Float64Var(&c.fill, "fill", 0.25, "recovery: share of seats held (half of them confirmed) before the restart")
	fs.BoolVar(&c.noBatch, "no-batch", false, "start the cluster with seatd serve --max-batch 1 (one command per raft entry)")
	fs.BoolVar(&c.clientBatch, "client-batch", true, "gRPC with --route leader: the Go client sends concurrent writes to a node together in Batch calls (client/); false sends every call alone")
	fs.IntVar(&c.clientBatches, "client-batches-in-flight", 1, "with --client-batch: Batch calls in flight per node and Go client (client.Config.BatchesInFlight; 1 is TigerBeetle's rule)")
	fs.BoolVar(&c.compareBatch, "compare-batch", false, "run the workload on a batched cluster, then on a --no-batch one, and print the ratio")
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow non-loopback --endpoints")
	fs.StringVar(&c.seatd, "seatd", "", "seatd binary for the local cluster (default: build ./cmd/seatd)")
	fs.StringVar(&c.dir, "dir", "", "data directory for the local cluster (default: a temporary one)")
	fs.BoolVar(&c.keep, "keep", false, "keep the local cluster's data directory")
	fs.BoolVar(&c.storeUsage, "store-usage", false, "once the local cluster stopped, print what node n1's Pebble store holds, by kind of record (to stderr)")
	fs.IntVar(&c.groups, "groups", 0, "raft groups of the local cluster (0: seatd's default, 8)")
	fs.IntVar(&c.nodes, "nodes", 3, "nodes of the local cluster: 3 or 5")
	fs.StringVar(&c.jsonPath, "json", "", "write the JSON summary to this file")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of seatbench itself (not the nodes) to this file")
	fs.StringVar(&c.prefix, "prefix", "", "show and client id prefix (default: unique per run)")
	seatdArgs := fs.String("seatd-args", "", "extra space-separated arguments for every local seatd")
	fs.BoolVar(&c.tls, "tls", false, "start the local cluster with TLS on every port and --peer-mtls, and call it over TLS (measures TLS's cost)")
	var tlsFiles certs.ClientFiles
	fs.StringVar(&tlsFiles.CAFile, "cacert", os.Getenv("SEATCTL_CACERT"), "with --endpoints: speak TLS, verifying the nodes with this CA (default $SEATCTL_CACERT)")
	fs.StringVar(&tlsFiles.CertFile, "cert", os.Getenv("SEATCTL_CERT"), "with --endpoints: client certificate for nodes started with --client-ca (default $SEATCTL_CERT)")
	fs.StringVar(&tlsFiles.KeyFile, "key", os.Getenv("SEATCTL_KEY"), "key of --cert (default $SEATCTL_KEY)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.adminToken = os.Getenv("SEATCTL_ADMIN_TOKEN")
	if *tokenFile != "" {
		b, err := os.ReadFile(*tokenFile)
		if err != nil {
			return nil, fmt.Errorf("--admin-token-file: %w", err)
		}
		c.adminToken = strings.TrimSpace(string(b))
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *endpoints != "" {
		c.endpoints = strings.Split(*endpoints, ",")
	}
	c.seatdArgs = strings.Fields(*seatdArgs)
	var err error
	if c.clientTLS, err = tlsFiles.Config(); err != nil {
		return nil, err
	}
	if c.clientTLS != nil && *endpoints == "" {
		return nil, errors.New("--cacert, --cert and --key are for --endpoints (--tls starts a local TLS cluster)")
	}
	if c.storeUsage && *endpoints != "" {
		return nil, errors.New("--store-usage reads the local cluster's store: drop --endpoints")
	}
	if err := c.fillDefaults(); err != nil {
		return nil, err
	}
	return c, c.validate()
}

func (c *config) fillDefaults() error {
	d, ok := workloadDefaults[c.workload]
	if !ok {
		return fmt.Errorf("--workload: unknown workload %q", c.workload)
	}
	if c.clients == 0 {
		c.clients = d.clients
	}
	if c.shows == 0 {
		c.shows = d.shows
	}
	if c.seats == 0 {
		c.seats = d.seats
	}
	if c.workload == "stampede" && c.fans == "" {
		c.fans = fansMap
	}
	if c.prefix == "" {
		c.prefix = fmt.Sprintf("sb%x", time.Now().UnixNano()%(1<<32))
	}
	return nil
}

func (c *config) validate() error {
	switch {
	case c.duration <= 0 || c.duration > durationMax:
		return fmt.Errorf("--duration must be in (0, %v]", durationMax)
	case c.workload != "idle" && (c.clients < 1 || c.clients > 100000):
		return errors.New("--clients must be in 1..100000")
	case c.watchers < 0 || c.watchers > 100000 || (c.watchers > 0 && c.workload != "stampede"):
		return errors.New("--watchers must be in 0..100000, with --workload stampede")
	case c.watchNodes < 1 || c.watchNodes > 5:
		return errors.New("--watch-nodes must be in 1..5")
	case c.workload == "stampede" && c.shows != 1:
		return errors.New("--shows: the stampede is one show")
	case c.seats < 0 || c.seats > 10000:
		return errors.New("--seats must be in 1..10000")
	case c.conns < 1 || c.conns > 64:
		return errors.New("--conns must be in 1..64")
	case c.ttl < time.Second || c.ttl > 30*time.Minute || c.ttl%time.Second != 0:
		return errors.New("--ttl must be whole seconds in 1s..30m")
	case c.read != "stale" && c.read != "linearizable" && c.read != "both":
		return errors.New("--read must be stale, linearizable or both")
	case c.fill < 0 || c.fill > 1:
		return errors.New("--fill must be in 0..1")
	case c.nodes != 3 && c.nodes != 5:
		return errors.New("--nodes must be 3 or 5")
	case c.route != "leader" && c.route != "any":
		return errors.New("--route must be leader or any")
	case c.fixedClients && c.workload != "uniform":
		return errors.New("--fixed-clients is for --workload uniform")
	case c.workload != "stampede" && c.fans != "":
		return errors.New("--fans is for --workload stampede")
	case c.workload == "stampede" && c.fans != fansMap && c.fans != fansSkip && c.fans != fansBoth:
		return errors.New("--fans must be map, skip or both")
	case c.joins < 1 || c.joins > 500000:
		return errors.New("--joins must be in 1..500000 (a room's entries are bounded)")
	case c.admitRate < 1 || c.admitRate > 10000:
		return errors.New("--admit-rate must be in 1..10000")
	case c.killLeader && c.workload != "waitingroom":
		return errors.New("--kill-leader is for --workload waitingroom")
	case !c.clientBatch && (c.http || c.route != "leader"):
		return errors.New("--client-batch is the Go client's (gRPC with --route leader)")
	case c.clientBatches < 1 || c.clientBatches > 64:
		return errors.New("--client-batches-in-flight must be in 1..64")
	case c.fans == fansBoth && c.compareBatch:
		return errors.New("--fans both and --compare-batch each run twice: pick one")
	}
	if len(c.endpoints) > 0 {
		if c.noBatch || c.compareBatch || c.tls {
			return errors.New("--no-batch, --compare-batch and --tls start their own clusters: drop --endpoints")
		}
		if c.workload == "recovery" || c.workload == "idle" || c.killLeader {
			return fmt.Errorf("--workload %s (or --kill-leader) needs its own cluster: drop --endpoints", c.workload)
		}
		return checkEndpoints(c.endpoints, c.allowRemote)
	}
	return nil
}

// checkEndpoints refuses load on anything but loopback unless allowed.
func checkEndpoints(eps []string, allowRemote bool) error {
	for _, ep := range eps {
		host, _, err := net.SplitHostPort(ep)
		if err != nil {
			return fmt.Errorf("--endpoints: %q is not host:port", ep)
		}
		if allowRemote || host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return fmt.Errorf("--endpoints: %s is not a loopback address (use --allow-remote to load a remote cluster)", ep)
		}
	}
	return nil
}

func main() {
	if os.Getenv(watchChildEnv) != "" {
		os.Exit(runWatchChild(os.Stdin, os.Stdout))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the exit: 0 ok, 1 failed checks or errors, 2 usage.
func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "seatbench: %v\n", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(cfg.endpoints) == 0 && cfg.seatd == "" {
		bin, cleanup, err := buildSeatd(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
		defer cleanup()
		cfg.seatd = bin
	}
	if cfg.cpuProfile != "" {
		stopProfile, err := startCPUProfile(cfg.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
		defer stopProfile()
	}
	var result any
	ok := true
	switch {
	case cfg.fans == fansBoth:
		both, err := runFans(ctx, cfg, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
		result, ok = both, both.Map.Passed && both.Skip.Passed
	case cfg.compareBatch:
		cmp, err := runCompare(ctx, cfg, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
		result, ok = cmp, cmp.Batched.Passed && cmp.NoBatch.Passed
	default:
		sum, err := runOnce(ctx, cfg, cfg.noBatch, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
		result, ok = sum, sum.Passed
	}
	if cfg.jsonPath != "" {
		b, _ := json.MarshalIndent(result, "", "  ")
		if err := os.WriteFile(cfg.jsonPath, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintf(stderr, "seatbench: %v\n", err)
			return 1
		}
	}
	if !ok {
		fmt.Fprintln(stderr, "seatbench: FAILED checks")
		return 1
	}
	return 0
}

// startCPUProfile profiles seatbench, the load generator, which shares the
// machine with the nodes it drives: its own cost is part of every figure.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// Summary is the JSON summary of one run.
type Summary struct {
	Workload  string         `json:"workload"`
	Mode      string         `json:"mode,omitempty"`  // the workload's variant, see modeOf
	Transport string         `json:"transport"`       // grpc or http, +tls over TLS
	Route     string         `json:"route,omitempty"` // grpc: leader (client/) or any node (--route)
	Clients   int            `json:"clients"`
	Shows     int            `json:"shows"`
	Seats     int            `json:"seats_per_show"`
	DurationS float64        `json:"duration_s"`
	ElapsedS  float64        `json:"elapsed_s"`
	SetupS    float64        `json:"setup_s"`
	Cluster   ClusterInfo    `json:"cluster"`
	Machine   MachineInfo    `json:"machine"`
	Calls     []CallSummary  `json:"calls"`
	CPU       *CPUUse        `json:"cpu,omitempty"`
	Extra     map[string]any `json:"extra,omitempty"`
	Checks    []Check        `json:"checks"`
	Passed    bool           `json:"passed"`
	// ClientBatch is "on, N in flight" or "off" with the Go client
	// (--client-batch, --client-batches-in-flight), else "".
	ClientBatch string `json:"client_batch,omitempty"`
}

// ClusterInfo says what was loaded.
type ClusterInfo struct {
	Own       bool     `json:"own"`
	Nodes     int      `json:"nodes,omitempty"`
	Groups    int      `json:"groups,omitempty"`
	MaxBatch  int      `json:"max_batch,omitempty"`
	Endpoints []string `json:"endpoints"`
	Args      []string `json:"seatd_args,omitempty"`
}

// MachineInfo says where and when.
type MachineInfo struct {
	CPUs         int    `json:"cpus"`
	GOOS         string `json:"goos"`
	GOARCH       string `json:"goarch"`
	GoVersion    string `json:"go_version"`
	Start        string `json:"start"`
	LoadAvgStart string `json:"loadavg_start"`
	LoadAvgEnd   string `json:"loadavg_end"`
	// Yardstick is the machine's speed at the run's start (Linux only).
	Yardstick *Yardstick `json:"yardstick,omitempty"`
}

// Yardstick is what the parts of a node's CPU per command cost on this
// machine at this hour (yardstick_linux.go); a field is 0 when it could
// not be measured.
type Yardstick struct {
	SyscallNs           float64 `json:"syscall_ns"`             // getppid
	PageFaultUs         float64 `json:"page_fault_us"`          // first touch of an anonymous page
	FdatasyncUs         float64 `json:"write_fdatasync_us"`     // a 4 KiB pwrite and its fdatasync, in the data directory's file system
	LoopbackRoundTripUs float64 `json:"loopback_round_trip_us"` // 1 byte each way over 127.0.0.1
	MemoryLatencyNs     float64 `json:"memory_latency_ns"`      // a load that misses every cache
	SHA256MBs           float64 `json:"sha256_mb_per_s"`        // one core
}

// Check is one verified property of a run.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Compare is the JSON summary of --compare-batch.
type Compare struct {
	Batched *Summary `json:"batched"`
	NoBatch *Summary `json:"no_batch"`
	// Ratio is batched over no-batch successes per second of the main call.
	Ratio float64 `json:"ratio"`
	Call  string  `json:"call"`
}

func runCompare(ctx context.Context, cfg *config, stdout, stderr io.Writer) (*Compare, error) {
	fmt.Fprintln(stdout, "== batched (group commit on)")
	a, err := runOnce(ctx, cfg, false, stdout, stderr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(stdout, "== no batch (seatd serve --max-batch 1)")
	b, err := runOnce(ctx, cfg, true, stdout, stderr)
	if err != nil {
		return nil, err
	}
	call := workloads[cfg.workload]().mainCall()
	cmp := &Compare{Batched: a, NoBatch: b, Call: call}
	ra, rb := okRate(a, call), okRate(b, call)
	if rb > 0 {
		cmp.Ratio = ra / rb
	}
	fmt.Fprintf(stdout, "== %s ok/s: batched %.0f, no batch %.0f, ratio %.2fx\n", call, ra, rb, cmp.Ratio)
	return cmp, nil
}

// Fans is the JSON summary of --fans both.
type Fans struct {
	Map  *Summary `json:"map"`
	Skip *Summary `json:"skip"`
}

// runFans runs the stampede with map fans, then with skip fans. Each run has
// its own id prefix, so on one cluster (--endpoints) the second run gets a
// fresh show and fresh client ids, whose request ids the first run's
// exactly-once records cannot answer.
func runFans(ctx context.Context, cfg *config, stdout, stderr io.Writer) (*Fans, error) {
	var out Fans
	for _, fans := range []string{fansMap, fansSkip} {
		c := *cfg
		c.fans, c.prefix = fans, cfg.prefix+"-"+fans
		fmt.Fprintf(stdout, "== %s fans\n", fans)
		s, err := runOnce(ctx, &c, c.noBatch, stdout, stderr)
		if err != nil {
			return nil, err
		}
		if fans == fansMap {
			out.Map = s
		} else {
			out.Skip = s
		}
	}
	fmt.Fprintf(stdout, "== stampede sold out in (s): map fans %v, skip fans %v\n", out.Map.Extra["sold_out_s"], out.Skip.Extra["sold_out_s"])
	return &out, nil
}

func okRate(s *Summary, call string) float64 {
	for _, c := range s.Calls {
		if c.Name == call {
			return c.OKPerS
		}
	}
	return 0
}

// modeOf names the variant of the workload that ran, "" if it has none.
func modeOf(cfg *config) string {
	switch {
	case cfg.workload == "uniform" && cfg.fixedClients:
		return "fixed client ids"
	case cfg.workload == "uniform":
		return "a client id per fan"
	case cfg.workload == "stampede":
		return cfg.fans + " fans"
	}
	return ""
}

func machineInfo() MachineInfo {
	return MachineInfo{CPUs: runtime.NumCPU(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		Start: time.Now().UTC().Format(time.RFC3339), LoadAvgStart: loadAvg()}
}
