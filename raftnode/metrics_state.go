package raftnode

import (
	"os"
	"sync"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
)

// Raft state is read when scraped rather than tracked: every value here is
// an atomic read on raft or a stat of a file, and a group dropped from the
// node simply stops being reported.

func stateDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("seatledger_raft_"+name, help, append([]string{"group"}, labels...), nil)
}

var (
	descIsLeader      = stateDesc("is_leader", "1 if this replica leads the group, else 0.")
	descTerm          = stateDesc("term", "The group's current raft term as this replica knows it.")
	descLastIndex     = stateDesc("last_index", "Index of the last entry in this replica's log (or snapshot).")
	descCommitIndex   = stateDesc("commit_index", "Highest index this replica knows to be committed.")
	descAppliedIndex  = stateDesc("applied_index", "Highest index raft has handed to this replica's state machine.")
	descLogBytes      = stateDesc("log_bytes", "Size of the node's raft log file, which holds every hosted group's log (raft/log.db, raft-boltdb; bbolt reuses freed pages, so it does not shrink after compaction). The same value for each group of a node.")
	descSnapshotBytes = stateDesc("snapshot_bytes", "Size of the group's newest raft snapshot file on this node: 0 before the first, and for a snapshot the group took itself, which keeps only its index (its state is read from the store when sent); a snapshot received from the leader or seeded by seatd restore holds the group's state.")
	descSnapshotIndex = stateDesc("snapshot_index", "Last log index covered by the group's newest snapshot on this node.")
	descQueueWaiting  = prometheus.NewDesc("seatledger_ledger_queue_waiting",
		"Waiting-queue entries of every show of the group, as this replica has applied them.", []string{"group"}, nil)
	descHoldsLive = prometheus.NewDesc("seatledger_ledger_holds_live",
		"Live holds of the group (holds past their expiry count until the leader's Expire entry ends them), as this replica has applied them.", []string{"group"}, nil)
	descQueueSeats = prometheus.NewDesc("seatledger_ledger_queue_seats",
		"Seats the group's waiting-queue entries ask for, as this replica has applied them.", []string{"group"}, nil)
	descFollowerLag = stateDesc("follower_lag_entries",
		"On the leader only: its last index minus the follower's last log index from the follower's latest AppendEntries answer (heartbeats included); the whole log if it never answered this node.", "follower")
)

// stateCollector reports every hosted group's raft state.
type stateCollector struct{ n *Node }

// Describe sends the state descriptors.
func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIsLeader, descTerm, descLastIndex, descCommitIndex, descAppliedIndex,
		descLogBytes, descSnapshotBytes, descSnapshotIndex, descFollowerLag, descQueueWaiting, descQueueSeats, descHoldsLive} {
		ch <- d
	}
}

// Collect reads each group's state.
func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	for _, g := range c.n.Groups() {
		g.collectState(ch)
	}
}

func (g *Group) collectState(ch chan<- prometheus.Metric) {
	id := groupLabel(g.id)
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append([]string{id}, labels...)...)
	}
	r := g.raft
	leader := r.State() == raft.Leader
	gauge(descIsLeader, boolGauge(leader))
	gauge(descTerm, float64(r.CurrentTerm()))
	last := r.LastIndex()
	gauge(descLastIndex, float64(last))
	gauge(descCommitIndex, float64(r.CommitIndex()))
	gauge(descAppliedIndex, float64(r.AppliedIndex()))
	if fi, err := os.Stat(g.metrics.logPath); err == nil {
		gauge(descLogBytes, float64(fi.Size()))
	}
	index, size := g.metrics.snaps.Newest() // no directory read
	gauge(descSnapshotBytes, float64(size))
	gauge(descSnapshotIndex, float64(index))
	gauge(descHoldsLive, float64(g.machine.LiveHolds()))
	if v, err := g.machine.View(); err == nil {
		waiting, seats, err := v.QueueTotals()
		v.Close()
		if err == nil {
			gauge(descQueueWaiting, float64(waiting))
			gauge(descQueueSeats, float64(seats))
		}
	}
	if !leader {
		return
	}
	cfg := r.GetConfiguration()
	if cfg.Error() != nil {
		return
	}
	for _, s := range cfg.Configuration().Servers {
		if s.ID == g.self {
			continue
		}
		has := g.metrics.followers.lastIndex(s.ID)
		gauge(descFollowerLag, float64(last-min(has, last)), nodeOf(s.ID))
	}
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// followerProgress is, per follower, the last log index the follower
// reported in its latest answer to this node's AppendEntries. hashicorp/raft
// keeps each follower's match index private; its heartbeats go on while it
// pipelines, so their answers keep this fresh (raftseam.go, 2 and 5).
type followerProgress struct {
	mu struct {
		sync.Mutex
		last map[raft.ServerID]uint64
	}
}

func newFollowerProgress() *followerProgress {
	p := &followerProgress{}
	p.mu.last = map[raft.ServerID]uint64{}
	return p
}

func (p *followerProgress) record(id raft.ServerID, index uint64) {
	p.mu.Lock()
	p.mu.last[id] = index
	p.mu.Unlock()
}

func (p *followerProgress) lastIndex(id raft.ServerID) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mu.last[id]
}

// progressTransport is raft's network transport, watching AppendEntries
// answers for followerProgress. Raft sends every append through
// AppendEntries: the group's transport refuses pipelines
// (beatTransport.AppendEntriesPipeline).
type progressTransport struct {
	*raft.NetworkTransport
	progress *followerProgress
	// consumer is the transport's incoming RPCs, relayed (relay.go).
	consumer <-chan raft.RPC
}

// Consumer is the channel of incoming RPCs raft serves.
func (t progressTransport) Consumer() <-chan raft.RPC { return t.consumer }

// AppendEntries sends one AppendEntries RPC and notes the follower's log end.
func (t progressTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.NetworkTransport.AppendEntries(id, target, args, resp)
	t.progress.note(id, args, resp, err)
	return err
}

// note records the follower's log end from an AppendEntries answer
// (heartbeats included: heartbeat_transport.go).
func (p *followerProgress) note(id raft.ServerID, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse, err error) {
	if last, ok := answeredLastIndex(args, resp, err); ok {
		p.record(id, last)
	}
}
