package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// devNodes is the size of the dev cluster.
const devNodes = 3

// demoShowID is the show `seatd dev` creates.
const demoShowID = "demo"

// devReadyTimeout bounds waiting for the dev cluster's first leaders.
const devReadyTimeout = 30 * time.Second

func runDev(args []string) error {
	fs := flag.NewFlagSet("seatd dev", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "seatd-data", "where the three nodes keep their data (reused on restart)")
	httpAddr := fs.String("http", "127.0.0.1:8080", "HTTP/JSON API address")
	grpcAddr := fs.String("grpc", "127.0.0.1:9090", "gRPC API address")
	groups := fs.Uint("groups", 0, fmt.Sprintf("number of raft groups, fixed at the first start (default %d); a restart takes the saved count and refuses another", shard.GroupsDefault))
	verbose := fs.Bool("v", false, "log raft's own warnings")
	adminAddr := fs.String("admin-http", "", "admin HTTP address serving /debug/pprof/ and /metrics (off by default)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cl, err := startDevCluster(devOptions{dataDir: *dataDir, httpAddr: *httpAddr, grpcAddr: *grpcAddr, adminAddr: *adminAddr,
		groups: uint32(*groups), logger: logger, verbose: *verbose})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), devReadyTimeout)
	err = cl.createDemoShow(ctx)
	cancel()
	if err != nil {
		cl.close()
		return fmt.Errorf("create demo show: %w", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), devReadyTimeout)
	err = cl.createDemoCatalog(ctx, time.Now())
	cancel()
	if err != nil {
		cl.close()
		return fmt.Errorf("create demo catalog: %w", err)
	}
	base := "http://" + cl.nodes[0].cfg.HTTPLn.Addr().String()
	tokenPath := filepath.Join(*dataDir, adminTokenFile)
	fmt.Printf(`seatledger dev cluster: %d nodes, %d raft groups, data in %s
  Book seats %s/   (open it in a browser)
  Operator   %s/admin   (paste the admin token from %s)
  HTTP/JSON  %s   (metrics of all three nodes: %s/metrics)
  gRPC       %s
%sTry:
  curl %s/v1/shows/demo/seats
  curl -X POST %s/v1/shows/demo/holds -d '{"seat_ids":["A1","A2"],"client_id":"alice","request_id":"r1"}'
Browse the demo catalog:
  curl %s/v1/cities/london/movies
  curl '%s/v1/search?q=dune&city_id=paris'
Admin calls (creating shows, seatctl) need the admin token in %s:
  curl -H "Authorization: Bearer $(cat %s)" %s/v1/admin/status
  seatctl --admin-token-file %s status
Press Ctrl-C to stop; run again with the same --data-dir to keep your data.
`, devNodes, cl.nodes[0].router.Map().Groups, *dataDir, base, base, tokenPath, base, base, cl.nodes[0].cfg.PublicGRPCLn.Addr(), adminLine(cl.nodes[0].cfg), base, base, base, base,
		tokenPath, tokenPath, base, tokenPath)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	fmt.Println("stopping...")
	return cl.close()
}

// devCluster is three nodes in one process over loopback TCP.
type devCluster struct {
	nodes []*node
}

// devOptions are seatd dev's flags.
type devOptions struct {
	dataDir, httpAddr, grpcAddr string
	adminAddr                   string // "" for no admin listener
	groups                      uint32
	logger                      *slog.Logger
	verbose                     bool // raft's own warnings
}

// adminLine names the admin listener for the banner, if there is one.
func adminLine(c nodeConfig) string {
	if c.AdminLn == nil {
		return ""
	}
	return fmt.Sprintf("  admin      http://%s/debug/pprof/ and /metrics\n", c.AdminLn.Addr())
}

func startDevCluster(o devOptions) (*devCluster, error) {
	dataDir, groups, logger := o.dataDir, o.groups, o.logger
	raftLns, grpcLns, err := devListeners(dataDir)
	if err != nil {
		return nil, err
	}
	var apiLn, httpLn, adminLn net.Listener
	release := func() { closeAll(slices.Concat(raftLns, grpcLns, []net.Listener{apiLn, httpLn, adminLn})) }
	var peers []raftnode.Peer
	for i := range devNodes {
		peers = append(peers, raftnode.Peer{ID: devNodeID(i), RaftAddr: raftLns[i].Addr().String(), GRPCAddr: grpcLns[i].Addr().String()})
	}
	if apiLn, err = net.Listen("tcp", o.grpcAddr); err != nil {
		release()
		return nil, fmt.Errorf("listen for gRPC: %w", err)
	}
	if httpLn, err = net.Listen("tcp", o.httpAddr); err != nil {
		release()
		return nil, fmt.Errorf("listen for HTTP: %w", err)
	}
	if o.adminAddr != "" {
		if adminLn, err = net.Listen("tcp", o.adminAddr); err != nil {
			release()
			return nil, fmt.Errorf("listen for admin HTTP: %w", err)
		}
	}
	var raftLevel slog.Leveler = raftnode.RaftLogOff
	if o.verbose {
		raftLevel = slog.LevelWarn
	}
	// One registry per node; the API listener and the admin listener, both
	// on n1, serve all three (each series names its node).
	regs := make([]*prometheus.Registry, devNodes)
	gather := prometheus.Gatherers{processMetrics()}
	for i := range regs {
		regs[i] = prometheus.NewRegistry()
		gather = append(gather, regs[i])
	}
	// One ticket key and one admin token for the three nodes, kept with
	// their data.
	key, err := loadTicketKey(filepath.Join(dataDir, ticketKeyFile), true)
	if err != nil {
		release()
		return nil, err
	}
	token, err := loadAdminToken(filepath.Join(dataDir, adminTokenFile), true)
	if err != nil {
		release()
		return nil, err
	}
	cl := &devCluster{}
	for i, p := range peers {
		cfg := nodeConfig{ID: p.ID, DataDir: filepath.Join(dataDir, p.ID), Peers: peers, Groups: groups, Replicas: devNodes,
			RaftLn: raftLns[i], GRPCLn: grpcLns[i], Logger: logger, RaftLogLevel: raftLevel, TicketKey: key,
			Metrics: regs[i], Gather: gather, AdminToken: token}
		if i == 0 {
			cfg.PublicGRPCLn, cfg.HTTPLn, cfg.AdminLn = apiLn, httpLn, adminLn
			// A frontend being developed on any local port may call it.
			cfg.HTTP.CORS.Origins = gateway.DevCORSOrigins
		}
		n, err := startNode(cfg)
		if err != nil {
			cl.close()
			release()
			return nil, err
		}
		cl.nodes = append(cl.nodes, n)
	}
	return cl, nil
}

// createDemoShow creates the demo show unless it exists: rows A–J of 20
// seats. Creating it again with the same layout is a replay, not an error.
func (cl *devCluster) createDemoShow(ctx context.Context) error {
	srv := gateway.NewServer(cl.nodes[0].router)
	for {
		_, err := srv.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: demoShow()})
		if err == nil || gateway.IsAlreadyExists(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func demoShow() *ledgerpb.Show {
	s := &ledgerpb.Show{ShowId: demoShowID, Title: "Demo screening",
		Categories: []*ledgerpb.Category{
			{Name: "front", PriceMinor: 900, Currency: "EUR"},
			{Name: "standard", PriceMinor: 1200, Currency: "EUR"},
			{Name: "premium", PriceMinor: 1500, Currency: "EUR"},
		}}
	for i, row := range "ABCDEFGHIJ" {
		cat := "standard"
		switch {
		case i < 3:
			cat = "front"
		case i >= 8:
			cat = "premium"
		}
		s.Rows = append(s.Rows, &ledgerpb.Row{Name: string(row), Seats: 20, Category: cat})
	}
	return s
}

func (cl *devCluster) close() error {
	var first error
	for _, n := range cl.nodes {
		if err := n.close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}
