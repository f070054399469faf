package main

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"

	"github.com/seatledger/seatledger/delivery"
	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/registry"
	"github.com/seatledger/seatledger/shard"
)

// nodeConfig is everything one node process needs.
type nodeConfig struct {
	ID      string
	DataDir string
	// Peers is the seed list (--peers): the nodes that bootstrap the
	// cluster; a node joining a running cluster lists only itself.
	Peers []raftnode.Peer
	// Join, for a node added to a running cluster, is where to learn the
	// node registry (gRPC addresses of its nodes); it bootstraps nothing.
	Join []string
	// Groups is --groups: the group count a new cluster is bootstrapped
	// with (shard.GroupsDefault if 0), and on any other start one the
	// cluster's must equal (0: take the cluster's). See identity.go.
	Groups   uint32
	Replicas int
	// Listeners already bound: raft and gRPC are required, HTTP optional.
	// GRPCLn is the gRPC address the node is registered with (its peers
	// forward to it).
	RaftLn, GRPCLn, HTTPLn net.Listener
	// HTTP is what the HTTP listener serves beyond the API (CORS origins).
	HTTP gateway.HTTPConfig
	// PublicGRPCLn, if set, is one more listener of the same gRPC server:
	// seatd dev's --grpc on n1, which may change from run to run while
	// the registered GRPCLn may not.
	PublicGRPCLn net.Listener
	// Raft tuning for tests; zero means defaults.
	Raft raftnode.Config
	// Logger receives the node's lines; they gain a node attribute.
	Logger *slog.Logger
	// RaftLogLevel is the least severity of raft's own lines that reach
	// Logger: nil means WARN, raftnode.RaftLogOff none.
	RaftLogLevel slog.Leveler
	// Metrics is the node's metrics registry (observe.go); nil makes one.
	// One registry serves one start of one node.
	Metrics *prometheus.Registry
	// Gather is what /metrics serves; nil means this process's runtime
	// metrics and Metrics. (seatd dev serves all three nodes' from one.)
	Gather prometheus.Gatherer
	// AdminLn, if set, serves /debug/pprof/ and /metrics (--admin-http).
	AdminLn net.Listener
	// Faults are a fault build's deliberately wrong modes and test hooks
	// (unsafe.go; a default build has none to set).
	Faults faultConfig
	// Admission is the per-client write limit; nil means the default.
	Admission *gateway.Admission
	// WatchersMax bounds the live seat-map streams this node serves at
	// once (0: gateway.WatchersMaxDefault).
	WatchersMax int
	// TicketKey signs ticket codes; nil draws one for this run only.
	TicketKey ed25519.PrivateKey
	// AdminToken is the cluster's admin credential, also presented when
	// forwarding to peers; "" turns the check off (test clusters only).
	AdminToken string
	// BackendKey, if set, is the booking backend's secret key: it allows
	// the private reads (owners, payments, a client's bookings) and signs
	// client proofs, but no admin call (gateway/auth.go).
	BackendKey string
	// Delivery configures the webhook and Kafka deliverer (zero: defaults).
	Delivery delivery.Config
	// TLS, if set, encrypts every port and every dial to a peer (tls.go);
	// nil is plaintext (seatd dev, which listens on loopback only).
	TLS *certs.Node
}

// node is a running seatd node: raft groups, router, gRPC and HTTP servers.
type node struct {
	cfg    nodeConfig
	raft   *raftnode.Node
	router *shard.Router
	srv    *gateway.Server
	grpc   *grpc.Server
	http   *http.Server
	admin  *http.Server        // nil without an admin listener
	gather prometheus.Gatherer // what /metrics serves
	done   chan struct{}       // closed when the servers have returned
	// fatal receives at most one error that means the node must stop
	// serving: the registry says it was removed (registry.go).
	fatal chan error
	// nodes is the node registry as this node knows it (registry.go).
	nodes *registry.Registry
	// stopBackground ends the registry goroutines; bg waits for them.
	stopBackground context.CancelFunc
	bg             sync.WaitGroup
}

// closeListeners closes every listener a node was given (after a failed
// start; a running node's servers close their own).
func (c *nodeConfig) closeListeners() {
	for _, l := range []net.Listener{c.RaftLn, c.GRPCLn, c.PublicGRPCLn, c.HTTPLn, c.AdminLn} {
		if l != nil {
			l.Close()
		}
	}
}

func (c *nodeConfig) validate() error {
	if c.RaftLn == nil || c.GRPCLn == nil {
		return errors.New("raft and gRPC listeners are required")
	}
	if c.Replicas < 1 {
		return errors.New("--replicas must be at least 1")
	}
	if c.WatchersMax < 0 {
		return errors.New("--watchers-max must not be negative")
	}
	if len(c.Join) > 0 && (len(c.Peers) != 1 || c.Peers[0].ID != c.ID) {
		return errors.New("a node that joins lists only itself as its seed list")
	}
	if err := c.HTTP.Validate(); err != nil {
		return err
	}
	if c.Groups == 0 {
		return nil
	}
	return shard.Map{Groups: c.Groups}.Validate()
}

// startNode starts a node on its listeners.
func startNode(cfg nodeConfig) (n *node, err error) {
	defer func() {
		if err != nil {
			cfg.closeListeners()
		}
	}()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// Before anything listens: the raft port and the Peer service check
	// every connection and call against it (identity.go).
	ident, err := cfg.resolveIdentity(context.Background())
	if err != nil {
		return nil, err
	}
	// The group count is the cluster's, never this start's flag.
	cfg.Groups = ident.Groups
	smap := shard.Map{Groups: cfg.Groups}
	placement := cfg.placement()
	rc := cfg.Raft
	rc.NodeID, rc.DataDir, rc.Listener, rc.RaftAddr = cfg.ID, cfg.DataDir, cfg.RaftLn, cfg.RaftLn.Addr().String()
	rc.Peers, rc.Groups, rc.Bootstrap, rc.ClusterID = cfg.Peers, placement, true, ident.ClusterID
	reg, labelled := cfg.nodeRegisterer()
	rc.Logger, rc.RaftLogLevel, rc.Metrics = cfg.Logger, cfg.RaftLogLevel, labelled
	api, err := gateway.NewMetrics(labelled, cfg.Logger.With("node", cfg.ID))
	if err != nil {
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	clock := applyFaultsRaft(cfg.Faults, &rc)
	rc.TLS = raftTLS(cfg.TLS)
	rn, err := raftnode.Start(rc)
	if err != nil {
		return nil, err
	}
	router := shard.NewRouter(rn, smap)
	router.SetPeerToken(cfg.AdminToken)
	router.SetLogger(cfg.Logger.With("node", cfg.ID))
	if err := router.SetMetrics(labelled); err != nil {
		rn.Close()
		return nil, err
	}
	nodes := registry.New(router)
	if err := cfg.join(rn, nodes); err != nil {
		router.Close()
		rn.Close()
		return nil, err
	}
	srv := gateway.NewServer(router)
	srv.SetRegistry(nodes)
	auth := gateway.NewAuth(cfg.AdminToken)
	grpcOpts := append(api.ServerOptions(), grpcTLS(cfg.TLS, router, auth)...)
	auth.SetBackendKey(cfg.BackendKey)
	srv.SetAuth(auth)
	if cfg.Admission != nil {
		srv.SetAdmission(*cfg.Admission)
	}
	if err := srv.RegisterMetrics(labelled); err != nil {
		router.Close()
		rn.Close()
		return nil, fmt.Errorf("register metrics: %w", err)
	}
	if cfg.TicketKey != nil {
		srv.SetTicketKey(cfg.TicketKey)
	}
	srv.SetWatchersMax(cfg.WatchersMax)
	deliverer, err := delivery.New(router, cfg.Delivery, cfg.Logger.With("node", cfg.ID))
	if err == nil {
		err = deliverer.RegisterMetrics(labelled)
	}
	if err != nil {
		router.Close()
		rn.Close()
		return nil, err
	}
	applyFaultsServing(cfg.Faults, router, srv)
	n = &node{cfg: cfg, raft: rn, router: router, srv: srv, grpc: gateway.NewGRPCServer(srv, router, grpcOpts...),
		done: make(chan struct{}), fatal: make(chan error, 1), nodes: nodes}
	n.gather = cfg.gatherer(reg)
	if cfg.HTTPLn != nil {
		h, err := gateway.NewHTTPHandler(context.Background(), srv, router, cfg.HTTP)
		if err != nil {
			n.grpc.Stop()
			rn.Close()
			return nil, err
		}
		mux := http.NewServeMux()
		mux.Handle("/", h)
		mux.Handle("GET /metrics", metricsHandler(n.gather))
		if clock != nil {
			mux.Handle("/debug/unsafe/clock", clock)
		}
		n.http = gateway.NewHTTPServer(api.HTTP(mux))
		// A public port: its connections are capped (gateway/limits.go).
		n.cfg.HTTPLn = gateway.LimitHTTPListener(cfg.HTTPLn, cfg.WatchersMax)
	}
	if cfg.AdminLn != nil {
		n.admin = gateway.NewHTTPServer(adminHandler(n.gather))
	}
	if cfg.TLS != nil {
		// /metrics and pprof are served over TLS too: one rule, every
		// port of a TLS node is TLS.
		for _, s := range []*http.Server{n.http, n.admin} {
			if s != nil {
				s.TLSConfig = cfg.TLS.HTTPServer()
			}
		}
	}
	go n.serve()
	n.startRegistry()
	n.startDelivery(deliverer)
	return n, nil
}

func (n *node) serve() {
	defer close(n.done)
	errc := make(chan error, 4)
	go func() { errc <- n.grpc.Serve(n.cfg.GRPCLn) }()
	waits := 1
	if n.cfg.PublicGRPCLn != nil {
		waits++
		go func() { errc <- n.grpc.Serve(n.cfg.PublicGRPCLn) }()
	}
	if n.http != nil {
		waits++
		go func() { errc <- serveHTTP(n.http, n.cfg.HTTPLn) }()
	}
	if n.admin != nil {
		waits++
		go func() { errc <- serveHTTP(n.admin, n.cfg.AdminLn) }()
	}
	for i := 0; i < waits; i++ {
		if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, grpc.ErrServerStopped) {
			n.cfg.Logger.Error("server stopped", "node", n.cfg.ID, "err", err)
		}
	}
}

// serveHTTP serves s on ln, with TLS if s has a TLS config (the
// certificate is in it, so no file names are passed).
func serveHTTP(s *http.Server, ln net.Listener) error {
	if s.TLSConfig != nil {
		return s.ServeTLS(ln, "", "")
	}
	return s.Serve(ln)
}

// shutdownGrace bounds how long in-flight requests may finish on shutdown.
const shutdownGrace = 5 * time.Second

// close stops taking requests, lets in-flight ones finish (bounded), then
// stops raft and closes storage.
func (n *node) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// Watch streams never end by themselves: end them first, or both
	// servers would wait the whole grace period for them.
	n.srv.DrainWatches()
	if n.http != nil {
		n.http.Shutdown(ctx)
	}
	if n.admin != nil {
		// Not Shutdown: a CPU profile or trace in progress may run for
		// longer than the grace period, and losing it is harmless.
		n.admin.Close()
	}
	stopped := make(chan struct{})
	go func() { n.grpc.GracefulStop(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		n.grpc.Stop()
	}
	<-n.done
	n.stopBackground()
	n.bg.Wait()
	n.router.Close()
	if err := n.raft.Close(); err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.ID, err)
	}
	return nil
}
