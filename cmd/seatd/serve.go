package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seatledger/seatledger/delivery"
	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

func runServe(args []string) error {
	fs := flag.NewFlagSet("seatd serve", flag.ContinueOnError)
	id := fs.String("id", "", "this node's id (in --peers, or registered with seatctl node add for --join)")
	raftAddr := fs.String("raft", "", "raft address (host:port), shared by every group")
	grpcAddr := fs.String("grpc", "", "gRPC address (public API and forwarding between nodes)")
	httpAddr := fs.String("http", "", "HTTP/JSON address (optional)")
	dataDir := fs.String("data-dir", "", "data directory")
	peersFlag := fs.String("peers", "", "the nodes that bootstrap the cluster: ID=RAFT_ADDR/GRPC_ADDR, comma-separated (the same on each)")
	joinFlag := fs.String("join", "", "instead of --peers, for a node added to a running cluster: gRPC addresses of some of its nodes, comma-separated")
	groups := fs.Uint("groups", 0, fmt.Sprintf("number of raft groups, fixed when the cluster is bootstrapped (default %d); later and on joining nodes optional, and refused unless it is the cluster's", shard.GroupsDefault))
	replicas := fs.Int("replicas", 3, "replicas per group")
	jsonLogs := fs.Bool("log-json", false, "log JSON instead of text")
	raftLogLevel := fs.String("raft-log-level", "warn", "least severity of raft's own log lines: debug, info, warn, error or off")
	adminAddr := fs.String("admin-http", "", "admin HTTP address serving /debug/pprof/ and /metrics (off by default; keep it private)")
	maxBatch := fs.Int("max-batch", 0, "client commands per raft entry (group commit); 1 turns batching off (default 1024)")
	maxInflight := fs.Int("max-inflight", 0, "raft entries a group's leader keeps proposed but not yet committed; fewer make group commit put more commands in each (default 4)")
	snapThreshold := fs.Uint64("snapshot-threshold", 0, "raft log entries a group applies between snapshots (raft's SnapshotThreshold, etcd's --snapshot-count; default 8192)")
	trailingLogs := fs.Uint64("trailing-logs", 0, "raft log entries a group keeps after a snapshot; a follower further behind installs a snapshot instead (default 10240)")
	checkpointBytes := fs.Int("checkpoint-bytes", 0, "bytes of state-machine writes a group holds in memory before it writes them to Pebble, behind apply (default 16 MiB, also the most it may hold); smaller checkpoints more often")
	snapInterval := fs.Duration("snapshot-interval", 0, "how often a group checks whether --snapshot-threshold entries were applied since its last snapshot, plus up to as much jitter (default 2m)")
	heartbeat := fs.Duration("heartbeat-timeout", 0, "raft heartbeat timeout: a follower that hears no leader for one to two of it stands for election, so a dead leader is replaced in about 1 s (default 500ms; heartbeats go out at a tenth of it)")
	election := fs.Duration("election-timeout", 0, "raft election timeout: a candidate that wins no election in one to two of it tries again (default 500ms)")
	clientRate := fs.Float64("client-rate", gateway.ClientRateDefault, "writes per second each client_id may send to this node (429 RATE_LIMITED past it); 0 turns the limit off")
	adminTokenPath := fs.String("admin-token-file", "", "file with the cluster's admin token (seatd tokengen), the same on every node: admin calls and forwarding between nodes present it")
	backendKeyPath := fs.String("backend-key-file", "", "file with the booking backend's secret key (seatd tokengen), the same on every node: it reads hold owners and payments and lists a client's bookings, but makes no admin call (docs/API.md, Credentials)")
	noAuth := fs.Bool("insecure-no-auth", false, "test only: serve admin calls and forwarding without the admin token")
	ticketKey := fs.String("ticket-key", "", "file with the cluster's ticket signing key (seatd keygen); default DATA_DIR/ticket.key, created if missing")
	watchersMax := fs.Int("watchers-max", gateway.WatchersMaxDefault, "live seat-map streams (SSE and gRPC Watch) this node serves at once, past which it answers 429 TOO_MANY_WATCHERS; each takes a file descriptor, so raise LimitNOFILE above it (docs/OPERATIONS.md)")
	clientBurst := fs.Float64("client-burst", gateway.ClientBurstDefault, "writes a client may send at once before --client-rate applies")
	dialFlag := fs.String("dial", "", "test only: dial peers here instead of their --peers addresses: ID=RAFT_ADDR/GRPC_ADDR,...")
	faults := registerFaultFlags(fs)
	kafkaBrokers := fs.String("kafka-brokers", "", "Kafka brokers (host:port, comma-separated) to produce every booking event to, keyed by show id; with --kafka-topic, the same on every node (docs/WEBHOOKS.md)")
	kafkaTopic := fs.String("kafka-topic", "", "the Kafka topic of --kafka-brokers")
	webhookBackoff := fs.Duration("webhook-backoff-max", delivery.BackoffMaxDefault, "longest wait between attempts to deliver an event to a failing webhook or Kafka")
	var corsOrigins []string
	fs.Func("cors-origin", "an origin whose browser pages may call the HTTP API, such as https://tickets.example.com or http://localhost:* (any port); repeat for more", func(o string) error {
		corsOrigins = append(corsOrigins, o)
		return gateway.CORSConfig{Origins: []string{o}}.Validate()
	})
	var tlsFiles certs.NodeFiles
	fs.StringVar(&tlsFiles.CertFile, "tls-cert", "", "this node's TLS certificate (PEM; seatd certgen): every port then serves TLS, and the node presents it to its peers")
	fs.StringVar(&tlsFiles.KeyFile, "tls-key", "", "the key of --tls-cert (PEM)")
	fs.StringVar(&tlsFiles.CAFile, "tls-ca", "", "CA certificates (PEM) the nodes verify each other with (default: the system's roots)")
	fs.BoolVar(&tlsFiles.PeerMTLS, "peer-mtls", false, "mutual TLS between nodes: the raft port and the internal Peer service require a certificate signed by --tls-ca")
	fs.StringVar(&tlsFiles.ClientCAFile, "client-ca", "", "CA certificates (PEM): the public gRPC and HTTP ports require a client certificate signed by one of them")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *id == "" || *raftAddr == "" || *grpcAddr == "" || *dataDir == "" || (*peersFlag == "") == (*joinFlag == "") {
		fs.Usage()
		return fmt.Errorf("--id, --raft, --grpc, --data-dir and one of --peers (a node that bootstraps the cluster) or --join (a node added later) are required")
	}
	peers, join, err := seedPeers(*id, *raftAddr, *grpcAddr, *peersFlag, *joinFlag)
	if err != nil {
		return err
	}
	if *dialFlag != "" {
		if peers, err = applyDial(peers, *dialFlag); err != nil {
			return err
		}
	}
	if err := faults.Validate(); err != nil {
		return err
	}
	if *clientRate < 0 || *clientBurst < 0 {
		return fmt.Errorf("--client-rate and --client-burst must not be negative")
	}
	raftLevel, err := parseRaftLogLevel(*raftLogLevel)
	if err != nil {
		return err
	}
	tlsNode, err := loadServeTLS(tlsFiles, *id, peers, time.Now())
	if err != nil {
		return err
	}
	// raft's DEBUG lines need a handler that lets DEBUG through.
	hopts := &slog.HandlerOptions{Level: min(slog.LevelInfo, raftLevel)}
	var handler slog.Handler = slog.NewTextHandler(os.Stderr, hopts)
	if *jsonLogs {
		handler = slog.NewJSONHandler(os.Stderr, hopts)
	}
	// The node adds its id to the lines it logs; base is without it, so
	// the attribute appears once.
	base := slog.New(handler)
	logger := base.With("node", *id)
	cfg := nodeConfig{ID: *id, DataDir: *dataDir, Peers: peers, Join: join, Groups: uint32(*groups), Replicas: *replicas,
		Logger: base, RaftLogLevel: raftLevel, Faults: *faults, TLS: tlsNode,
		Admission: &gateway.Admission{Rate: *clientRate, Burst: max(*clientBurst, 1)}, WatchersMax: *watchersMax,
		HTTP:     gateway.HTTPConfig{CORS: gateway.CORSConfig{Origins: corsOrigins}},
		Delivery: delivery.Config{KafkaBrokers: splitList(*kafkaBrokers), KafkaTopic: *kafkaTopic, BackoffMax: *webhookBackoff}}
	if err := cfg.Delivery.Validate(); err != nil {
		return err
	}
	cfg.Raft.BatchCommandsMax, cfg.Raft.HeartbeatTimeout, cfg.Raft.ElectionTimeout = *maxBatch, *heartbeat, *election
	cfg.Raft.InflightEntriesMax = *maxInflight
	cfg.Raft.SnapshotThreshold = *snapThreshold
	cfg.Raft.TrailingLogs = *trailingLogs
	cfg.Raft.SnapshotInterval = *snapInterval
	if *checkpointBytes < 0 {
		return fmt.Errorf("--checkpoint-bytes %d: must be 0 (the default) or more", *checkpointBytes)
	}
	cfg.Raft.CheckpointBytes = *checkpointBytes
	switch {
	case *adminTokenPath != "" && *noAuth:
		return fmt.Errorf("--admin-token-file and --insecure-no-auth exclude each other")
	case *adminTokenPath != "":
		if cfg.AdminToken, err = loadAdminToken(*adminTokenPath, false); err != nil {
			return err
		}
	case !*noAuth:
		return fmt.Errorf("--admin-token-file is required (create one with: seatd tokengen admin.token, and give every node the same file), or --insecure-no-auth for a test cluster")
	default:
		logger.Warn("UNSAFE: --insecure-no-auth: anyone who reaches this node can run admin calls and forward raw commands")
	}
	if *backendKeyPath != "" {
		if cfg.BackendKey, err = loadAdminToken(*backendKeyPath, false); err != nil {
			return fmt.Errorf("--backend-key-file: %w", err)
		}
		if cfg.BackendKey == cfg.AdminToken {
			return fmt.Errorf("--backend-key-file holds the admin token: give the backend its own key (seatd tokengen backend.key)")
		}
	}
	keyPath := *ticketKey
	if keyPath == "" {
		keyPath = filepath.Join(*dataDir, ticketKeyFile)
		logger.Info("signing tickets with this node's own key: give every node the same --ticket-key so one public key verifies all tickets", "key", keyPath)
	}
	if cfg.TicketKey, err = loadTicketKey(keyPath, *ticketKey == ""); err != nil {
		return err
	}
	logTLS(logger, tlsNode, time.Now())
	warnNoFile(logger, *watchersMax)
	if faults.on() {
		logger.Warn("UNSAFE test options are on: this node is not fit for real bookings", "broken", faults.Broken, "test_hooks", faults.ClockHook)
	}
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
	if *adminAddr != "" {
		if cfg.AdminLn, err = net.Listen("tcp", *adminAddr); err != nil {
			cfg.closeListeners()
			return err
		}
	}
	n, err := startNode(cfg)
	if err != nil {
		return err
	}
	logger.Info("serving", "raft", *raftAddr, "grpc", *grpcAddr, "http", *httpAddr, "admin_http", *adminAddr, "groups", n.router.Map().Groups,
		"tls", tlsNode != nil, "peer_mtls", tlsFiles.PeerMTLS)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	select {
	case s := <-sig:
		logger.Info("shutting down", "signal", s.String())
		return n.close()
	case err := <-n.fatal:
		logger.Error("refusing to serve", "err", err)
		n.close()
		return err
	}
}

// seedPeers returns the seed list: --peers, or for a node joining with
// --join only itself, and the join addresses.
func seedPeers(id, raftAddr, grpcAddr, peersFlag, joinFlag string) ([]raftnode.Peer, []string, error) {
	if joinFlag != "" {
		join := strings.FieldsFunc(joinFlag, func(r rune) bool { return r == ',' || r == ' ' })
		if len(join) == 0 {
			return nil, nil, fmt.Errorf("--join names no address")
		}
		return []raftnode.Peer{{ID: id, RaftAddr: raftAddr, GRPCAddr: grpcAddr}}, join, nil
	}
	peers, err := parsePeers(peersFlag)
	return peers, nil, err
}

// applyDial sets where this node dials each named peer (a proxy in tests).
func applyDial(peers []raftnode.Peer, s string) ([]raftnode.Peer, error) {
	dial, err := parsePeers(s)
	if err != nil {
		return nil, fmt.Errorf("--dial: %w", err)
	}
	for _, d := range dial {
		found := false
		for i := range peers {
			if peers[i].ID == d.ID {
				peers[i].RaftDial, peers[i].GRPCDial, found = d.RaftAddr, d.GRPCAddr, true
			}
		}
		if !found {
			return nil, fmt.Errorf("--dial: node %s is not in --peers", d.ID)
		}
	}
	return peers, nil
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
