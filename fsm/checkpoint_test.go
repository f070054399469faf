package fsm

// This file proves that a group's state reaches Pebble only at
// checkpoints, and whole: a checkpoint folds the overlay into the store
// exactly as Pebble would have taken the same writes (range deletions
// too); a crash between checkpoints leaves the last checkpoint, from which
// raft's replay reaches the same digest as a machine that never crashed;
// and a crash during a checkpoint, its table written but not ingested,
// leaves the checkpoint before it.

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// TestCheckpointFoldsAsPebble: random sets, deletes and range deletions
// through a machine's overlay, checkpointed at random points, leave the
// store holding what one Pebble database that took the same writes holds,
// and a checkpoint's table never overlaps the memtables.
func TestCheckpointFoldsAsPebble(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 3))
			db, want := newTestDB(t), memDB(t)
			m := &Machine{db: db, group: 3, prefix: groupPrefix(3), scratchDir: t.TempDir()}
			m.ov = newOverlay(&m.chunks)
			other := groupPrefix(4) // another group's writes share the memtable
			// Keys of many kinds, so that range deletions cross kinds.
			kinds := []byte{kindShow, kindHold, kindLiveHold, kindRequest, kindShowKey, kindEvent, kindEventBucket, kindBooking, kindEventRev, kindRoom + 3, 0x20}
			key := func() []byte {
				return fmt.Appendf(append([]byte(nil), m.prefix...), "%ck%03d", kinds[rng.IntN(len(kinds))], rng.IntN(30))
			}
			for range 600 {
				switch n := rng.IntN(100); {
				case writeBoth(rng, key, n, 55, 80, 85, want, m.ov):
				case n < 95:
					must(db.Set(fmt.Appendf(append([]byte(nil), other...), "x%d", rng.IntN(50)), []byte("o"), pebble.NoSync), "set")
				default:
					// As commits leave them: sealed, or pending (pubLayers).
					if rng.IntN(2) == 0 {
						m.ov.seal()
					}
					m.ov.commit()
					must(m.Checkpoint(), "checkpoint")
					if !m.ov.empty() || m.ov.view().runs != nil || m.ov.pending() != 0 {
						t.Fatalf("after a checkpoint the overlay holds %d bytes", m.ov.bytes())
					}
					sameRange(t, want, db, m.prefix)
				}
			}
			m.ov.commit()
			must(m.Checkpoint(), "checkpoint")
			sameRange(t, want, db, m.prefix)
			if m.checkpoints == 0 || m.checkpointFlushes != 0 {
				t.Fatalf("%d checkpoints, %d of them overlapping the memtables, want some and none", m.checkpoints, m.checkpointFlushes)
			}
		})
	}
}

// sameRange fails unless got holds want's records under prefix.
func sameRange(t *testing.T, want, got *pebble.DB, prefix []byte) {
	t.Helper()
	read := func(db *pebble.DB) []string {
		var out []string
		it, err := db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
		must(err, "iter")
		defer it.Close()
		for ok := it.First(); ok; ok = it.Next() {
			out = append(out, fmt.Sprintf("%q=%q", it.Key(), it.Value()))
		}
		return out
	}
	if w, g := read(want), read(got); fmt.Sprint(w) != fmt.Sprint(g) {
		t.Fatalf("store after checkpoints:\n%v\nwant\n%v", g, w)
	}
}

// crashLog applies generated entries to m and its twin and keeps the log.
type crashLog struct {
	t   *testing.T
	g   *gen
	log []*ledgerpb.Command
}

func (c *crashLog) step(n int, ms ...*Machine) {
	for range n {
		index, cmd := c.g.entry()
		c.log = append(c.log, cmd)
		var res []*ledgerpb.Result
		for _, m := range ms {
			res = mustApply(c.t, m, index, proto.Clone(cmd).(*ledgerpb.Command), len(batchOrSelf(cmd)))
		}
		c.g.observe(cmd, res)
	}
}

// replay applies the whole log to m as raft replays it after a crash.
func (c *crashLog) replay(m *Machine) {
	for i, cmd := range c.log {
		want := len(batchOrSelf(cmd))
		if uint64(i+1) <= m.Applied() {
			want = 0
		}
		mustApply(c.t, m, uint64(i+1), proto.Clone(cmd).(*ledgerpb.Command), want)
	}
}

// TestCrashBetweenCheckpoints: a crash after a checkpoint leaves the store
// exactly at it, whatever was applied since, and raft's replay brings the
// machine to its twin's digest.
func TestCrashBetweenCheckpoints(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 5)
	twin := newTestMachine(t, newTestDB(t), 5)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(21, 22))})}
	c.step(70, m, twin)
	s, err := m.Snapshot() // raft's snapshot checkpoints
	if err != nil {
		t.Fatal(err)
	}
	at, atDigest := s.Applied(), mustDigest(t, m)
	s.Close()
	c.step(50, m, twin)
	// Later entries reach no store: many small ones, then a crash.
	m = crashReopen(t, m, dir, 5)
	t.Cleanup(func() { m.db.Close() })
	if got := m.Applied(); got != at {
		t.Fatalf("after a crash: applied %d, want the checkpoint's %d", got, at)
	}
	if got := mustDigest(t, m); got != atDigest {
		t.Fatalf("after a crash: digest %v, want the checkpoint's %v", got, atDigest)
	}
	c.replay(m)
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("after the log's replay: digest %v, want the twin's %v", got, want)
	}
	c.step(30, m, twin)
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("after more entries: digest %v, want the twin's %v", got, want)
	}
}

// TestCrashDuringCheckpoint: a checkpoint whose table was written but not
// ingested when the node crashed leaves the checkpoint before it, and the
// table is removed when the group starts again; one that was ingested
// leaves its own state.
func TestCrashDuringCheckpoint(t *testing.T) {
	dir := t.TempDir()
	scratch := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 6)
	must(m.UseScratchDir(scratch), "scratch dir")
	twin := newTestMachine(t, newTestDB(t), 6)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(31, 32))})}
	c.step(60, m, twin)
	must(m.Checkpoint(), "checkpoint")
	first, firstDigest := m.Applied(), mustDigest(t, m)
	c.step(40, m, twin)
	// The checkpoint's first half: its table, written, then the crash.
	m.ov.seal()
	path, err := m.foldTable(m.ov.view())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the checkpoint's table: %v", err)
	}
	m = crashReopen(t, m, dir, 6)
	must(m.UseScratchDir(scratch), "scratch dir")
	if left, _ := filepath.Glob(filepath.Join(scratch, checkpointTablePattern)); len(left) != 0 {
		t.Fatalf("tables left in the scratch dir: %v", left)
	}
	if got, d := m.Applied(), mustDigest(t, m); got != first || d != firstDigest {
		t.Fatalf("after a crash before the ingestion: applied %d digest %v, want the previous checkpoint's %d %v", got, d, first, firstDigest)
	}
	c.replay(m)
	must(m.Checkpoint(), "checkpoint")
	second, secondDigest := m.Applied(), mustDigest(t, m)
	m = crashReopen(t, m, dir, 6)
	t.Cleanup(func() { m.db.Close() })
	if got, d := m.Applied(), mustDigest(t, m); got != second || d != secondDigest {
		t.Fatalf("after a crash after the ingestion: applied %d digest %v, want the checkpoint's %d %v", got, d, second, secondDigest)
	}
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("digest %v, want the twin's %v", got, want)
	}
}

// TestOverlayBoundCheckpoints: past overlayBytesMax a checkpoint is due,
// so the overlay stays bounded when raft snapshots rarely; the owner's
// CheckpointBehind writes it while views read on.
func TestOverlayBoundCheckpoints(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 8)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(41, 42))})}
	c.step(5, m)
	// Filler records (of no kind the machine reads) bring the overlay to
	// its bound; the next commit checkpoints.
	big := make([]byte, 1<<20)
	for i := 0; m.ov.bytes() < overlayBytesMax; i++ {
		m.ov.set(fmt.Appendf(m.key(kindEnd-1), "%d", i), big)
	}
	// Readers go on while the checkpoint writes its table (run with
	// -race): they read the published overlay, which it only reads.
	stop, read := make(chan struct{}), make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				read <- nil
				return
			default:
			}
			v, err := m.View()
			if err == nil {
				_, err = v.Digest()
				v.Close()
			}
			if err != nil {
				read <- err
				return
			}
		}
	}()
	c.step(1, m)
	if !m.CheckpointDue() {
		t.Fatal("no checkpoint due past the overlay's bound")
	}
	if n := m.CheckpointBehind(); n < overlayBytesMax {
		t.Fatalf("CheckpointBehind wrote %d bytes, want the overlay's %d or more", n, overlayBytesMax)
	}
	close(stop)
	if err := <-read; err != nil {
		t.Fatal(err)
	}
	if m.CheckpointDue() || m.CheckpointBehind() != 0 {
		t.Fatal("a checkpoint is still due after one")
	}
	if m.checkpoints != 1 || m.ov.bytes() >= overlayBytesMax {
		t.Fatalf("%d checkpoints, overlay of %d bytes, want 1 and under %d", m.checkpoints, m.ov.bytes(), overlayBytesMax)
	}
	_, closer, err := m.db.Get(m.metaKey())
	if errors.Is(err, pebble.ErrNotFound) {
		t.Fatalf("after the checkpoint the store has no meta record")
	}
	must(err, "read meta")
	closer.Close()
}

// TestViewsAcrossCheckpoints: a view reads the state of its own index
// however many entries apply and checkpoints run while it is open, on
// another goroutine too (run with -race): its overlay never changes and
// its Pebble snapshot predates every later checkpoint.
func TestViewsAcrossCheckpoints(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 9)
	twin := newTestMachine(t, newTestDB(t), 9)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(51, 52))})}
	digests := map[uint64]Digest{}
	type held struct {
		v    *View
		want Digest
	}
	views := make(chan held, 64)
	done := make(chan error)
	go func() {
		var err error
		for h := range views {
			if d, derr := h.v.Digest(); derr != nil || d != h.want {
				err = fmt.Errorf("view at %d: digest %v %v, want %v", h.v.Applied(), d, derr, h.want)
			}
			h.v.Close()
		}
		done <- err
	}()
	for i := range 60 {
		c.step(3, m, twin)
		digests[twin.Applied()] = mustDigest(t, twin)
		v, err := m.View()
		if err != nil {
			t.Fatal(err)
		}
		views <- held{v: v, want: digests[v.Applied()]}
		if i%7 == 0 {
			must(m.Checkpoint(), "checkpoint")
		}
	}
	close(views)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestRetiredOverlayWaitsForViews: a checkpoint's overlay gives its memory
// to the next overlays only once no view reads it, so a view open across a
// checkpoint keeps its state while later entries fill new overlays.
func TestRetiredOverlayWaitsForViews(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 10)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(61, 62))})}
	c.step(40, m)
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	want := mustDigest(t, m)
	must(m.Checkpoint(), "checkpoint")
	c.step(40, m)
	if n := len(m.chunks.free); n != 0 {
		t.Fatalf("%d chunks pooled while a view reads them, want 0", n)
	}
	if got, err := v.Digest(); err != nil || got != want {
		t.Fatalf("view across a checkpoint: digest %v %v, want %v", got, err, want)
	}
	v.Close()
	if n := len(m.chunks.free); n == 0 {
		t.Fatalf("no chunk pooled once the view closed")
	}
	must(m.Checkpoint(), "checkpoint")
	c.step(40, m) // takes the pooled chunk
	if got, want := m.Applied(), uint64(120); got != want {
		t.Fatalf("applied %d, want %d", got, want)
	}
}

// TestCheckpointWhileApplying: checkpoints from another goroutine (a
// backup's Snapshot) while entries apply lose nothing applied meanwhile,
// in memory or after a crash and the log's replay (run with -race).
func TestCheckpointWhileApplying(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 11)
	twin := newTestMachine(t, newTestDB(t), 11)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(71, 72))})}
	stop, done := make(chan struct{}), make(chan error)
	var calls atomic.Int64 // Checkpoint calls that returned
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := m.Checkpoint(); err != nil {
				done <- err
				return
			}
			calls.Add(1)
		}
	}()
	// Entries apply until the other goroutine has checkpointed several
	// times between them: on a busy machine it may get little time, and
	// 200 entries were once too few (1 checkpoint).
	for steps := 0; steps < 200 || (calls.Load() < 8 && steps < 4000); steps += 50 {
		c.step(50, m, twin)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if m.checkpoints < 2 {
		t.Fatalf("%d checkpoints ran during the entries, want several", m.checkpoints)
	}
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("digest %v, want the twin's %v", got, want)
	}
	m = crashReopen(t, m, dir, 11)
	t.Cleanup(func() { m.db.Close() })
	c.replay(m)
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("after a crash and the replay: digest %v, want the twin's %v", got, want)
	}
}

// TestAbortedBatchLeavesViews: a batch that panics after writing leaves
// the overlay as it was, and later batches change no view opened before
// it (the stack the abort put back is the one views read).
func TestAbortedBatchLeavesViews(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 12)
	twin := newTestMachine(t, newTestDB(t), 12)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(81, 82))})}
	c.step(30, m, twin)
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	want := mustDigest(t, m)
	// A hold, then a nested batch, which is impossible: apply panics
	// after the hold wrote its records.
	bad := at(1_000_000, cmdBatch(cmdHold("x", "x1", "s1", 0, "A1"), cmdBatch()))
	if _, err := applyRecover(m, m.Applied()+1, bad); err == nil {
		t.Fatalf("a nested batch applied, want a panic")
	}
	// An abort after a range deletion sealed the batch's records into
	// runs of their own (as a panic in pruning would leave it).
	m.mu.Lock()
	tx := m.begin()
	for i := range 50 {
		tx.set(fmt.Appendf(m.key(kindEnd-1), "%03d", i), []byte("filler"))
	}
	tx.deleteRange(m.key(kindEnd-1), m.key(kindEnd))
	m.end(tx) // not committed: what a panic's unwinding does
	m.mu.Unlock()
	if got := mustDigest(t, m); got != want {
		t.Fatalf("after the aborted batches: digest %v, want %v", got, want)
	}
	c.step(60, m, twin) // seals and merges on the stack the abort put back
	if got, err := v.Digest(); err != nil || got != want {
		t.Fatalf("view opened before the abort: digest %v %v, want %v", got, err, want)
	}
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("digest %v, want the twin's %v", got, want)
	}
}

// TestCheckpointTablesHaveFilters: a checkpoint's table carries the bloom
// filters Pebble's own flushes write (OpenDB), so that the store's point
// reads that find nothing, most of apply's, skip it.
func TestCheckpointTablesHaveFilters(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 13)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(91, 92))})}
	c.step(30, m)
	must(m.Checkpoint(), "checkpoint")
	levels, err := m.db.SSTables(pebble.WithProperties())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, level := range levels {
		for _, info := range level {
			n++
			if info.Properties.FilterPolicyName == "" {
				t.Fatalf("table %+v has no filter", info.TableInfo)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no table after a checkpoint")
	}
}

// TestRandomCrashesAndCheckpoints: entries, checkpoints, raft snapshots,
// clean restarts and crashes in random order; after each crash the store
// is at the last checkpoint exactly, and the log's replay always reaches
// the twin's digest.
func TestRandomCrashesAndCheckpoints(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 101))
			dir := t.TempDir()
			db, err := OpenDB(dir)
			if err != nil {
				t.Fatal(err)
			}
			m := newTestMachine(t, db, 14)
			t.Cleanup(func() { m.db.Close() }) // the last one opened
			twin := newTestMachine(t, newTestDB(t), 14)
			c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(seed, 102))})}
			durable := uint64(0) // the last checkpoint's index
			for range 40 {
				switch n := rng.IntN(10); {
				case n < 5:
					c.step(1+rng.IntN(15), m, twin)
				case n < 6:
					must(m.Checkpoint(), "checkpoint")
					durable = m.Applied()
				case n < 7:
					s, err := m.Snapshot()
					if err != nil {
						t.Fatal(err)
					}
					durable = s.Applied()
					s.Close()
				case n < 8:
					m = reopen(t, m, dir, 14)
					durable = m.Applied()
					c.replay(m)
				default:
					m = crashReopen(t, m, dir, 14)
					if got := m.Applied(); got != durable {
						t.Fatalf("after a crash: applied %d, want the last checkpoint's %d", got, durable)
					}
					c.replay(m)
				}
				if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
					t.Fatalf("digest %v, want the twin's %v", got, want)
				}
			}
		})
	}
}

// TestCheckpointBehindApplyReadsAsPebble: while a checkpoint writes a
// frozen overlay behind apply (checkpointIfDue), the new overlay's writes
// (sets, deletes, range deletions over the frozen one's keys) read, for
// the readers of a commit (pubStore) and for apply's own (txn.store), as
// one Pebble database that took the same writes; so do views taken before
// the checkpoint ends, read after it, and the store once it has.
func TestCheckpointBehindApplyReadsAsPebble(t *testing.T) {
	for seed := range uint64(24) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 23))
			keys := 20 + rng.IntN(150)
			key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
			db, want := newTestDB(t), memDB(t)
			m := &Machine{db: db, group: 3, prefix: groupPrefix(3), scratchDir: t.TempDir()}
			m.ov = newOverlay(&m.chunks)
			m.published.Store(&appliedPoint{})
			m.SetCheckpointBytes(1) // any overlay may be frozen
			froze := 0
			type taken struct {
				snap *pebble.Snapshot
				view *View
			}
			var views []taken
			var frozen *layers
			for range 800 {
				switch n := rng.IntN(100); {
				case writeBoth(rng, key, n, 55, 75, 80, want, m.ov):
				case n < 84:
					m.ov.commit()
					if rng.IntN(2) == 0 {
						m.ov.seal()
					}
				case n < 88 && frozen == nil:
					m.ov.commit()
					if frozen = m.freeze(); frozen != nil {
						froze++
					}
				case n < 92 && frozen != nil:
					m.checkpointFrozen(frozen)
					frozen = nil
					if m.ov.below != nil {
						t.Fatal("the overlay keeps the checkpointed one below it")
					}
				case n < 96:
					m.ov.commit()
					m.mu.RLock()
					compareReads(t, rng, keys, want, m.pubStore())
					m.mu.RUnlock()
					compareReads(t, rng, keys, want, reader{r: m.db, o: m.ov})
				default:
					m.ov.commit()
					v := m.ReadView()
					if _, err := v.snapshot(); err != nil {
						t.Fatal(err)
					}
					views = append(views, taken{snap: want.NewSnapshot(), view: v})
				}
			}
			if frozen != nil {
				m.checkpointFrozen(frozen)
			}
			m.ov.commit()
			must(m.Checkpoint(), "checkpoint")
			compareReads(t, rng, keys, want, reader{r: m.db})
			for _, v := range views {
				compareReads(t, rng, keys, v.snap, v.view.rd())
				must(v.view.Close(), "close view")
				must(v.snap.Close(), "close snapshot")
			}
			if froze == 0 || m.checkpoints == 0 {
				t.Fatalf("%d overlays frozen, %d checkpoints: want some of each", froze, m.checkpoints)
			}
		})
	}
}

// TestCheckpointsBehindApply: with a small checkpoint bound, an owner's
// goroutine checkpoints behind apply again and again while apply goes on
// and readers read (the digest reads every record through the overlays
// over Pebble); the state stays its twin's throughout, and a crash then
// leaves a checkpoint from which raft's replay reaches the twin again.
func TestCheckpointsBehindApply(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 7)
	m.SetCheckpointBytes(16 << 10)
	ck := startCheckpointer(m)
	twin := newTestMachine(t, newTestDB(t), 7)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(31, 32))})}
	for range 20 {
		for range 25 {
			c.step(1, m, twin)
			ck.afterApply()
		}
		if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
			t.Fatalf("at %d: digest %v, twin's %v", m.Applied(), got, want)
		}
	}
	if n := ck.stop(); n < 3 {
		t.Fatalf("%d checkpoints behind apply, want several", n)
	}
	checkpointed := m.Applied()
	m = crashReopen(t, m, dir, 7)
	t.Cleanup(func() { m.db.Close() })
	if got := m.Applied(); got == 0 || got > checkpointed {
		t.Fatalf("after a crash: applied %d, want a checkpoint's, in 1..%d", got, checkpointed)
	}
	c.replay(m)
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("after the log's replay: digest %v, want the twin's %v", got, want)
	}
}

// TestCheckpointInLinePastTwiceTheBound: with no owner to checkpoint
// behind apply, apply checkpoints in line once the overlay is past twice
// its bound, so the overlay stays bounded anyway.
func TestCheckpointInLinePastTwiceTheBound(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 9)
	const bound = 16 << 10
	m.SetCheckpointBytes(bound)
	c := &crashLog{t: t, g: newGen(randChooser{rand.New(rand.NewPCG(33, 34))})}
	most := 0
	for range 500 {
		c.step(1, m)
		most = max(most, m.ov.bytes())
		if m.ov.bytes() >= 2*bound {
			t.Fatalf("after entry %d: overlay of %d bytes, past twice its bound of %d", m.Applied(), m.ov.bytes(), bound)
		}
	}
	if m.checkpoints == 0 || most < bound {
		t.Fatalf("%d checkpoints, overlay at most %d bytes: the bound of %d was never reached", m.checkpoints, most, bound)
	}
}
