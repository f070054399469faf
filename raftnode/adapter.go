package raftnode

import (
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/fsm"
)

// adapter implements raft.BatchingFSM over an fsm.Machine; fsm itself does
// not import raft. After every apply or restore it wakes the group's
// watchers (applied.go).
type adapter struct {
	m       *fsm.Machine
	applied *appliedSignal
	metrics *groupMetrics
	log     *slog.Logger
	// checkpoint wakes the group's checkpointer (checkpointer.go).
	checkpoint chan<- struct{}
	// entries and at are ApplyBatch's scratch, reused: raft calls the
	// FSM from one goroutine.
	entries []fsm.Entry
	at      []int
	out     []any
	// raft is the group's raft, once started: ApplyBatch asks it whether
	// this replica leads (answered).
	raft *atomic.Pointer[raft.Raft]
}

var _ raft.BatchingFSM = (*adapter)(nil)

// Apply applies one committed command entry.
func (a *adapter) Apply(l *raft.Log) any {
	defer a.applied.publish()
	defer a.checkpointIfDue()
	return a.m.ApplyEntry(l.Index, l.Data)
}

// checkpointIfDue wakes the checkpointer once the state machine's overlay
// is full (fsm.Machine.CheckpointDue); one already awake or woken takes it.
func (a *adapter) checkpointIfDue() {
	if a.m.CheckpointDue() {
		select {
		case a.checkpoint <- struct{}{}:
		default:
		}
	}
}

// ApplyBatch applies committed entries in order; configuration entries need
// no state here. The command entries go to the FSM together, so that under
// load one Pebble batch and commit serve many entries instead of one each.
func (a *adapter) ApplyBatch(logs []*raft.Log) []any {
	// Raft reads the responses before it calls ApplyBatch again (its FSM
	// goroutine hands each to its future, if any): out is reused.
	out := slices.Grow(a.out[:0], len(logs))[:len(logs)]
	clear(out)
	a.out = out
	entries, at := a.entries[:0], a.at[:0]
	for i, l := range logs {
		if l.Type == raft.LogCommand {
			entries = append(entries, fsm.Entry{Index: l.Index, Data: l.Data})
			at = append(at, i)
		}
	}
	start := time.Now()
	if a.answered() {
		results := a.m.ApplyEntries(entries)
		applied, commands := 0, 0
		for j, res := range results {
			if res != nil {
				// A pointer into results: boxing the slice itself
				// would allocate (awaitCommits reads it back).
				out[at[j]] = &results[j]
				applied, commands = applied+1, commands+len(res)
			}
		}
		a.metrics.observeApply(time.Since(start), applied, commands)
	} else {
		applied, commands := a.m.ApplyEntriesUnanswered(entries)
		a.metrics.observeApply(time.Since(start), applied, commands)
	}
	clear(entries) // raft's data is not ours to keep
	a.entries, a.at = entries[:0], at[:0]
	a.checkpointIfDue()
	a.applied.publish()
	return out
}

// answered reports whether anyone may read the results of the entries
// ApplyBatch applies now: only a leader's proposer waits for results
// (proposer.go). A follower's are built only to be recorded for
// exactly-once (fsm.Machine.ApplyEntriesUnanswered). A leader that steps
// down fails the proposals it had in flight (raft answers their futures
// ErrLeadershipLost), so results missed in the moment between its state
// changing and that reach nobody waiting; a future that did get the
// response of an unanswered entry finds no results, and its callers learn
// that the outcome is unknown (awaitCommits) and retry with the same
// request_id.
func (a *adapter) answered() bool {
	r := a.raft.Load()
	return r == nil || r.State() == raft.Leader
}

// Snapshot makes the state as applied so far durable in Pebble (a
// checkpoint), so that raft may drop the log below the snapshot's index.
// It runs on raft's FSM goroutine, between applies, so the checkpoint
// holds exactly the snapshot's index. The snapshot itself holds no data:
// lazySnapshots streams the group's state when raft sends it
// (snapshots.go).
func (a *adapter) Snapshot() (raft.FSMSnapshot, error) {
	if err := a.m.Checkpoint(); err != nil {
		return nil, fmt.Errorf("raftnode: checkpoint before snapshot: %w", err)
	}
	return indexOnly{}, nil
}

// Restore replaces the group's state with a snapshot from the leader (raft
// restores none on start: NoSnapshotRestoreOnStart). The line it logs is
// what the fault harness counts installs by (jepsen/runner).
func (a *adapter) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	defer a.applied.publish() // the applied index jumped
	from := a.m.Applied()
	if err := a.m.Restore(rc); err != nil {
		return err
	}
	a.metrics.snapshotInstalls.Inc()
	a.log.Info(SnapshotInstalledMsg, "from_index", from, "to_index", a.m.Applied())
	return nil
}

// SnapshotInstalledMsg is the message of the log line a replica writes
// when it installed a snapshot from its leader.
const SnapshotInstalledMsg = "installed a snapshot from the leader"

// indexOnly is a snapshot kept as its metadata only (snapshots.go).
type indexOnly struct{}

// Persist writes no data: the sink's metadata is the snapshot.
func (indexOnly) Persist(sink raft.SnapshotSink) error { return sink.Close() }

func (indexOnly) Release() {}
