package raftnode

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/fsm"
)

// Node is one seatledger process's share of the cluster: a Pebble database,
// one raft port, and a replica of every group that names this node.
type Node struct {
	cfg Config
	db  *pebble.DB
	// log is the raft log of every hosted group (nodelog.go).
	log *nodeLog
	mux *Mux
	// beats sends and serves the groups' heartbeats, coalesced per peer
	// node (heartbeat.go); closed after the groups, before mux.
	beats *beatCoalescer
	// appends sends and serves the groups' AppendEntries, coalesced per
	// peer node (append.go).
	appends *appendSender
	// metrics is set before any group starts and not changed after.
	metrics *nodeMetrics
	// peers is the peer table (peers.go): an immutable snapshot, swapped
	// whole by SetPeers, read without a lock by raft's dials and the
	// router.
	peers atomic.Pointer[peerTable]

	// mu guards the hosted groups, which membership changes add and drop
	// (membership.go); changes hold it for their whole start or stop.
	mu struct {
		sync.Mutex
		groups map[uint32]*Group
		closed bool
	}

	muxDone   chan struct{}
	stop      chan struct{} // closed by Close: ends the balancer
	wg        sync.WaitGroup
	closeOnce sync.Once
	closeErr  error
	// noFlushOnClose makes Close leave the store unflushed, as a crash
	// would (tests).
	noFlushOnClose bool
}

// Start opens the node's storage, listens on its raft port and starts its
// groups.
func Start(cfg Config) (*Node, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	// Every line of this node, its groups' and raft's own, names the node.
	cfg.Logger = cfg.Logger.With("node", cfg.NodeID)
	if cfg.BatchCommandsMax > fsm.BatchCommandsMax {
		return nil, fmt.Errorf("raftnode: batch of %d commands exceeds the fsm limit %d", cfg.BatchCommandsMax, fsm.BatchCommandsMax)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("raftnode: data dir: %w", err)
	}
	peers, err := initialPeers(cfg)
	if err != nil {
		return nil, err
	}
	db, err := fsm.OpenDB(filepath.Join(cfg.DataDir, "state"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "raft"), 0o755); err != nil {
		db.Close()
		return nil, fmt.Errorf("raftnode: data dir: %w", err)
	}
	rlog, err := openNodeLogChecked(nodeLogPath(cfg.DataDir), unseal)
	if err != nil {
		db.Close()
		return nil, err
	}
	closeStores := func() {
		rlog.close()
		db.Close()
	}
	ln := cfg.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.RaftAddr)
	}
	if err != nil {
		closeStores()
		return nil, fmt.Errorf("raftnode: listen on %s: %w", cfg.RaftAddr, err)
	}
	mux, err := cfg.newMux(ln)
	if err != nil {
		ln.Close()
		closeStores()
		return nil, err
	}
	beatLayer, err := mux.layer(beatGroupID)
	if err != nil {
		ln.Close()
		closeStores()
		return nil, err
	}
	appendLayer, err := mux.layer(appendGroupID)
	if err != nil {
		ln.Close()
		closeStores()
		return nil, err
	}
	n := &Node{cfg: cfg, db: db, log: rlog, mux: mux, muxDone: make(chan struct{}), stop: make(chan struct{})}
	n.beats = newBeatCoalescer(beatLayer, cfg.HeartbeatTimeout/10, max(cfg.HeartbeatTimeout, beatTimeoutMin))
	n.mu.groups = map[uint32]*Group{}
	n.peers.Store(peers)
	// Before Serve: the Mux reads it without a lock.
	mux.configs = n.configOf
	if n.metrics, err = newNodeMetrics(cfg.Metrics, n); err != nil {
		n.beats.close()
		ln.Close()
		closeStores()
		return nil, err
	}
	rlog.observe = n.metrics.observeLogCommit
	rlog.logFloor = func(keys, copied uint64) {
		cfg.Logger.Info(LogFloorMovedMsg, "keys", keys, "copied_since_start", copied)
	}
	rlog.observeClean = func(step string, took time.Duration, err error) {
		n.metrics.observeClean(step, took, err)
		switch {
		case err != nil && step == cleanRoom:
			cfg.Logger.Error("the raft log's room stopped; its commits cost more while the log grows", "err", err)
		case err != nil:
			cfg.Logger.Error("the raft log's cleaner stopped; it tries again after the next compaction", "step", step, "err", err)
		}
	}
	n.appends = newAppendSender(appendLayer, transportTimeout, n.appendReceiver, n.metrics.observeAppendFrame)
	go func() {
		defer close(n.muxDone)
		n.mux.Serve()
	}()
	hosted := n.initialGroups()
	machines, err := loadMachines(db, hosted)
	if err != nil {
		n.Close()
		return nil, err
	}
	for i, h := range hosted {
		g, err := startGroup(n, h.id, h.bootstrap, machines[i])
		if err != nil {
			n.Close()
			return nil, err
		}
		n.mu.groups[h.id] = g
	}
	if cfg.BalanceInterval > 0 {
		n.wg.Add(1)
		go n.runBalancer()
	}
	return n, nil
}

// loadMachines loads the state machines of the groups a starting node
// hosts, several at once: loading a group's ledger from Pebble is most of a
// restart, and groups share nothing but the store, which serves concurrent
// readers.
func loadMachines(db *pebble.DB, hosted []hosting) ([]*fsm.Machine, error) {
	out := make([]*fsm.Machine, len(hosted))
	errs := make([]error, len(hosted))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, h := range hosted {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = fsm.NewMachine(db, h.id)
		}()
	}
	wg.Wait()
	return out, errors.Join(errs...)
}

// newMux returns the raft port's Mux, with TLS if configured. A peer dialed
// through a proxy (RaftDial) must still present a certificate for its
// advertised host, so dial targets map back to RaftAddr's host.
func (c *Config) newMux(ln net.Listener) (*Mux, error) {
	if c.TLS == nil {
		return NewMux(ln, c.ClusterID, c.Logger), nil
	}
	t := *c.TLS
	if t.ServerName == nil {
		names := map[string]string{}
		for _, p := range c.Peers {
			if host, _, err := net.SplitHostPort(p.RaftAddr); err == nil {
				names[p.RaftTarget()] = host
			}
		}
		t.ServerName = func(addr string) string { return names[addr] }
	}
	if t.Logger == nil {
		t.Logger = c.Logger
	}
	return NewTLSMux(ln, c.ClusterID, c.Logger, t)
}

type hosting struct {
	id        uint32
	bootstrap []string // the initial configuration, for a first start
}

// initialGroups decides what this node hosts at start: a group whose raft
// state is on disk (it was placed here, or added later), and a group the
// initial placement names that has never run here. A group removed from
// this node (membership.go leaves a tombstone) is not hosted again.
func (n *Node) initialGroups() []hosting {
	var out []hosting
	for id, replicas := range n.cfg.Groups {
		dir := n.groupDir(id)
		switch {
		case exists(filepath.Join(dir, tombstoneFile)):
		case exists(filepath.Join(dir, "raft.db")), exists(filepath.Join(dir, incarnationFile)):
			// An incarnation without raft state: HostGroup was cut short
			// after choosing it; the replica still waits for its leader.
			out = append(out, hosting{id: id})
		case slices.Contains(replicas, n.cfg.NodeID):
			out = append(out, hosting{id: id, bootstrap: replicas})
		}
	}
	slices.SortFunc(out, func(a, b hosting) int { return int(a.id) - int(b.id) })
	return out
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (n *Node) groupDir(id uint32) string { return groupDirOf(n.cfg.DataDir, id) }

// nodeLogPath is the node log's file under a data directory.
func nodeLogPath(dataDir string) string { return filepath.Join(dataDir, "raft", "log.db") }

// groupDirOf is where a group's raft files live under a data directory.
func groupDirOf(dataDir string, id uint32) string {
	return filepath.Join(dataDir, "raft", fmt.Sprintf("group-%d", id))
}

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Group returns this node's replica of a group.
func (n *Node) Group(id uint32) (*Group, error) {
	n.mu.Lock()
	g, ok := n.mu.groups[id]
	n.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("%w: group %d", ErrUnknownGroup, id)
	}
	return g, nil
}

// Groups returns the hosted groups in id order.
func (n *Node) Groups() []*Group {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]*Group, 0, len(n.mu.groups))
	for _, g := range n.mu.groups {
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b *Group) int { return int(a.id) - int(b.id) })
	return out
}

// Close stops every group (failing queued proposals), shuts raft down,
// closes the port and the database. Safe to call twice.
func (n *Node) Close() error {
	n.closeOnce.Do(func() {
		var errs []error
		close(n.stop)
		n.wg.Wait()
		n.mu.Lock()
		n.mu.closed = true
		for _, g := range n.mu.groups {
			errs = append(errs, g.close())
			// Raft stopped applying: the next start replays only what
			// came after this checkpoint (a crash replays more).
			if !n.noFlushOnClose {
				errs = append(errs, g.machine.Checkpoint())
			}
		}
		n.mu.Unlock()
		n.beats.close()
		n.appends.close()
		errs = append(errs, n.mux.Close())
		<-n.muxDone
		errs = append(errs, n.log.close())
		if n.noFlushOnClose {
			errs = append(errs, n.db.Close())
		} else {
			errs = append(errs, fsm.CloseDB(n.db))
		}
		n.metrics.unregister()
		n.closeErr = errors.Join(errs...)
	})
	return n.closeErr
}

// appendReceiver is the local replica of group that answers appends
// (append.go): the one that answers its heartbeats. nil if none.
func (n *Node) appendReceiver(group uint32) appendReceiver {
	if g, ok := n.beats.receiver(group).(*Group); ok {
		return g
	}
	return nil
}
