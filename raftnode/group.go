package raftnode

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/seatledger/seatledger/fsm"
)

// Group is this node's replica of one raft group.
type Group struct {
	id        uint32
	node      *Node
	log       *slog.Logger
	machine   *fsm.Machine
	raft      *raft.Raft
	transport *raft.NetworkTransport
	// trans is what raft sends and receives through: transport, with
	// heartbeats coalesced per node (heartbeat_transport.go).
	trans *beatTransport
	// rpcs is the channel raft serves RPCs from: relay and inject
	// (relay.go) send on it.
	rpcs  chan raft.RPC
	store *raftboltdb.BoltStore
	logs  raft.LogStore // raft's view of the group's log (cached)
	// nodeLog is the group's part of the node log under logs, which tells
	// the proposer when raft writes to it; set before raft starts.
	nodeLog *groupLog
	metrics *groupMetrics
	// commits is what this replica last learned of its leader's commit
	// index, for bounded-stale reads (leader_commit.go, stale_read.go).
	commits commitKnown

	// self is this replica's raft server id: the node id with the
	// replica's incarnation (incarnation.go); both read-only.
	self        raft.ServerID
	incarnation uint64

	proposals chan *proposal
	notify    chan bool
	// applied wakes watchers after each apply (applied.go).
	applied appliedSignal
	stop    chan struct{}
	wg      sync.WaitGroup

	// hb tracks followers whose heartbeats fail (balance.go).
	hb struct {
		sync.Mutex
		down map[string]bool
	}

	// epoch counts leadership changes seen by watchLeadership; readyEpoch
	// is the epoch whose start-of-term barrier has completed. A leader
	// serves linearizable reads only when they are equal.
	epoch      atomic.Uint64
	readyEpoch atomic.Uint64
	// ready (capacity 1) wakes the expiry driver when this replica becomes
	// a ready leader (expiry.go).
	ready chan struct{}
	// admitReady wakes the admission driver (admit.go) the same way.
	admitReady chan struct{}
	// checkpoint (capacity 1) wakes the checkpointer (checkpointer.go)
	// when the state machine's overlay is full.
	checkpoint chan struct{}
	// leaderless says how long this replica has known no leader
	// (leaderless.go).
	leaderless leaderWatch
}

// startGroup starts this node's replica of a group. bootstrap is the
// group's initial configuration for a replica with no raft state yet; nil
// for a replica added to a running group, which waits for its leader.
// machine is the group's state machine if the caller loaded it, else nil.
func startGroup(n *Node, id uint32, bootstrap []string, machine *fsm.Machine) (*Group, error) {
	dir := n.groupDir(id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("raftnode: group dir: %w", err)
	}
	if machine == nil {
		var err error
		if machine, err = fsm.NewMachine(n.db, id); err != nil {
			return nil, err
		}
	}
	machine.SetUnsafe(n.cfg.UnsafeFSM)
	machine.SetCheckpointBytes(n.cfg.CheckpointBytes)
	if err := machine.UseScratchDir(dir); err != nil {
		return nil, err
	}
	g := &Group{
		id:        id,
		node:      n,
		log:       n.cfg.Logger.With("group", id),
		machine:   machine,
		metrics:   n.metrics.group(id),
		proposals: make(chan *proposal, n.cfg.BatchCommandsMax),
		// Raft blocks on this channel; a buffer keeps it from waiting on us.
		notify:     make(chan bool, 16),
		stop:       make(chan struct{}),
		ready:      make(chan struct{}, 1),
		admitReady: make(chan struct{}, 1),
		checkpoint: make(chan struct{}, 1),
	}
	var err error
	if g.incarnation, err = readIncarnation(dir); err != nil {
		return nil, fmt.Errorf("raftnode: group %d: %w", id, err)
	}
	g.self = replicaID(n.cfg.NodeID, g.incarnation)
	// Before raft starts: its first leader observation must find the clock.
	g.leaderless.start()
	if err := g.openRaft(dir, bootstrap); err != nil {
		return nil, err
	}
	g.wg.Add(5)
	go g.watchLeadership()
	go g.runProposer()
	go g.runExpiry()
	go g.runAdmit()        // admit.go
	go g.runCheckpointer() // checkpointer.go
	return g, nil
}

func (g *Group) openRaft(dir string, replicas []string) error {
	cfg := g.node.cfg
	hlog := newRaftLogger(g.log, cfg.RaftLogLevel)
	// The group's stable store (term and vote); its log is in the node log
	// (nodelog.go). NoSync false: a vote is on disk before it is cast.
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: false})
	if err != nil {
		return fmt.Errorf("raftnode: open raft state of group %d: %w", g.id, err)
	}
	g.store = store
	glog, err := g.node.log.group(g.id)
	if err != nil {
		store.Close()
		return fmt.Errorf("raftnode: group %d refuses to start on a damaged log (%s): %w", g.id, g.node.log.path, err)
	}
	g.nodeLog = glog
	checked := checkedLogs{LogStore: glog, scratch: &sealScratch{}}
	if err := checked.verifyAll(); err != nil {
		store.Close()
		return fmt.Errorf("raftnode: group %d refuses to start on a damaged log (%s): %w", g.id, g.node.log.path, err)
	}
	g.metrics.logPath = g.node.log.path
	logs, err := raft.NewLogCache(logCacheEntries, timedLogs{checked, g.metrics.logStoreLatency})
	if err != nil {
		store.Close()
		return err
	}
	files, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hlog)
	if err != nil {
		store.Close()
		return fmt.Errorf("raftnode: snapshot store of group %d: %w", g.id, err)
	}
	snaps, err := newLazySnapshots(files, dir, g.machine) // snapshots.go
	if err != nil {
		store.Close()
		return fmt.Errorf("raftnode: snapshot store of group %d: %w", g.id, err)
	}
	g.metrics.snaps = snaps
	// The layer refuses traffic addressed to another incarnation.
	layer, err := g.node.mux.layerAt(g.id, g.incarnation, g.log)
	if err != nil {
		store.Close()
		return err
	}
	g.transport = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream:                layer,
		MaxPool:               transportPool,
		Timeout:               transportTimeout,
		Logger:                hlog,
		ServerAddressProvider: peerAddresses{g.node},
	})
	rc := raft.DefaultConfig()
	rc.LocalID = g.self
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.MaxAppendEntries = maxAppendEntries
	// A buffered apply queue: the entries queued while the leader loop
	// writes to the log go into its next write together (raft's group
	// commit of entries). Raft hands committed entries to ApplyBatch in
	// batches either way (a BatchingFSM).
	rc.BatchApplyCh = true
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.SnapshotInterval = cfg.SnapshotInterval
	// The FSM's state survives restarts in Pebble with its applied index;
	// restoring the last snapshot on start would only redo work.
	rc.NoSnapshotRestoreOnStart = true
	rc.NotifyCh = g.notify
	rc.Logger = hlog
	if err := raft.ValidateConfig(rc); err != nil {
		store.Close()
		return fmt.Errorf("raftnode: raft config: %w", err)
	}
	if cfg.Bootstrap && len(replicas) > 0 {
		if err := g.bootstrap(rc, checked, store, snaps, replicas); err != nil {
			store.Close()
			return err
		}
	}
	g.logs = logs
	rpcs := make(chan raft.RPC)
	g.rpcs = rpcs
	// Heartbeats go through the node's coalescer (heartbeat.go).
	g.trans = newBeatTransport(progressTransport{g.transport, g.metrics.followers, rpcs},
		g.node.beats, g.node.appends, g.id, heartbeatGapMin(cfg.HeartbeatTimeout), peerAddresses{g.node}, g.stop)
	r, err := raft.NewRaft(rc, &adapter{m: g.machine, applied: &g.applied, metrics: g.metrics, log: g.log, checkpoint: g.checkpoint, raft: &g.trans.raft}, logs, store, snaps, g.trans)
	if err != nil {
		store.Close()
		return fmt.Errorf("raftnode: start raft of group %d: %w", g.id, err)
	}
	g.raft = r
	g.trans.raft.Store(r)
	g.node.beats.register(g.id, g)
	g.wg.Add(1)
	go g.relay(g.transport.Consumer(), rpcs)
	obs := make(chan raft.Observation, 16)
	g.raft.RegisterObserver(raft.NewObserver(obs, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.FailedHeartbeatObservation, raft.ResumedHeartbeatObservation, raft.LeaderObservation:
			return true
		}
		return false
	}))
	g.hb.down = map[string]bool{}
	g.wg.Add(1)
	go g.watchHeartbeats(obs)
	return nil
}

func (g *Group) bootstrap(rc *raft.Config, logs raft.LogStore, store *raftboltdb.BoltStore, snaps raft.SnapshotStore, replicas []string) error {
	has, err := raft.HasExistingState(logs, store, snaps)
	if err != nil || has {
		return err
	}
	var servers []raft.Server
	for _, id := range replicas {
		servers = append(servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(id), Address: raft.ServerAddress(g.node.raftAddr(id))})
	}
	return raft.BootstrapCluster(rc, logs, store, snaps, g.transport, raft.Configuration{Servers: servers})
}

// ID is the group's id.
func (g *Group) ID() uint32 { return g.id }

// Machine is the group's state machine (for reads).
func (g *Group) Machine() *fsm.Machine { return g.machine }

// IsLeader reports whether this replica currently leads the group.
func (g *Group) IsLeader() bool { return g.raft.State() == raft.Leader }

// Leader returns the node id of the group's leader as this replica knows
// it (its server id without the incarnation).
func (g *Group) Leader() string {
	_, id := g.raft.LeaderWithID()
	return nodeOf(id)
}

// watchLeadership tracks leadership changes. On gaining leadership it runs a
// barrier: once it completes, every entry of earlier terms is applied here,
// so this leader's state includes every write acknowledged before it was
// elected.
func (g *Group) watchLeadership() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case leader := <-g.notify:
			epoch := g.epoch.Add(1)
			g.log.Info("leadership changed", "leader", leader, "term", g.raft.CurrentTerm(),
				"last_index", g.raft.LastIndex(), "commit_index", g.raft.CommitIndex(), "applied_index", g.raft.AppliedIndex())
			if leader {
				g.wg.Add(1)
				go g.awaitBarrier(epoch)
			}
		}
	}
}

func (g *Group) awaitBarrier(epoch uint64) {
	defer g.wg.Done()
	if err := g.waitFuture(g.raft.Barrier(barrierTimeout)); err != nil {
		g.log.Warn("start-of-term barrier failed", "term", g.raft.CurrentTerm(), "err", err)
		return
	}
	if g.epoch.Load() == epoch {
		g.readyEpoch.Store(epoch)
		select {
		case g.ready <- struct{}{}:
		default: // a wake-up is already pending
		}
		select {
		case g.admitReady <- struct{}{}:
		default:
		}
	}
}

// leaderReady reports whether this replica leads and has applied every
// earlier term's entries.
func (g *Group) leaderReady() bool {
	e := g.epoch.Load()
	return g.IsLeader() && g.readyEpoch.Load() == e
}

// close stops the group's goroutines and raft.
func (g *Group) close() error {
	close(g.stop)
	var err error
	if g.trans != nil {
		g.node.beats.unregister(g.id, g)
	}
	if g.raft != nil {
		err = g.raft.Shutdown().Error()
	}
	if g.trans != nil {
		// Before the stable store closes (heartbeat_transport.go).
		g.trans.closeHeartbeats()
	}
	g.wg.Wait() // a checkpoint behind apply under way ends first (checkpointer.go)
	// After raft stopped applying: watchers wake and see the group gone.
	g.applied.close()
	if g.transport != nil {
		g.transport.Close()
	}
	if g.store != nil {
		if cerr := g.store.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
