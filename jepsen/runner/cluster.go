package runner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/jepsen/netproxy"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// net is the test's network: a proxy on every directed peer link (raft and
// gRPC forwarding) and one in front of each node for the clients.
type network struct {
	mu    sync.Mutex
	ids   []string
	raft  map[[2]string]*netproxy.Link // [from, to]
	grpc  map[[2]string]*netproxy.Link
	owner map[[2]string]bool // links whose target is known
}

func newNetwork(ids []string) *network {
	return &network{ids: ids, raft: map[[2]string]*netproxy.Link{}, grpc: map[[2]string]*netproxy.Link{}, owner: map[[2]string]bool{}}
}

// link returns (creating) the link from -> to in table m.
func (nw *network) link(m map[[2]string]*netproxy.Link, kind, from, to string, seed uint64) (*netproxy.Link, error) {
	k := [2]string{from, to}
	if l, ok := m[k]; ok {
		return l, nil
	}
	l, err := netproxy.Listen(fmt.Sprintf("%s %s->%s", kind, from, to), "", seed)
	if err != nil {
		return nil, err
	}
	m[k] = l
	return l, nil
}

// listenAll opens every peer link (targets are set by dialArgs).
func (nw *network) listenAll(seed int64) error {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for i, from := range nw.ids {
		for j, to := range nw.ids {
			if from == to {
				continue
			}
			s := uint64(seed)*131 + uint64(i*16+j)
			if _, err := nw.link(nw.raft, "raft", from, to, s); err != nil {
				return err
			}
			if _, err := nw.link(nw.grpc, "grpc", from, to, s+7); err != nil {
				return err
			}
		}
	}
	return nil
}

// dialArgs is node n's --dial flag: every peer through its proxies. It also
// points the links into n at n's addresses.
func (nw *network) dialArgs(n *proccluster.Node, seed int64) ([]string, error) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	var parts []string
	for i, peer := range nw.ids {
		if peer == n.ID {
			continue
		}
		s := uint64(seed)*131 + uint64(i)
		r, err := nw.link(nw.raft, "raft", n.ID, peer, s)
		if err != nil {
			return nil, err
		}
		g, err := nw.link(nw.grpc, "grpc", n.ID, peer, s+7)
		if err != nil {
			return nil, err
		}
		parts = append(parts, fmt.Sprintf("%s=%s/%s", peer, r.Addr(), g.Addr()))
		// The reverse links target this node.
		if r2, err := nw.link(nw.raft, "raft", peer, n.ID, s+13); err == nil {
			r2.SetTarget(n.RaftAddr)
		} else {
			return nil, err
		}
		if g2, err := nw.link(nw.grpc, "grpc", peer, n.ID, s+17); err == nil {
			g2.SetTarget(n.GRPCAddr)
		} else {
			return nil, err
		}
	}
	return []string{"--dial", strings.Join(parts, ",")}, nil
}

// each calls fn on every peer link.
func (nw *network) each(fn func(from, to string, l *netproxy.Link)) {
	nw.mu.Lock()
	defer nw.mu.Unlock()
	for _, m := range []map[[2]string]*netproxy.Link{nw.raft, nw.grpc} {
		for k, l := range m {
			fn(k[0], k[1], l)
		}
	}
}

// partition cuts every link between nodes of different components.
func (nw *network) partition(components [][]string) {
	side := map[string]int{}
	for i, c := range components {
		for _, id := range c {
			side[id] = i
		}
	}
	nw.each(func(from, to string, l *netproxy.Link) {
		if side[from] != side[to] {
			l.Cut()
		}
	})
}

// cutPairs cuts the links between the given node pairs (both directions).
func (nw *network) cutPairs(pairs [][2]string) {
	cut := map[[2]string]bool{}
	for _, p := range pairs {
		cut[p], cut[[2]string{p[1], p[0]}] = true, true
	}
	nw.each(func(from, to string, l *netproxy.Link) {
		if cut[[2]string{from, to}] {
			l.Cut()
		}
	})
}

// heal ends every cut, delay and loss.
func (nw *network) heal() {
	nw.each(func(_, _ string, l *netproxy.Link) {
		l.Heal()
		l.SetDelay(0, 0)
		l.SetLoss(0)
	})
}

func (nw *network) close() {
	nw.each(func(_, _ string, l *netproxy.Link) { l.Close() })
}

// testCluster is the processes, the network and the clients' connections.
type testCluster struct {
	cfg   *Config
	procs *proccluster.Cluster
	net   *network
	// clientLinks[i] fronts node i for the clients.
	clientLinks []*netproxy.Link
	conns       []*grpc.ClientConn // clients' connections, through clientLinks
	admin       map[string]ledgerpb.AdminClient
	adminConns  []*grpc.ClientConn
	http        *http.Client
}

func startTestCluster(ctx context.Context, cfg *Config) (*testCluster, error) {
	ids := make([]string, cfg.Nodes)
	for i := range ids {
		ids[i] = fmt.Sprintf("n%d", i+1)
	}
	tc := &testCluster{cfg: cfg, net: newNetwork(ids), admin: map[string]ledgerpb.AdminClient{}}
	// Every proxy listens before the nodes' ports are chosen, so that no
	// proxy takes a port proccluster picked for a node.
	if err := tc.net.listenAll(cfg.Seed); err != nil {
		tc.net.close()
		return nil, err
	}
	args := []string{"--heartbeat-timeout", cfg.HeartbeatTimeout.String(), "--election-timeout", cfg.ElectionTimeout.String(),
		"--snapshot-threshold", fmt.Sprint(cfg.SnapshotThreshold), "--trailing-logs", fmt.Sprint(cfg.TrailingLogs),
		"--snapshot-interval", cfg.SnapshotInterval.String(), "--checkpoint-bytes", fmt.Sprint(cfg.CheckpointBytes), "--unsafe-test-hooks"}
	if cfg.Broken != "" {
		args = append(args, "--unsafe-broken", cfg.Broken)
	}
	var tlsOpts *proccluster.TLS
	if cfg.TLS {
		tlsOpts = &proccluster.TLS{PeerMTLS: true}
	}
	procs, err := proccluster.Start(ctx, proccluster.Config{Binary: cfg.Binary, Nodes: cfg.Nodes, Dir: cfg.Dir,
		Groups: cfg.Groups, Args: args, TLS: tlsOpts, Env: []string{logCleanerEnv + "=" + logCleanerTuning}, NodeArgs: func(n *proccluster.Node) []string {
			a, err := tc.net.dialArgs(n, cfg.Seed)
			if err != nil {
				panic(fmt.Sprintf("jepsen: proxies for %s: %v", n.ID, err)) // listening on loopback failed
			}
			return a
		}})
	if err != nil {
		tc.net.close()
		return nil, err
	}
	tc.procs = procs
	tc.http = procs.HTTPClient()
	tc.http.Timeout = 5 * time.Second
	for i, n := range procs.Nodes() {
		l, err := netproxy.Listen("client->"+n.ID, n.GRPCAddr, uint64(cfg.Seed)+uint64(1000+i))
		if err != nil {
			tc.close()
			return nil, err
		}
		tc.clientLinks = append(tc.clientLinks, l)
		// Clients are fans: no admin token. The harness's own admin
		// connections (nemesis, final reads' setup) carry it.
		conn, err := dialGRPC(l.Addr(), "", procs.ClientTLS())
		if err != nil {
			tc.close()
			return nil, err
		}
		tc.conns = append(tc.conns, conn)
		ac, err := dialGRPC(n.GRPCAddr, procs.AdminToken(), procs.ClientTLS())
		if err != nil {
			tc.close()
			return nil, err
		}
		tc.adminConns = append(tc.adminConns, ac)
		tc.admin[n.ID] = ledgerpb.NewAdminClient(ac)
	}
	return tc, nil
}

// dialGRPC dials addr with TLS when tlsCfg is set (a proxy's address is
// 127.0.0.1, which the test certificates name).
func dialGRPC(addr, adminToken string, tlsCfg *tls.Config) (*grpc.ClientConn, error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	return grpc.NewClient(addr, grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(adminToken)),
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: time.Second,
			Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 300 * time.Millisecond}}))
}

func (tc *testCluster) close() {
	for _, c := range append(tc.conns, tc.adminConns...) {
		c.Close()
	}
	for _, l := range tc.clientLinks {
		l.Close()
	}
	if tc.http != nil {
		tc.http.CloseIdleConnections()
	}
	if tc.procs != nil {
		tc.procs.Close()
	}
	tc.net.close()
}

func (tc *testCluster) ids() []string { return tc.net.ids }

// status asks one node for its Status (nil if it does not answer).
func (tc *testCluster) status(ctx context.Context, id string, digests bool) *ledgerpb.StatusResponse {
	if !tc.procs.Running(id) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := tc.admin[id].Status(ctx, &ledgerpb.StatusRequest{Digests: digests})
	if err != nil {
		return nil
	}
	return st
}

// leaders maps each group to the node that says it leads it now.
func (tc *testCluster) leaders(ctx context.Context) map[uint32]string {
	out := map[uint32]string{}
	for _, id := range tc.ids() {
		if st := tc.status(ctx, id, false); st != nil {
			for _, g := range st.Groups {
				if g.State == "Leader" {
					out[g.Group] = id
				}
			}
		}
	}
	return out
}

// liveBooking is a Booking client, with the admin token, on the first node
// still running: the corrupt-log nemesis leaves its victim down for good,
// and that may be n1, whose connection created the shows.
func (tc *testCluster) liveBooking() ledgerpb.BookingClient {
	for i, id := range tc.ids() {
		if tc.procs.Running(id) {
			return ledgerpb.NewBookingClient(tc.adminConns[i])
		}
	}
	return ledgerpb.NewBookingClient(tc.adminConns[0])
}

// replicas maps each group to its replicas (sorted), as the first node
// hosting it that answers says.
func (tc *testCluster) replicas(ctx context.Context) map[uint32][]string {
	out := map[uint32][]string{}
	for _, id := range tc.ids() {
		st := tc.status(ctx, id, false)
		if st == nil {
			continue
		}
		for _, g := range st.Groups {
			if _, ok := out[g.Group]; !ok && len(g.Replicas) > 0 {
				out[g.Group] = slices.Sorted(slices.Values(g.Replicas))
			}
		}
	}
	return out
}

// topLeader is the node leading the most groups (lowest id on ties), or
// fallback when no leader is known.
func (tc *testCluster) topLeader(ctx context.Context, fallback string) string {
	count := map[string]int{}
	for _, id := range tc.leaders(ctx) {
		count[id]++
	}
	best := fallback
	ids := tc.ids()
	sort.Strings(ids)
	for _, id := range ids {
		if count[id] > count[best] {
			best = id
		}
	}
	return best
}

// setClock sets a node's clock offset through its test hook.
func (tc *testCluster) setClock(ctx context.Context, id string, offset time.Duration) error {
	n := tc.procs.Node(id)
	url := tc.procs.HTTPURL(n, fmt.Sprintf("/debug/unsafe/clock?offset_ms=%d", offset.Milliseconds()))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return err
	}
	resp, err := tc.http.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("set clock on %s: HTTP %d", id, resp.StatusCode)
	}
	return nil
}
