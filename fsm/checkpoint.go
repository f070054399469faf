package fsm

// Checkpoints: how a group's overlay (overlay.go) reaches Pebble.
//
// Between checkpoints apply writes nothing of the group to Pebble. A
// checkpoint writes the overlay, folded to one sorted run with the meta
// record (applied index, clock) among its records, as one table, and
// ingests it: Pebble ingests a table atomically, and durably (the table is
// synced and so is the manifest edit that adds it), so after a crash
// Pebble holds exactly some checkpoint's state, at an entry boundary, with
// its applied index. The overlay's range deletions become the table's,
// which hide only older data: a table's range deletions never hide its
// own points.
//
// None of the group's keys are in the memtables (the group writes to
// Pebble only by ingesting, and the writes of DropGroup, ResetNodes and
// Restore flush themselves), so the table does not overlap them and is
// ingested into the LSM itself. A table that did overlap would be ingested
// as a memtable, durable only once flushed (there is no WAL), so then the
// checkpoint flushes.
//
// Crash safety. Let C be the index of the group's last checkpoint and S
// the index of raft's last snapshot. Every raft snapshot checkpoints
// before it is written out (Snapshot) and a Restore ingests its state
// durably, so C >= S. After a crash Pebble holds the checkpoint at C;
// raft (NoSnapshotRestoreOnStart) starts from S without restoring it and
// applies its log from S+1, which it kept (it drops entries only below a
// snapshot, keeping TrailingLogs more); the machine skips every entry at
// or below C and applies the rest as before the crash, deterministically.
// A crash during a checkpoint leaves the previous one: the table is not in
// Pebble until the ingestion's manifest edit is.
//
// Checkpoints happen at every raft snapshot, when the overlay passes
// overlayBytesMax (raft may snapshot rarely: see raftnode's
// SnapshotThreshold), and at Checkpoint (a closing node). Restore drops
// the overlay: the restored state replaces it, once a checkpoint under
// way has ended.
//
// Behind apply. A full overlay is checkpointed by CheckpointBehind, which
// the machine's owner calls on a goroutine of its own when CheckpointDue
// says so (raftnode's checkpointer; fsm itself starts no goroutine): it
// freezes the overlay, apply goes on in a new overlay over it
// (layers.below: readers see both, newest first, over Pebble), and it
// folds, writes and ingests the frozen one, then drops it from under the
// new one. Its table holds the state at the commit it froze, an entry
// boundary, with that commit's meta record: the same prefix of the log a
// checkpoint on the apply goroutine would have written, so crash safety is
// as above. Checkpoints still run one at a time (checkpointMu): a raft
// snapshot's, a Restore and the next freeze wait for one under way, and
// past twice its bound apply checkpoints in line (checkpointIfDue).

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"

	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
)

// Checkpoint writes the group's state as of its last commit to Pebble,
// durably. It folds and writes the table without the machine's lock, so
// readers and apply go on meanwhile, and holds the lock only to ingest the
// table and start a new overlay: a loaded group's table takes tens of
// milliseconds (BenchmarkCheckpointFull). On the apply goroutine (raft's
// Snapshot, a full overlay) the state written is the latest. Elsewhere (a
// backup's Snapshot) apply may have committed more meanwhile: then Pebble
// holds a prefix of the overlay, which reads the same, and the overlay
// stays for the next checkpoint. Checkpoints run one at a time.
func (m *Machine) Checkpoint() error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	m.mu.RLock()
	l, bytes := m.pubLayers(), m.ov.bytes()
	l.acquire() // a Restore in between may retire it: it stays readable
	m.mu.RUnlock()
	defer l.release()
	if len(l.runs) == 0 {
		return nil
	}
	path, err := m.foldTable(l)
	if path != "" {
		defer os.Remove(path) // Pebble links or copies what it ingests
	}
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ov.a != l.ar {
		return nil // a Restore replaced the state: the table is stale
	}
	if err := m.ingestCheckpoint(path); err != nil {
		return err
	}
	if m.ov.bytes() == bytes {
		m.replaceOverlay()
	}
	return nil
}

// CheckpointDue reports whether a commit found the overlay past its bound
// (overlayBytesMax, or SetCheckpointBytes's): the machine's owner should
// call CheckpointBehind, on a goroutine of its own so that apply goes on
// meanwhile (raftnode's checkpointer).
func (m *Machine) CheckpointDue() bool { return m.checkpointDue.Load() }

// CheckpointBehind checkpoints a full overlay without holding up apply:
// it freezes the overlay, starts a new one over it for the writes that
// follow (layers.below: readers see both, newest first, over Pebble),
// then folds, writes and ingests the frozen one and drops it from under
// the new one. The table holds the state at the commit it froze, an entry
// boundary, as any checkpoint's. It returns the size of the overlay it
// wrote, 0 when none was due (a raft snapshot's checkpoint came first).
// Checkpoints run one at a time (checkpointMu), so a group holds at most
// two overlays. A failure to write or ingest panics, as in apply: the
// state it drops from memory must reach Pebble.
func (m *Machine) CheckpointBehind() int {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	frozen := m.freeze()
	if frozen == nil {
		return 0
	}
	m.checkpointFrozen(frozen)
	return frozen.ar.bytes
}

// checkpointIfDue, on the apply goroutine without the lock, checkpoints in
// line once the overlay is past twice its bound: an owner that checkpoints
// behind apply keeps it far below that, one that does not (or falls
// behind) gets apply's back pressure instead of an overlay that grows
// without end.
func (m *Machine) checkpointIfDue() {
	if m.checkpointInLine {
		m.checkpointInLine = false
		m.CheckpointBehind()
	}
}

// checkpointBound is the overlay size past which a commit finds a
// checkpoint due.
func (m *Machine) checkpointBound() int {
	if m.checkpointBytes > 0 {
		return min(m.checkpointBytes, overlayBytesMax)
	}
	return overlayBytesMax
}

// freeze starts a new overlay over the current one, if that is past its
// bound, and returns the current one, sealed, for checkpointFrozen; nil
// when none is due.
func (m *Machine) freeze() *layers {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.checkpointDue.Store(false)
	if m.ov.bytes() < m.checkpointBound() {
		return nil
	}
	m.ov.seal()
	frozen := m.ov.view()
	m.ov = newOverlay(&m.chunks)
	m.ov.below = &frozen
	return &frozen
}

// checkpointFrozen checkpoints frozen, an overlay of committed entries up
// to a commit's, under the new overlay (freeze): as Checkpoint, but the new
// overlay stays and loses only its below.
func (m *Machine) checkpointFrozen(frozen *layers) {
	path, err := m.foldTable(*frozen)
	if path != "" {
		defer os.Remove(path) // Pebble links or copies what it ingests
	}
	must(err, "checkpoint behind apply")
	m.ingestFrozen(frozen, path)
}

// ingestFrozen ingests the table of frozen and drops it from under the
// overlay, holding mu.
func (m *Machine) ingestFrozen(frozen *layers, path string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ov.below != frozen {
		violated("the overlay under a checkpoint changed")
	}
	must(m.ingestCheckpoint(path), "checkpoint behind apply")
	// Readers that took frozen keep it (acquire) until they close.
	m.ov.below = nil
	frozen.ar.retire()
}

// foldTable folds layers to one run and writes it as a table (in the
// scratch directory); it returns the table's path once the file exists,
// even with an error. l has no overlay below it.
func (m *Machine) foldTable(l layers) (string, error) {
	if l.below != nil {
		violated("a checkpoint of an overlay over another")
	}
	// Not from the arena: a checkpoint may run beside apply, which alone
	// allocates there.
	folded := foldRuns(l.a, l.runs)
	return m.writeCheckpointTable(l.a, &folded)
}

// ingestCheckpoint ingests a checkpoint's table, and flushes if it
// overlapped the memtables (then Pebble took it as a memtable, durable
// only once flushed).
func (m *Machine) ingestCheckpoint(path string) error {
	stats, err := m.db.IngestWithStats(context.Background(), []string{path})
	if err != nil {
		return fmt.Errorf("fsm: checkpoint group %d: ingest: %w", m.group, err)
	}
	if stats.MemtableOverlappingFiles > 0 {
		m.checkpointFlushes++
		if err := m.db.Flush(); err != nil {
			return fmt.Errorf("fsm: checkpoint group %d: flush: %w", m.group, err)
		}
	}
	m.checkpoints++
	return nil
}

// writeCheckpointTable writes a folded run as a table in the scratch
// directory: its range deletions, made disjoint, and its points in key
// order. It returns the table's path once the file exists, even with an
// error.
func (m *Machine) writeCheckpointTable(a chunks, r *run) (string, error) {
	t, err := m.newScratchTable(checkpointTablePattern)
	if err != nil {
		return t.path, fmt.Errorf("fsm: checkpoint: %w", err)
	}
	for _, d := range disjointSpans(a, r.dels) {
		if err := t.w.DeleteRange(d[0], d[1]); err != nil {
			t.abandon()
			return t.path, fmt.Errorf("fsm: checkpoint: %w", err)
		}
	}
	for _, off := range r.points {
		kind, k, v := a.rec(off)
		if kind == recSet {
			err = t.w.Set(k, v)
		} else {
			err = t.w.Delete(k)
		}
		if err != nil {
			t.abandon()
			return t.path, fmt.Errorf("fsm: checkpoint: %w", err)
		}
	}
	if err := t.w.Close(); err != nil {
		return t.path, fmt.Errorf("fsm: checkpoint: write table: %w", err)
	}
	return t.path, nil
}

// disjointSpans returns the union of range deletions as sorted disjoint
// spans, as a table takes them.
func disjointSpans(a chunks, dels []uint32) [][2][]byte {
	spans := make([][2][]byte, 0, len(dels))
	for _, d := range dels {
		_, s, e := a.rec(d)
		spans = append(spans, [2][]byte{s, e})
	}
	slices.SortFunc(spans, func(x, y [2][]byte) int { return bytes.Compare(x[0], y[0]) })
	out := spans[:0]
	for _, s := range spans {
		if n := len(out); n > 0 && bytes.Compare(s[0], out[n-1][1]) <= 0 {
			if bytes.Compare(s[1], out[n-1][1]) > 0 {
				out[n-1][1] = s[1]
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// checkpointTablePattern names checkpoints' tables (os.CreateTemp's
// pattern).
const checkpointTablePattern = "checkpoint-*.sst"

// replaceOverlay starts an empty overlay, holding mu, and retires the old
// one's arena: its chunks return to the pool once no view reads them.
func (m *Machine) replaceOverlay() {
	old := m.ov.a
	m.ov = newOverlay(&m.chunks)
	old.retire()
}

// tableOptions are the options of the tables the machine writes for Pebble
// to ingest: the store's format, and the bloom filters its flushes would
// give them (OpenDB), so point reads that find nothing skip the table.
func (m *Machine) tableOptions() sstable.WriterOptions {
	return sstable.WriterOptions{TableFormat: m.db.TableFormat(), FilterPolicy: bloom.FilterPolicy(bloomBitsPerKey)}
}
