package raftnode

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatledger/seatledger/fsm"
)

// Peer is a node of the cluster and where to reach it.
type Peer struct {
	ID       string
	RaftAddr string
	GRPCAddr string
	// RaftDial and GRPCDial, when set, are where this node dials the peer
	// instead of its addresses: a fault-injecting proxy in the harness.
	// Raft configurations keep RaftAddr, so every node agrees on them.
	RaftDial string
	GRPCDial string
	// Draining is set for a node the registry marks DRAINING: it is being
	// emptied, so no leadership (balance.go) is handed to it.
	Draining bool
}

// RaftTarget is the address this node dials for the peer's raft port.
func (p Peer) RaftTarget() string {
	if p.RaftDial != "" {
		return p.RaftDial
	}
	return p.RaftAddr
}

// GRPCTarget is the address this node dials for the peer's gRPC port.
func (p Peer) GRPCTarget() string {
	if p.GRPCDial != "" {
		return p.GRPCDial
	}
	return p.GRPCAddr
}

// Config configures a Node. Zero durations take the defaults below.
type Config struct {
	NodeID  string
	DataDir string
	// RaftAddr is where this node's one raft port listens.
	RaftAddr string
	// Listener, if set, is an already bound raft port (RaftAddr is then
	// only its name).
	Listener net.Listener
	// ClusterID is the cluster this node belongs to (cluster.go): its raft
	// port refuses connections of other clusters. Required.
	ClusterID ClusterID
	// TLS, if set, encrypts the raft port both ways (mux.go); nil keeps it
	// plaintext. Its ServerName and Logger may be left nil: the node maps
	// dial addresses to its peers' advertised hosts and logs with Logger.
	TLS *MuxTLS
	// Peers is the seed list (--peers), this node included: the peer
	// table a node starts with, joined with the one it saved (peers.go);
	// the node registry replaces it at run time (SetPeers). A node that
	// joins a running cluster lists only itself.
	Peers []Peer
	// Groups maps every group of the cluster to its initial replicas' node
	// ids: this node bootstraps the groups that name it, and on restart
	// hosts any group whose raft state it has. A node that joins a running
	// cluster lists every group with no replicas (it bootstraps nothing).
	Groups map[uint32][]string
	// Bootstrap makes a group with no raft state start with Groups as its
	// configuration. Every replica may do so: identical configurations are
	// safe.
	Bootstrap bool

	// Raft timing. Heartbeats go out at HeartbeatTimeout/10.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration

	// BatchCommandsMax bounds the client commands in one log entry; 1
	// disables group commit (for measuring its gain).
	BatchCommandsMax int
	// InflightEntriesMax bounds proposed entries awaiting commit per group.
	// Small on purpose: while a few entries are in flight, new commands
	// queue up and the next entry takes them all (group commit). With 64,
	// eight groups never filled their window under 256 clients, so every
	// entry carried one command (docs/PERFORMANCE.md).
	InflightEntriesMax int
	// ExpireInterval is how often a leader looks for due holds.
	ExpireInterval time.Duration
	// PruneCheckInterval is how often a leader looks for seat change
	// records past their retention (fsm.EventRetentionMs) when no hold is
	// due: records are pruned at most this late.
	PruneCheckInterval time.Duration
	// BalanceInterval is how often a node hands away leaderships beyond
	// its fair share (balance.go); negative turns balancing off.
	BalanceInterval time.Duration
	// SnapshotThreshold is the number of entries after which raft snapshots.
	SnapshotThreshold uint64
	// SnapshotInterval is how often raft checks whether SnapshotThreshold
	// entries were applied since the last snapshot (it adds up to as much
	// again of jitter).
	SnapshotInterval time.Duration
	// TrailingLogs is the number of entries kept after a snapshot, so a
	// briefly lagging follower catches up from the log, not a snapshot.
	TrailingLogs uint64
	// CheckpointBytes is the size of the state-machine writes a group
	// holds in memory before it writes them to Pebble behind apply
	// (fsm.Machine.SetCheckpointBytes); 0 means fsm's default, 16 MiB.
	CheckpointBytes int

	// UnsafeFSM switches off FSM safety checks (fault-harness self-tests
	// only; see fsm.Unsafe).
	UnsafeFSM fsm.Unsafe

	// Now is the leader's clock (Unix time); tests and the fault harness may
	// skew it. Defaults to time.Now.
	Now func() time.Time
	// Logger receives structured logs, hashicorp/raft's own included
	// (hclog.go); lines carry node and group attributes.
	Logger *slog.Logger
	// RaftLogLevel is the least severity of raft's own lines passed to
	// Logger; nil means WARN. RaftLogOff drops them all.
	RaftLogLevel slog.Leveler
	// Metrics receives the node's metrics (metrics.go); nil keeps them in
	// a private registry. Give each node in a process its own registry, or
	// one wrapped with a distinguishing label.
	Metrics prometheus.Registerer
}

// Defaults for a node on a LAN or loopback.
const (
	// heartbeatTimeoutDefault and electionTimeoutDefault bound how soon a
	// group replaces a dead leader: a follower stands after one to two
	// heartbeat timeouts without contact, and one that still knows the
	// leader refuses votes until its own timer runs out. At 1 s a leader
	// kill often missed the waiting room's 2 s to resume admissions; at
	// 500 ms it meets it, with no more elections under load
	// (docs/PERFORMANCE-SHAPE.md, "Leader kill").
	heartbeatTimeoutDefault = 500 * time.Millisecond
	electionTimeoutDefault  = 500 * time.Millisecond
	// leaderLeaseTimeoutDefault caps the lease; by default it is half the
	// heartbeat timeout (setDefaults).
	leaderLeaseTimeoutDefault = 500 * time.Millisecond
	// commitTimeoutDefault is how often (randomly once to twice per
	// interval) a leader sends each follower an AppendEntries when no new
	// entry prompts one. Its news, the commit index, heartbeat frames carry
	// too (leader_commit.go); what it still paces is raft's retry of a
	// follower whose replication failed when no new entry comes. Shorter,
	// these empty appends were much of an idle cluster's raft traffic
	// (docs/PERFORMANCE-SHAPE.md, "Heartbeats coalesced per node pair").
	commitTimeoutDefault      = time.Second
	batchCommandsDefault      = 1024
	inflightEntriesDefault    = 4
	expireIntervalDefault     = 100 * time.Millisecond
	pruneCheckIntervalDefault = time.Minute
	balanceIntervalDefault    = 5 * time.Second
	snapshotThresholdDefault  = 8192
	snapshotIntervalDefault   = 2 * time.Minute // raft's own default
	// expireQuietMax bounds how long a leader with no hold due skips its
	// expiry ticks (expiry.go, sleepQuiet).
	expireQuietMax = time.Second
	// proposeTimeout bounds how long a proposal may wait to enter raft.
	proposeTimeout = 2 * time.Second
	// barrierTimeout bounds the barrier a new leader runs before serving
	// linearizable reads.
	barrierTimeout = 10 * time.Second
	// transportTimeout bounds one raft RPC's I/O.
	transportTimeout = 10 * time.Second
	// beatTimeoutMin is the least time a heartbeat frame's round trip may
	// take (heartbeat.go; HeartbeatTimeout if longer): short enough that a
	// lost peer fails its heartbeats well before raft's transportTimeout,
	// long enough not to fail them on a loaded machine.
	beatTimeoutMin = time.Second
	// transportPool is the number of idle connections kept per peer.
	transportPool = 3
	// maxAppendEntries bounds entries per AppendEntries RPC.
	maxAppendEntries    = 256
	trailingLogsDefault = 10240
	// logCacheEntries caches recent entries in memory for replication.
	logCacheEntries = 1024
)

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.HeartbeatTimeout, heartbeatTimeoutDefault)
	def(&c.ElectionTimeout, electionTimeoutDefault)
	// raft requires the lease to fit in the heartbeat timeout.
	def(&c.LeaderLeaseTimeout, min(leaderLeaseTimeoutDefault, c.HeartbeatTimeout/2))
	def(&c.CommitTimeout, commitTimeoutDefault)
	def(&c.ExpireInterval, expireIntervalDefault)
	def(&c.PruneCheckInterval, pruneCheckIntervalDefault)
	def(&c.BalanceInterval, balanceIntervalDefault)
	def(&c.SnapshotInterval, snapshotIntervalDefault)
	if c.BatchCommandsMax == 0 {
		c.BatchCommandsMax = batchCommandsDefault
	}
	if c.InflightEntriesMax == 0 {
		c.InflightEntriesMax = inflightEntriesDefault
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = snapshotThresholdDefault
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = trailingLogsDefault
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.RaftLogLevel == nil {
		c.RaftLogLevel = slog.LevelWarn
	}
}

// Validate reports the first thing wrong with the config.
func (c *Config) Validate() error {
	if c.NodeID == "" || c.DataDir == "" || c.RaftAddr == "" {
		return errors.New("raftnode: node id, data dir and raft address are required")
	}
	if c.ClusterID.IsZero() {
		return fmt.Errorf("%w: a node needs its cluster's id", ErrClusterID)
	}
	known := map[string]bool{}
	for _, p := range c.Peers {
		if p.ID == "" || p.RaftAddr == "" || known[p.ID] {
			return fmt.Errorf("raftnode: peer %q needs a unique id and a raft address", p.ID)
		}
		if strings.Contains(p.ID, incarnationSep) {
			return fmt.Errorf("raftnode: node id %q may not contain %q (it separates a replica's incarnation)", p.ID, incarnationSep)
		}
		known[p.ID] = true
	}
	if !known[c.NodeID] {
		return fmt.Errorf("raftnode: node %s is not in the peer list", c.NodeID)
	}
	for g, ids := range c.Groups {
		if g == beatGroupID {
			return fmt.Errorf("raftnode: group id %d is reserved for heartbeat frames", g)
		}
		if g == appendGroupID {
			return fmt.Errorf("raftnode: group id %d is reserved for append frames", g)
		}
		if g > maxGroupID {
			return fmt.Errorf("raftnode: group id %d is beyond the largest the node log holds, %d", g, maxGroupID)
		}
		for _, id := range ids {
			if !known[id] {
				return fmt.Errorf("raftnode: group %d names unknown node %s", g, id)
			}
		}
	}
	if c.BatchCommandsMax < 0 || c.InflightEntriesMax < 0 {
		return errors.New("raftnode: batch and inflight limits must be positive")
	}
	if c.LeaderLeaseTimeout > c.HeartbeatTimeout && c.HeartbeatTimeout != 0 {
		return errors.New("raftnode: leader lease timeout must not exceed the heartbeat timeout")
	}
	if c.TLS != nil {
		return c.TLS.Validate()
	}
	return nil
}
