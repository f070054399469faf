// This file proves that a Machine survives a process restart: after closing
// and reopening its Pebble database, NewMachine reports the same applied
// index and clock, the state (digest, seat maps) is intact, re-applied old
// indexes are skipped (raft replays its log from the last snapshot), and the
// machine goes on exactly like a twin that never restarted. The same holds
// after a Restore.
package fsm

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestRestart(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 2)
	twin := newTestMachine(t, newTestDB(t), 2)
	g := newGen(randChooser{rand.New(rand.NewPCG(11, 12))})
	var log []*ledgerpb.Command // the raft log: entry i+1 is log[i]
	step := func(n int, ms ...*Machine) {
		for range n {
			index, cmd := g.entry()
			if int(index) != len(log)+1 {
				t.Fatalf("generator index %d, log length %d", index, len(log))
			}
			log = append(log, cmd)
			var res []*ledgerpb.Result
			for _, x := range ms {
				res = mustApply(t, x, index, proto.Clone(cmd).(*ledgerpb.Command), len(batchOrSelf(cmd)))
			}
			g.observe(cmd, res)
		}
	}
	step(80, m, twin)
	before := stateOf(t, m)
	seatsBefore := seatStates(t, m, "s1")

	// A crash: the group's state reaches the store only at checkpoints,
	// so it comes back as it was at its last one (here, before the first
	// entry), and raft's replay of the log brings the machine back to
	// where it was.
	m = crashReopen(t, m, dir, 2)
	kept := m.Applied()
	if kept > before.applied {
		t.Fatalf("after a crash: applied %d, past the %d entries applied", kept, before.applied)
	}
	for i, cmd := range log {
		want := len(batchOrSelf(cmd)) // results of an entry applied again
		if uint64(i+1) <= kept {
			want = 0 // skipped: the store kept it
		}
		mustApply(t, m, uint64(i+1), proto.Clone(cmd).(*ledgerpb.Command), want)
	}
	if got := stateOf(t, m); got != before {
		t.Fatalf("after a crash and the log's replay: state %+v, want %+v", got, before)
	}

	m = reopen(t, m, dir, 2)
	if got := stateOf(t, m); got != before {
		t.Fatalf("after restart: state %+v, want %+v", got, before)
	}
	if got := seatStates(t, m, "s1"); !equalStates(got, seatsBefore) {
		t.Fatalf("after restart: seat map of s1 %v, want %v", got, seatsBefore)
	}
	// raft replays the whole log: every entry is skipped.
	for i, cmd := range log {
		if res := mustApply(t, m, uint64(i+1), cmd, 0); res != nil {
			t.Fatalf("re-applied entry %d returned %d results, want nil", i+1, len(res))
		}
	}
	if got := stateOf(t, m); got != before {
		t.Fatalf("after replaying the log: state %+v, want %+v", got, before)
	}
	// New entries apply exactly as on the twin.
	step(40, m, twin)
	if got, want := mustDigest(t, m), mustDigest(t, twin); got != want {
		t.Fatalf("restarted machine digest %v, twin %v", got, want)
	}

	// A restore is durable too.
	fresh := newTestMachine(t, newTestDB(t), 2)
	step(5, fresh) // fresh sees only part of the log: indexes 121..125
	if err := m.Restore(bytes.NewReader(snapshotBytes(t, fresh))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	restored := stateOf(t, m)
	m = crashReopen(t, m, dir, 2) // Restore flushed: nothing to replay
	t.Cleanup(func() { m.db.Close() })
	if got := stateOf(t, m); got != restored {
		t.Fatalf("after Restore and restart: state %+v, want %+v", got, restored)
	}
}

// reopen checkpoints m, closes its store and opens the directory again, as
// a restarted node does.
func reopen(t *testing.T, m *Machine, dir string, group uint32) *Machine {
	t.Helper()
	if err := m.Checkpoint(); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if err := CloseDB(m.db); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openAgain(t, dir, group)
}

// crashReopen closes m's store without a flush, so that what only the
// memtables held is lost as in a crash, and opens the directory again.
func crashReopen(t *testing.T, m *Machine, dir string, group uint32) *Machine {
	t.Helper()
	if err := m.db.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return openAgain(t, dir, group)
}

func openAgain(t *testing.T, dir string, group uint32) *Machine {
	t.Helper()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatalf("OpenDB after restart: %v", err)
	}
	m, err := NewMachine(db, group)
	if err != nil {
		t.Fatalf("NewMachine after restart: %v", err)
	}
	return m
}

func batchOrSelf(cmd *ledgerpb.Command) []*ledgerpb.Command {
	if b := cmd.GetBatch(); b != nil {
		return b.Commands
	}
	return []*ledgerpb.Command{cmd}
}

func equalStates(a, b map[string]ledgerpb.SeatState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestNewMachineRejectsBadMeta: a meta record of the wrong length is an
// error from NewMachine, not a machine with a made-up index.
func TestNewMachineRejectsBadMeta(t *testing.T) {
	db := newTestDB(t)
	m := newTestMachine(t, db, 9)
	if err := db.Set(m.metaKey(), []byte{1, 2, 3}, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	if _, err := NewMachine(db, 9); err == nil {
		t.Fatalf("NewMachine with a 3-byte meta record = nil error, want an error")
	}
}

// TestSnapshotMakesItsIndexDurable: raft records a snapshot once WriteTo
// returns and may then drop the log below it, so a crash after that must
// keep every entry up to the snapshot's index in the store, which has no
// WAL.
func TestSnapshotMakesItsIndexDurable(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 4)
	g := newGen(randChooser{rand.New(rand.NewPCG(5, 6))})
	apply := func(n int) {
		for range n {
			index, cmd := g.entry()
			g.observe(cmd, mustApply(t, m, index, cmd, len(batchOrSelf(cmd))))
		}
	}
	apply(60)
	s, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	at, want := s.Applied(), mustDigest(t, m)
	if _, err := s.WriteTo(io.Discard); err != nil {
		t.Fatal(err)
	}
	s.Close()
	apply(20) // after the snapshot: a crash may lose these
	m = crashReopen(t, m, dir, 4)
	t.Cleanup(func() { m.db.Close() })
	if got := m.Applied(); got < at {
		t.Fatalf("after a crash: applied %d, below the snapshot's %d", got, at)
	}
	if got := mustDigest(t, m); m.Applied() == at && got != want {
		t.Fatalf("after a crash: digest %v, want the snapshot's %v", got, want)
	}
}
