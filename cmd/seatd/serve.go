package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

func runServe(args []string) error {
	fs := flag.NewFlagSet("seatd serve", flag.ContinueOnError)
	id := fs.String("id", "", "this node's id (must appear in --peers)")
	raftAddr := fs.String("raft", "", "raft address (host:port), shared by every group")
	grpcAddr := fs.String("grpc", "", "gRPC address (public API and forwarding between nodes)")
	httpAddr := fs.String("http", "", "HTTP/JSON address (optional)")
	dataDir := fs.String("data-dir", "", "data directory")
	peersFlag := fs.String("peers", "", "every node: ID=RAFT_ADDR/GRPC_ADDR, comma-separated")
	groups := fs.Uint("groups", shard.GroupsDefault, "number of raft groups (the same on every node)")
	replicas := fs.Int("replicas", 3, "replicas per group")
	jsonLogs := fs.Bool("log-json", false, "log JSON instead of text")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id == "" || *raftAddr == "" || *grpcAddr == "" || *dataDir == "" || *peersFlag == "" {
		fs.Usage()
		return fmt.Errorf("--id, --raft, --grpc, --data-dir and --peers are required")
	}
	peers, err := parsePeers(*peersFlag)
	if err != nil {
		return err
	}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *jsonLogs {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	logger := slog.New(handler).With("node", *id)
	cfg := nodeConfig{ID: *id, DataDir: *dataDir, Peers: peers, Groups: uint32(*groups), Replicas: *replicas,
		Logger: logger, RaftLog: os.Stderr}
	if cfg.RaftLn, err = net.Listen("tcp", *raftAddr); err != nil {
		return err
	}
	if cfg.GRPCLn, err = net.Listen("tcp", *grpcAddr); err != nil {
		cfg.RaftLn.Close()
		return err
	}
	if *httpAddr != "" {
		if cfg.HTTPLn, err = net.Listen("tcp", *httpAddr); err != nil {
			cfg.RaftLn.Close()
			cfg.GRPCLn.Close()
			return err
		}
	}
	n, err := startNode(cfg)
	if err != nil {
		return err
	}
	logger.Info("serving", "raft", *raftAddr, "grpc", *grpcAddr, "http", *httpAddr, "groups", *groups)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	s := <-sig
	logger.Info("shutting down", "signal", s.String())
	return n.close()
}

// parsePeers parses "n1=127.0.0.1:7001/127.0.0.1:9001,n2=...".
func parsePeers(s string) ([]raftnode.Peer, error) {
	var peers []raftnode.Peer
	for _, part := range strings.Split(s, ",") {
		id, addrs, ok := strings.Cut(strings.TrimSpace(part), "=")
		raftAddr, grpcAddr, ok2 := strings.Cut(addrs, "/")
		if !ok || !ok2 || id == "" || raftAddr == "" || grpcAddr == "" {
			return nil, fmt.Errorf("--peers: %q is not ID=RAFT_ADDR/GRPC_ADDR", part)
		}
		peers = append(peers, raftnode.Peer{ID: id, RaftAddr: raftAddr, GRPCAddr: grpcAddr})
	}
	return peers, nil
}
