package raftnode

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Metrics. Every node registers its metrics with its own registry
// (Config.Metrics), never the global default: `seatd dev` runs three nodes in
// one process, and tests start many. Labels stay bounded: group, follower
// (a node id), op, code and reason take a few values each; show and client
// ids never become labels.
//
// Three kinds, by where the number is known:
//   - raft state (term, indexes, leadership, follower lag, log and snapshot
//     sizes) is read when scraped (stateCollector, below), so it costs
//     nothing between scrapes and a dropped group's series vanish with it;
//   - latencies and batch sizes are observed where they happen: the
//     proposer, the FSM adapter, the log store;
//   - ledger outcomes are counted by the leader's proposer from the FSM's
//     Results, after apply and before the caller sees them, so a client that
//     got an answer finds it counted. Each client command is counted once,
//     by the node whose proposer carried it: sum over nodes for the cluster.
//     The FSM itself stays free of metrics.

// Histogram buckets.
var (
	// latencyBuckets: 0.5 ms to 4 s, for commit and apply.
	latencyBuckets = prometheus.ExponentialBuckets(0.0005, 2, 14)
	// storeBuckets: 0.1 ms to 1.6 s, for an fsynced log append.
	storeBuckets = prometheus.ExponentialBuckets(0.0001, 2, 15)
	// countBuckets: 1 to 1024 (batchCommandsDefault), for batch sizes.
	countBuckets = prometheus.ExponentialBuckets(1, 2, 11)
)

// ledgerEvent is one named ledger counter.
type ledgerEvent int

const (
	evHold ledgerEvent = iota
	evConfirm
	evRelease
	evExtend
	evRefund
	evExpired
	evConflict
	evSoldOut
	evQueueJoin
	evQueueLeave
	evShowCreated
	evReplay
	ledgerEvents
)

// ledgerCounters names and explains each ledger counter; README's
// Observability section lists the same.
var ledgerCounters = [ledgerEvents]struct{ name, help string }{
	evHold:        {"holds_total", "Holds granted (CODE_OK answers to Hold, replays excluded)."},
	evConfirm:     {"confirms_total", "Holds confirmed into bookings."},
	evRelease:     {"releases_total", "Holds released by their clients."},
	evExtend:      {"extends_total", "Holds extended."},
	evRefund:      {"refunds_total", "Bookings refunded."},
	evExpired:     {"expired_holds_total", "Holds freed by the leader's Expire entries."},
	evConflict:    {"conflicts_total", "Holds refused because a seat was taken (SEATS_TAKEN)."},
	evSoldOut:     {"sold_out_total", "Best-available holds refused for too few free seats (SOLD_OUT)."},
	evQueueJoin:   {"queue_joins_total", "Best-available holds that joined the show's waiting queue (QUEUED answers)."},
	evQueueLeave:  {"queue_leaves_total", "Waiters that left a waiting queue."},
	evShowCreated: {"shows_created_total", "Shows created."},
	evReplay:      {"replays_total", "Client commands answered with the stored result of an earlier identical request."},
}

// nodeMetrics holds a node's metric vectors, by group.
type nodeMetrics struct {
	reg        prometheus.Registerer
	registered []prometheus.Collector

	leaderChanges    *prometheus.CounterVec
	snapshotInstalls *prometheus.CounterVec
	proposeFailures  *prometheus.CounterVec
	commitLatency    *prometheus.HistogramVec
	batchCommands    *prometheus.HistogramVec
	applyLatency     *prometheus.HistogramVec
	applyEntries     *prometheus.HistogramVec
	applyCommands    *prometheus.HistogramVec
	logStoreLatency  *prometheus.HistogramVec
	logCommitAppends prometheus.Histogram
	logCleanStep     *prometheus.HistogramVec
	logCleanFailures prometheus.Counter
	// appendFrameAppends is by direction; appendSent and appendAnswered
	// are its two children.
	appendFrameAppends         *prometheus.HistogramVec
	appendSent, appendAnswered prometheus.Observer
	checkpointLatency          *prometheus.HistogramVec
	checkpointBytes            *prometheus.CounterVec
	ledger                     [ledgerEvents]*prometheus.CounterVec
	rejections                 *prometheus.CounterVec
}

// newNodeMetrics registers n's metrics with reg (a private registry when
// nil). A name registered twice (two nodes sharing a registry without a
// distinguishing label) fails the start.
func newNodeMetrics(reg prometheus.Registerer, n *Node) (*nodeMetrics, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	m := &nodeMetrics{reg: reg}
	group := []string{"group"}
	m.leaderChanges = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "raft", Name: "leader_changes_total",
		Help: "Times this replica saw a new leader of the group (raft's leader observations)."}, group)
	m.snapshotInstalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "raft", Name: "snapshot_installs_total",
		Help: "Snapshots this replica installed from the group's leader, because it was too far behind for the leader's log (--trailing-logs)."}, group)
	m.proposeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "raft", Name: "proposals_failed_total",
		Help: "Client commands whose proposal failed: not_leader and unavailable were not appended, outcome_unknown may have been."}, []string{"group", "reason"})
	m.commitLatency = histogram("commit_latency_seconds", "Per command proposed on the leader (client commands and Expire): from Propose until its result (proposer queue, append, replication, fsync, apply).", latencyBuckets)
	m.batchCommands = histogram("batch_commands", "Client commands per proposed log entry (group commit).", countBuckets)
	m.applyLatency = histogram("apply_latency_seconds", "Time the state machine took to apply one batch of committed entries handed over by raft.", latencyBuckets)
	m.applyEntries = histogram("apply_batch_entries", "Command entries per batch applied by the state machine.", countBuckets)
	m.applyCommands = histogram("apply_batch_commands", "Client commands per batch applied by the state machine.", countBuckets)
	m.logStoreLatency = histogram("log_store_latency_seconds", "Time to seal, write and fsync one append to the raft log (raft-boltdb), waiting for other groups' appends in the same commit included.", storeBuckets)
	m.logCommitAppends = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "raft", Name: "log_commit_appends",
		Help: "Appends (of any group) written by one commit of the node's raft log: the groups sharing one pair of fsyncs.", Buckets: countBuckets})
	m.logCleanStep = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "raft", Name: "log_clean_step_seconds",
		Help: "Time one step of the node log's cleaner took; appends that arrive meanwhile wait for it. floor: look for the oldest commit with a live entry and write its record if it moved; sweep: delete keys below it; copy: move an idle group's oldest entries forward.", Buckets: storeBuckets}, []string{"step"})
	m.logCleanFailures = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "raft", Name: "log_clean_failures_total",
		Help: "Times the node log's cleaner stopped on an error (logged at ERROR); it tries again after the next compaction, and the log file grows meanwhile."})
	m.appendFrameAppends = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "raft", Name: "append_frame_appends",
		Help: "AppendEntries (of any group) in one frame between two nodes: sent, the requests this node sent a peer; answered, the answers it sent back.", Buckets: countBuckets}, []string{"direction"})
	m.appendSent, m.appendAnswered = m.appendFrameAppends.WithLabelValues("sent"), m.appendFrameAppends.WithLabelValues("answered")
	m.checkpointLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "store", Name: "checkpoint_seconds",
		Help: "Time one checkpoint behind apply took: fold the group's in-memory writes into a table, write and sync it, ingest it into Pebble.", Buckets: latencyBuckets}, group)
	m.checkpointBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "store", Name: "checkpoint_bytes_total",
		Help: "Bytes of the group's state-machine writes that checkpoints behind apply wrote to Pebble (records as held in memory, before they were folded)."}, group)
	for ev, c := range ledgerCounters {
		m.ledger[ev] = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "ledger", Name: c.name,
			Help: c.help + " Counted by the proposing leader."}, group)
	}
	m.rejections = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "ledger", Name: "rejections_total",
		Help: "Client commands answered with a result code other than OK, by command and code. Counted by the proposing leader."}, []string{"group", "op", "code"})

	cs := []prometheus.Collector{m.leaderChanges, m.snapshotInstalls, m.proposeFailures, m.commitLatency, m.batchCommands,
		m.applyLatency, m.applyEntries, m.applyCommands, m.logStoreLatency, m.logCommitAppends, m.logCleanStep, m.logCleanFailures, m.appendFrameAppends, m.rejections,
		m.checkpointLatency, m.checkpointBytes, stateCollector{n}, storeCollector{n}}
	for _, c := range m.ledger {
		cs = append(cs, c)
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			m.unregister()
			return nil, fmt.Errorf("raftnode: register metrics: %w", err)
		}
		m.registered = append(m.registered, c)
	}
	return m, nil
}

// observeAppendFrame records the appends in one append frame (append.go)
// this node sent: requests if sent, else answers.
func (m *nodeMetrics) observeAppendFrame(sent bool, appends int) {
	if sent {
		m.appendSent.Observe(float64(appends))
	} else {
		m.appendAnswered.Observe(float64(appends))
	}
}

// observeLogCommit records the appends one commit of the node log carried.
func (m *nodeMetrics) observeLogCommit(appends int) { m.logCommitAppends.Observe(float64(appends)) }

// observeClean records one step of the node log's cleaner.
func (m *nodeMetrics) observeClean(step string, took time.Duration, err error) {
	m.logCleanStep.WithLabelValues(step).Observe(took.Seconds())
	if err != nil {
		m.logCleanFailures.Inc()
	}
}

func histogram(name, help string, buckets []float64) *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "raft", Name: name, Help: help, Buckets: buckets}, []string{"group"})
}

// unregister removes the node's metrics, so that a node restarted in the
// same process may register again.
func (m *nodeMetrics) unregister() {
	for _, c := range m.registered {
		m.reg.Unregister(c)
	}
	m.registered = nil
}

// forget deletes a dropped group's series.
func (m *nodeMetrics) forget(id uint32) {
	l := prometheus.Labels{"group": groupLabel(id)}
	for _, v := range []interface{ DeletePartialMatch(prometheus.Labels) int }{m.leaderChanges, m.snapshotInstalls, m.proposeFailures,
		m.commitLatency, m.batchCommands, m.applyLatency, m.applyEntries, m.applyCommands, m.logStoreLatency, m.rejections} {
		v.DeletePartialMatch(l)
	}
	for _, v := range m.ledger {
		v.DeletePartialMatch(l)
	}
}

func groupLabel(id uint32) string { return strconv.FormatUint(uint64(id), 10) }

// groupMetrics is one group's share of the node's metrics, with the group
// label bound once so the hot paths do not hash labels.
type groupMetrics struct {
	leaderChanges     prometheus.Counter
	snapshotInstalls  prometheus.Counter
	proposeFailures   *prometheus.CounterVec // by reason
	commitLatency     prometheus.Observer
	batchCommands     prometheus.Observer
	applyLatency      prometheus.Observer
	applyEntries      prometheus.Observer
	applyCommands     prometheus.Observer
	logStoreLatency   prometheus.Observer
	checkpointLatency prometheus.Observer
	checkpointBytes   prometheus.Counter
	ledger            [ledgerEvents]prometheus.Counter
	rejections        *prometheus.CounterVec // by op and code

	// Read when scraped; set by openRaft before the group is published in
	// the node's group map, and not changed after.
	logPath   string
	snaps     *lazySnapshots
	followers *followerProgress
}

func (m *nodeMetrics) group(id uint32) *groupMetrics {
	l := groupLabel(id)
	g := &groupMetrics{
		leaderChanges:     m.leaderChanges.WithLabelValues(l),
		snapshotInstalls:  m.snapshotInstalls.WithLabelValues(l),
		proposeFailures:   m.proposeFailures.MustCurryWith(prometheus.Labels{"group": l}),
		commitLatency:     m.commitLatency.WithLabelValues(l),
		batchCommands:     m.batchCommands.WithLabelValues(l),
		applyLatency:      m.applyLatency.WithLabelValues(l),
		applyEntries:      m.applyEntries.WithLabelValues(l),
		applyCommands:     m.applyCommands.WithLabelValues(l),
		logStoreLatency:   m.logStoreLatency.WithLabelValues(l),
		checkpointLatency: m.checkpointLatency.WithLabelValues(l),
		checkpointBytes:   m.checkpointBytes.WithLabelValues(l),
		rejections:        m.rejections.MustCurryWith(prometheus.Labels{"group": l}),
		followers:         newFollowerProgress(),
	}
	for ev, v := range m.ledger {
		g.ledger[ev] = v.WithLabelValues(l)
	}
	return g
}

// observeCommitted records a proposed entry's end: its commands' latency and
// outcomes, or their failure.
func (m *groupMetrics) observeCommitted(batch []*proposal, results []*ledgerpb.Result, err error) {
	if err != nil {
		m.proposeFailures.WithLabelValues(failureReason(err)).Add(float64(len(batch)))
		return
	}
	now := time.Now()
	for i, p := range batch {
		m.commitLatency.Observe(now.Sub(p.start).Seconds())
		m.countResult(p.cmd, results[i])
	}
}

// observeFailed records proposals failed before they reached raft.
func (m *groupMetrics) observeFailed(n int, err error) {
	m.proposeFailures.WithLabelValues(failureReason(err)).Add(float64(n))
}

func failureReason(err error) string {
	switch {
	case errors.Is(err, ErrNotLeader):
		return "not_leader"
	case errors.Is(err, ErrUnavailable):
		return "unavailable"
	default:
		return "outcome_unknown"
	}
}

// countResult counts one client command's result. A replay is counted as a
// replay only: its effect was counted when it first happened.
func (m *groupMetrics) countResult(cmd *ledgerpb.Command, res *ledgerpb.Result) {
	if res == nil {
		return
	}
	if res.Replayed {
		m.ledger[evReplay].Inc()
		return
	}
	op := opName(cmd)
	if res.Code != ledgerpb.Code_CODE_OK {
		m.rejections.WithLabelValues(op, strings.TrimPrefix(res.Code.String(), "CODE_")).Inc()
		switch res.Code {
		case ledgerpb.Code_CODE_SEATS_TAKEN:
			m.ledger[evConflict].Inc()
		case ledgerpb.Code_CODE_SOLD_OUT:
			m.ledger[evSoldOut].Inc()
		case ledgerpb.Code_CODE_QUEUED:
			m.ledger[evQueueJoin].Inc()
		}
		return
	}
	switch cmd.Op.(type) {
	case *ledgerpb.Command_Hold:
		m.ledger[evHold].Inc()
	case *ledgerpb.Command_Confirm:
		m.ledger[evConfirm].Inc()
	case *ledgerpb.Command_Release:
		m.ledger[evRelease].Inc()
	case *ledgerpb.Command_Extend:
		m.ledger[evExtend].Inc()
	case *ledgerpb.Command_Refund:
		m.ledger[evRefund].Inc()
	case *ledgerpb.Command_LeaveQueue:
		m.ledger[evQueueLeave].Inc()
	case *ledgerpb.Command_CreateShow:
		m.ledger[evShowCreated].Inc()
	case *ledgerpb.Command_Expire:
		m.ledger[evExpired].Add(float64(res.Expired))
	}
}

// opName is the op label of a command: a fixed set, "other" for commands
// added later and not named here yet.
func opName(cmd *ledgerpb.Command) string {
	switch cmd.Op.(type) {
	case *ledgerpb.Command_Hold:
		return "hold"
	case *ledgerpb.Command_Confirm:
		return "confirm"
	case *ledgerpb.Command_Release:
		return "release"
	case *ledgerpb.Command_Extend:
		return "extend"
	case *ledgerpb.Command_Refund:
		return "refund"
	case *ledgerpb.Command_LeaveQueue:
		return "leave_queue"
	case *ledgerpb.Command_CreateShow:
		return "create_show"
	case *ledgerpb.Command_Expire:
		return "expire"
	case *ledgerpb.Command_Catalog:
		return "catalog"
	default:
		return "other"
	}
}

// observeApply records one ApplyBatch call that applied entries (those
// skipped as already applied are not counted) of commands in all.
func (m *groupMetrics) observeApply(took time.Duration, entries, commands int) {
	if entries == 0 {
		return
	}
	m.applyLatency.Observe(took.Seconds())
	m.applyEntries.Observe(float64(entries))
	m.applyCommands.Observe(float64(commands))
}

// timedLogs times appends to the raft log: raft-boltdb fsyncs each one, so
// this is the disk's share of commit latency.
type timedLogs struct {
	raft.LogStore
	seconds prometheus.Observer
}

// IsMonotonic passes the wrapped store's answer on (raft asks the log
// cache, which asks this).
func (t timedLogs) IsMonotonic() bool {
	m, ok := t.LogStore.(raft.MonotonicLogStore)
	return ok && m.IsMonotonic()
}

// StoreLog times one append.
func (t timedLogs) StoreLog(l *raft.Log) error {
	start := time.Now()
	err := t.LogStore.StoreLog(l)
	t.seconds.Observe(time.Since(start).Seconds())
	return err
}

// StoreLogs times one append of several entries.
func (t timedLogs) StoreLogs(logs []*raft.Log) error {
	start := time.Now()
	err := t.LogStore.StoreLogs(logs)
	t.seconds.Observe(time.Since(start).Seconds())
	return err
}
