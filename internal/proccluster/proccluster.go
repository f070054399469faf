// Package proccluster starts a cluster of real `seatd serve` processes on
// loopback, for the load tool (cmd/seatbench) and the fault harness
// (jepsen/). Each node is a separate OS process in its own process group, so
// it can be killed, stopped, paused and restarted like a machine, and a test
// timeout can kill it with its group.
//
// Every started process is reaped by one goroutine that waits for it; Close
// stops every node still running and waits for those goroutines, so a test
// that calls Close leaves no zombie and no goroutine behind. On Linux the
// children also get SIGKILL when this process dies (Pdeathsig), so a crashed
// test does not leave seatd orphans holding ports.
//
// With Config.TLS the nodes serve TLS on every port, with certificates made
// for the run in Dir/tls; ClientTLS, HTTPURL and HTTPClient give clients
// what they need to reach them.
package proccluster

import (
	"context"
	crand "crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/shard"
)

// Timing of starts and stops.
const (
	// stopGrace is how long Stop waits after SIGTERM before SIGKILL.
	stopGrace = 10 * time.Second
	// pollInterval paces readiness probes.
	pollInterval = 50 * time.Millisecond
	// probeTimeout bounds one readiness HTTP call.
	probeTimeout = 2 * time.Second
	// logTailBytes is how much of a node's log an error quotes.
	logTailBytes = 2048
)

// Build compiles seatd into out (`go build -o out ./cmd/seatd`) from the
// module root, found by walking up from the working directory to go.mod.
func Build(ctx context.Context, out string) error { return build(ctx, out) }

// BuildFaults builds ./cmd/seatd with the faults tag: the test-only flags
// (--unsafe-test-hooks, --unsafe-broken) exist only in such a build.
func BuildFaults(ctx context.Context, out string) error { return build(ctx, out, "-tags", "faults") }

func build(ctx context.Context, out string, args ...string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, goTool(), append(append([]string{"build"}, args...), "-o", abs, "./cmd/seatd")...)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("proccluster: go build ./cmd/seatd: %w\n%s", err, b)
	}
	return nil
}

// goTool is the go command on PATH, else the running toolchain's.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("proccluster: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Config describes a cluster to start.
type Config struct {
	// Binary is the seatd executable (see Build).
	Binary string
	// Nodes is the cluster size: 3 or 5.
	Nodes int
	// Dir is the root: node data in Dir/<id>/data, logs in Dir/<id>.log.
	Dir string
	// Groups is passed as --groups; 0 keeps seatd's default.
	Groups int
	// Args are extra arguments for every node.
	Args []string
	// NodeArgs returns extra arguments for one node (may be nil); it is
	// called at every start and restart.
	NodeArgs func(n *Node) []string
	// Env is added to every node's environment (this process's own).
	Env []string
	// AdminToken is the cluster's admin token, written to Dir/admin.token
	// and given to every node; "" draws one (Cluster.AdminToken).
	AdminToken string
	// TLS, if set, starts every node with TLS on all its ports; the
	// certificates are made in Dir/tls (seatd certgen's layout) for
	// 127.0.0.1 and localhost. Nil is plaintext.
	TLS *TLS
	// Prepare, if set, runs once the nodes' addresses, data directories and
	// PeersFlag are chosen and before any node starts: seatd restore seeds
	// the data directories there. It runs again if Start retries on fresh
	// ports (the directories are removed first).
	Prepare func(c *Cluster) error
}

// TLS says how a cluster's nodes use TLS.
type TLS struct {
	// PeerMTLS starts the nodes with --peer-mtls.
	PeerMTLS bool
	// ClientCA starts the nodes with --client-ca (the cluster's CA): every
	// client must present a certificate, as ClientTLS does. Read at every
	// start and restart, so a test may set it between restarts.
	ClientCA bool
}

// tlsValidity is how long the test certificates last: longer than any run.
const tlsValidity = 7 * 24 * time.Hour

// Validate reports the first thing wrong with the config.
func (c *Config) Validate() error {
	switch {
	case c.Binary == "":
		return errors.New("proccluster: Binary is required")
	case c.Nodes != 3 && c.Nodes != 5:
		return fmt.Errorf("proccluster: Nodes must be 3 or 5, not %d", c.Nodes)
	case c.Dir == "":
		return errors.New("proccluster: Dir is required")
	case c.Groups < 0 || c.Groups > shard.GroupsMax:
		return fmt.Errorf("proccluster: Groups must be in 0..%d", shard.GroupsMax)
	}
	return nil
}

// Node is one seatd process of the cluster. Its addresses and directories
// stay the same across restarts.
type Node struct {
	ID       string
	RaftAddr string
	GRPCAddr string
	HTTPAddr string
	DataDir  string
	LogPath  string
	// Join is set for a node added to the running cluster (AddNode): the
	// gRPC addresses it joins through (seatd serve --join) instead of
	// --peers.
	Join []string

	// mu guards the process state below; the reaper goroutine of a process
	// writes exited/exitErr and closes done.
	mu struct {
		sync.Mutex
		cmd    *exec.Cmd
		done   chan struct{} // closed once the process has been reaped
		err    error         // its exit status, once done is closed
		paused bool
	}
}

// Cluster is a running set of seatd processes.
type Cluster struct {
	cfg Config
	// tokenPath is the admin token file every node is started with.
	tokenPath string
	nodes     []*Node
	peers     string
	client    *http.Client
	reaper    sync.WaitGroup // one per started process
	// tlsDir holds the certificates when cfg.TLS is set; clientTLS is
	// what every client of the cluster dials with (nil: plaintext).
	tlsDir    certs.Dir
	clientTLS *tls.Config
}

// Start picks free loopback ports, starts n1..nN with the same --peers, and
// waits until every node answers GET /healthz and every group serves a
// linearizable read (a leader is elected and ready). It stops every node it
// started if it fails.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// The ports are free when picked but another process may bind one
	// before its node does: then start again, from clean directories, on
	// fresh ports.
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, cfg)
		if err == nil || attempt == startAttempts || !strings.Contains(err.Error(), "address already in use") {
			return c, err
		}
		for i := range cfg.Nodes {
			os.RemoveAll(filepath.Join(cfg.Dir, fmt.Sprintf("n%d", i+1)))
		}
	}
}

// startAttempts bounds Start's retries after a lost port race.
const startAttempts = 3

func start(ctx context.Context, cfg Config) (*Cluster, error) {
	ports, err := freePorts(3 * cfg.Nodes)
	if err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg}
	if c.cfg.AdminToken == "" {
		var raw [18]byte
		crand.Read(raw[:])
		c.cfg.AdminToken = hex.EncodeToString(raw[:])
	}
	c.tokenPath = filepath.Join(cfg.Dir, "admin.token")
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(c.tokenPath, []byte(c.cfg.AdminToken+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("proccluster: write admin token: %w", err)
	}
	if err := c.makeCerts(); err != nil {
		return nil, err
	}
	c.client = &http.Client{Transport: &http.Transport{TLSClientConfig: c.clientTLS}, Timeout: probeTimeout}
	var peers []string
	for i := range cfg.Nodes {
		id := fmt.Sprintf("n%d", i+1)
		n := &Node{
			ID:       id,
			RaftAddr: ports[3*i],
			GRPCAddr: ports[3*i+1],
			HTTPAddr: ports[3*i+2],
			DataDir:  filepath.Join(cfg.Dir, id, "data"),
			LogPath:  filepath.Join(cfg.Dir, id+".log"),
		}
		c.nodes = append(c.nodes, n)
		peers = append(peers, fmt.Sprintf("%s=%s/%s", id, n.RaftAddr, n.GRPCAddr))
	}
	c.peers = strings.Join(peers, ",")
	if cfg.Prepare != nil {
		if err := cfg.Prepare(c); err != nil {
			return nil, fmt.Errorf("proccluster: prepare: %w", err)
		}
	}
	for _, n := range c.nodes {
		if err := c.start(n); err != nil {
			c.Close()
			return nil, err
		}
	}
	for _, n := range c.nodes {
		if err := c.waitHealthy(ctx, n); err != nil {
			c.Close()
			return nil, err
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// makeCerts makes the cluster's CA and certificates (kept if Dir/tls has
// them already, as on a retried start) and the clients' TLS configuration.
func (c *Cluster) makeCerts() error {
	if c.cfg.TLS == nil {
		return nil
	}
	c.tlsDir = certs.Dir(filepath.Join(c.cfg.Dir, "tls"))
	ids := make([]string, c.cfg.Nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	if _, err := certs.MakeDir(c.tlsDir, ids, []string{"127.0.0.1", "localhost"}, time.Now(), tlsValidity); err != nil {
		return fmt.Errorf("proccluster: certificates: %w", err)
	}
	cfg, err := certs.ClientFiles{CAFile: c.tlsDir.CA(), CertFile: c.tlsDir.ClientCert(), KeyFile: c.tlsDir.ClientKey()}.Config()
	if err != nil {
		return fmt.Errorf("proccluster: client certificate: %w", err)
	}
	c.clientTLS = cfg
	return nil
}

// TLSDir is where the cluster's certificates are ("" without TLS): CA()
// is what clients verify nodes with (seatctl --cacert).
func (c *Cluster) TLSDir() certs.Dir { return c.tlsDir }

// ClientTLS is the TLS configuration clients of the cluster dial with: the
// cluster's CA, and the client certificate (required under TLS.ClientCA).
// Nil without TLS. Callers get their own copy.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.clientTLS == nil {
		return nil
	}
	return c.clientTLS.Clone()
}

// HTTPURL is the URL of path on the node's HTTP port: https with TLS.
func (c *Cluster) HTTPURL(n *Node, path string) string {
	if c.clientTLS != nil {
		return "https://" + n.HTTPAddr + path
	}
	return "http://" + n.HTTPAddr + path
}

// HTTPClient returns a client for the nodes' HTTP ports (with TLS, it
// verifies them and presents the client certificate). It has no timeout:
// callers bound requests with their contexts.
func (c *Cluster) HTTPClient() *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: c.ClientTLS()}}
}

// freePorts reserves n distinct loopback ports below the kernel's ephemeral
// range, then releases them all at once. Below that range, no outgoing
// connection takes a node's port while the node is down (a killed node must
// restart on its own port); another process binding one in between is rare,
// and Start then tries fresh ports.
func freePorts(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	lo, hi := portRange()
	out := make([]string, 0, n)
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("proccluster: no free port in %d..%d", lo, hi)
		}
		addr := fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		lns = append(lns, l)
		out = append(out, addr)
	}
	return out, nil
}

// portRange is where freePorts picks: [10000, start of the ephemeral range).
func portRange() (lo, hi int) {
	lo, hi = 10000, 32768
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return lo, hi
	}
	var first, last int
	if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > lo+1000 {
		hi = first
	}
	return lo, hi
}

// Nodes returns the cluster's nodes: n1..nN in id order, then those added
// (AddNode) in the order they were.
func (c *Cluster) Nodes() []*Node { return c.nodes }

// Node returns the node with id, or nil.
func (c *Cluster) Node(id string) *Node {
	for _, n := range c.nodes {
		if n.ID == id {
			return n
		}
	}
	return nil
}

// AdminToken is the admin token every node checks; AdminTokenPath is its
// file (seatctl --admin-token-file).
func (c *Cluster) AdminToken() string     { return c.cfg.AdminToken }
func (c *Cluster) AdminTokenPath() string { return c.tokenPath }

// PeersFlag is the --peers value every node runs with.
func (c *Cluster) PeersFlag() string { return c.peers }

func (c *Cluster) node(id string) (*Node, error) {
	if n := c.Node(id); n != nil {
		return n, nil
	}
	return nil, fmt.Errorf("proccluster: no node %q", id)
}

// AddNode makes a node that joins the running cluster: free ports and a data
// directory, started with --join through the gRPC addresses of the nodes
// running now. It does not start it: register it first (seatctl node add
// with its addresses), then Restart it. Like Start and Close, call it from
// the goroutine that drives the cluster.
func (c *Cluster) AddNode(id string) (*Node, error) {
	if c.Node(id) != nil {
		return nil, fmt.Errorf("proccluster: node %s exists", id)
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	n := &Node{ID: id, RaftAddr: ports[0], GRPCAddr: ports[1], HTTPAddr: ports[2],
		DataDir: filepath.Join(c.cfg.Dir, id, "data"), LogPath: filepath.Join(c.cfg.Dir, id+".log")}
	for _, m := range c.nodes {
		if c.Running(m.ID) {
			n.Join = append(n.Join, m.GRPCAddr)
		}
	}
	if len(n.Join) == 0 {
		return nil, errors.New("proccluster: no running node to join through")
	}
	if c.cfg.TLS != nil {
		// A certificate from the cluster's CA, as seatd certgen --nodes
		// issues for a node added later.
		if _, err := certs.MakeDir(c.tlsDir, []string{id}, []string{"127.0.0.1", "localhost"}, time.Now(), tlsValidity); err != nil {
			return nil, fmt.Errorf("proccluster: certificate of %s: %w", id, err)
		}
	}
	c.nodes = append(c.nodes, n)
	return n, nil
}

// args is the command line of a node.
func (c *Cluster) args(n *Node) []string {
	peers := []string{"--peers", c.peers}
	if len(n.Join) > 0 {
		peers = []string{"--join", strings.Join(n.Join, ",")}
	}
	a := append([]string{"serve", "--id", n.ID, "--raft", n.RaftAddr, "--grpc", n.GRPCAddr, "--http", n.HTTPAddr,
		"--data-dir", n.DataDir}, append(peers, "--admin-token-file", c.tokenPath)...)
	if c.cfg.Groups > 0 {
		a = append(a, "--groups", strconv.Itoa(c.cfg.Groups))
	}
	if t := c.cfg.TLS; t != nil {
		a = append(a, "--tls-cert", c.tlsDir.Cert(n.ID), "--tls-key", c.tlsDir.Key(n.ID), "--tls-ca", c.tlsDir.CA())
		if t.PeerMTLS {
			a = append(a, "--peer-mtls")
		}
		if t.ClientCA {
			a = append(a, "--client-ca", c.tlsDir.CA())
		}
	}
	a = append(a, c.cfg.Args...)
	if c.cfg.NodeArgs != nil {
		a = append(a, c.cfg.NodeArgs(n)...)
	}
	return a
}

// start launches n's process and a goroutine that reaps it.
func (c *Cluster) start(n *Node) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return fmt.Errorf("proccluster: node %s is already running", n.ID)
	}
	if err := os.MkdirAll(n.DataDir, 0o755); err != nil {
		return fmt.Errorf("proccluster: %w", err)
	}
	logf, err := os.OpenFile(n.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("proccluster: %w", err)
	}
	fmt.Fprintf(logf, "--- proccluster: starting %s at %s\n", n.ID, time.Now().Format(time.RFC3339Nano))
	cmd := exec.Command(c.cfg.Binary, c.args(n)...)
	if len(c.cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), c.cfg.Env...)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("proccluster: start %s: %w", n.ID, err)
	}
	done := make(chan struct{})
	n.mu.cmd, n.mu.done, n.mu.err, n.mu.paused = cmd, done, nil, false
	c.reaper.Add(1)
	go func() {
		defer c.reaper.Done()
		err := cmd.Wait()
		logf.Close()
		n.mu.Lock()
		n.mu.err = err
		n.mu.Unlock()
		close(done)
	}()
	return nil
}

func (n *Node) runningLocked() bool {
	if n.mu.done == nil {
		return false
	}
	select {
	case <-n.mu.done:
		return false
	default:
		return true
	}
}

// Running reports whether the node's process is alive (paused counts).
func (c *Cluster) Running(id string) bool {
	n := c.Node(id)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked()
}

// PID returns the node's process id, or 0 if it is not running.
func (n *Node) PID() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.runningLocked() {
		return 0
	}
	return n.mu.cmd.Process.Pid
}

// signal sends sig to the node's process group; it returns the channel that
// closes when the process has been reaped, or nil if it is not running.
func (n *Node) signal(sig syscall.Signal) (<-chan struct{}, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.runningLocked() {
		return nil, nil
	}
	// The process leads its own group (Setpgid): -pid signals the group.
	if err := syscall.Kill(-n.mu.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("proccluster: signal %v to %s: %w", sig, n.ID, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		n.mu.paused = true
	case syscall.SIGCONT:
		n.mu.paused = false
	}
	return n.mu.done, nil
}

// Kill sends SIGKILL and waits until the process has exited. Killing a node
// that is not running is a no-op.
func (c *Cluster) Kill(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	done, err := n.signal(syscall.SIGKILL)
	if done != nil {
		<-done
	}
	return err
}

// Stop sends SIGTERM (after SIGCONT if the node is paused), waits up to 10 s
// for a graceful exit, then SIGKILL. Stopping a node that is not running is a
// no-op.
func (c *Cluster) Stop(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	// A stopped process keeps SIGTERM pending until it continues.
	if _, err := n.signal(syscall.SIGCONT); err != nil {
		return err
	}
	done, err := n.signal(syscall.SIGTERM)
	if err != nil || done == nil {
		return err
	}
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
	}
	done, err = n.signal(syscall.SIGKILL)
	if done != nil {
		<-done
	}
	if err == nil {
		err = fmt.Errorf("proccluster: %s did not stop within %v of SIGTERM; killed", id, stopGrace)
	}
	return err
}

// Pause freezes the node with SIGSTOP: it keeps its sockets but answers
// nothing, like a machine in a long GC pause.
func (c *Cluster) Pause(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	done, err := n.signal(syscall.SIGSTOP)
	if err == nil && done == nil {
		err = fmt.Errorf("proccluster: node %s is not running", id)
	}
	return err
}

// Resume continues a paused node with SIGCONT.
func (c *Cluster) Resume(id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	done, err := n.signal(syscall.SIGCONT)
	if err == nil && done == nil {
		err = fmt.Errorf("proccluster: node %s is not running", id)
	}
	return err
}

// Paused reports whether the node was paused and not resumed since.
func (c *Cluster) Paused(id string) bool {
	n := c.Node(id)
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.runningLocked() && n.mu.paused
}

// Restart starts a node that is not running again, with the same addresses
// and data directory, and waits until it answers GET /healthz; it also
// starts a node made by AddNode the first time.
func (c *Cluster) Restart(ctx context.Context, id string) error {
	n, err := c.node(id)
	if err != nil {
		return err
	}
	if err := c.start(n); err != nil {
		return err
	}
	return c.waitHealthy(ctx, n)
}

// Close stops every running node (resuming paused ones first), waits until
// every process has been reaped, and releases the probe client. It is safe
// after kills and safe to call twice.
func (c *Cluster) Close() error {
	var wg sync.WaitGroup
	errs := make([]error, len(c.nodes))
	for i, n := range c.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Stop(n.ID)
		}()
	}
	wg.Wait()
	c.reaper.Wait()
	c.client.CloseIdleConnections()
	return errors.Join(errs...)
}

// ExitErr returns how the node's last process ended (nil while running or
// after a clean exit).
func (n *Node) ExitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.runningLocked() {
		return nil
	}
	return n.mu.err
}

// waitHealthy polls GET /healthz until it answers 200; it fails early if the
// process exits.
func (c *Cluster) waitHealthy(ctx context.Context, n *Node) error {
	url := c.HTTPURL(n, "/healthz")
	for {
		code, _, err := c.get(ctx, url)
		if err == nil && code == http.StatusOK {
			return nil
		}
		if err := c.waitOrExit(ctx, n, "GET /healthz"); err != nil {
			return err
		}
	}
}

// WaitReady waits until every running node serves a linearizable read of
// every group (a show-not-found answer needs the group's leader to be
// elected and past its start-of-term barrier). 503s are retried.
func (c *Cluster) WaitReady(ctx context.Context) error {
	groups := uint32(c.cfg.Groups)
	if groups == 0 {
		groups = shard.GroupsDefault
	}
	probes := probeShows(shard.Map{Groups: groups})
	for _, n := range c.nodes {
		if !c.Running(n.ID) || c.Paused(n.ID) {
			continue
		}
		for _, show := range probes {
			if err := c.waitProbe(ctx, n, show); err != nil {
				return err
			}
		}
	}
	return nil
}

func (c *Cluster) waitProbe(ctx context.Context, n *Node, show string) error {
	url := c.HTTPURL(n, "/v1/shows/"+show+"/seats")
	for {
		code, body, err := c.get(ctx, url)
		if err == nil && code == http.StatusNotFound {
			return nil
		}
		if err == nil && code != http.StatusServiceUnavailable {
			return fmt.Errorf("proccluster: GET %s = %d %s, want 404 or 503", url, code, body)
		}
		if err := c.waitOrExit(ctx, n, "GET "+url); err != nil {
			return err
		}
	}
}

// probeShows returns one show id per group, ids no client uses.
func probeShows(m shard.Map) []string {
	out := make([]string, m.Groups)
	found := uint32(0)
	for i := 0; found < m.Groups; i++ {
		id := fmt.Sprintf("proccluster-probe-%d", i)
		if g := m.GroupFor(id); out[g] == "" {
			out[g] = id
			found++
		}
	}
	return out
}

// waitOrExit sleeps one poll interval; it fails if ctx ends or the node's
// process exits meanwhile.
func (c *Cluster) waitOrExit(ctx context.Context, n *Node, what string) error {
	n.mu.Lock()
	done := n.mu.done
	n.mu.Unlock()
	select {
	case <-ctx.Done():
		return fmt.Errorf("proccluster: node %s: %s: %w\n%s", n.ID, what, ctx.Err(), logTail(n.LogPath))
	case <-done:
		return fmt.Errorf("proccluster: node %s exited (%v) while waiting for %s\n%s", n.ID, n.ExitErr(), what, logTail(n.LogPath))
	case <-time.After(pollInterval):
		return nil
	}
}

func (c *Cluster) get(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(b), nil
}

// logTail returns the end of a node's log, for error messages.
func logTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return string(b)
}
