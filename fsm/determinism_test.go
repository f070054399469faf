// This file proves S6 and the snapshot contract: two replicas (two Pebble
// databases) fed the same entries return the same results and have equal
// Digests at every index; a replica restored from a snapshot has the
// source's digest, applied index and clock and then continues identically; a
// snapshot is a point-in-time copy; Restore replaces only its own group's
// range; and a corrupted (any byte flipped, truncated) or foreign-group
// snapshot is rejected and leaves the target exactly as it was.
package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// snapshotBytes writes m's snapshot to memory.
func snapshotBytes(t testing.TB, m *Machine) []byte {
	t.Helper()
	s, err := m.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer s.Close()
	var buf bytes.Buffer
	n, err := s.WriteTo(&buf)
	if err != nil {
		t.Fatalf("Snapshot.WriteTo: %v", err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("Snapshot.WriteTo = %d bytes, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// feed applies n generated entries to every machine, checking that their
// results and digests agree after each one. Replica 1 applies the entry's
// bytes, as raft hands them over (decodeEntry), replica 0 the command
// itself (DecodeCommand's message): both decoders are held to the same
// results. Replica 2 applies the bytes as a follower does, unanswered
// (ApplyEntriesUnanswered): its results are recorded from reused buffers,
// and the digest, which covers the request records, holds them to the
// answered replicas' results. Further replicas take the three ways in turn.
func feed(t testing.TB, g *gen, n int, ms ...*Machine) {
	t.Helper()
	for range n {
		index, cmd := g.entry()
		var first []*ledgerpb.Result
		for i, m := range ms {
			apply := applyRecover
			switch i % 3 {
			case 1:
				apply = applyEncodedRecover
			case 2:
				apply = applyUnansweredRecover
			}
			res, err := apply(m, index, proto.Clone(cmd).(*ledgerpb.Command))
			if err != nil {
				t.Fatalf("replica %d: %s: %v", i, opName(cmd), err)
			}
			if i%3 == 2 {
				continue // no results to compare: the digest below checks its records
			}
			if i == 0 {
				first = res
				continue
			}
			if len(res) != len(first) {
				t.Fatalf("replica %d: Apply(%d) = %d results, replica 0 got %d", i, index, len(res), len(first))
			}
			for j := range res {
				if !proto.Equal(res[j], first[j]) {
					t.Fatalf("replica %d: Apply(%d) result %d = %s, replica 0 got %s", i, index, j, resultString(res[j]), resultString(first[j]))
				}
			}
		}
		g.observe(cmd, first)
		want := mustDigest(t, ms[0])
		for i, m := range ms[1:] {
			if got := mustDigest(t, m); got != want {
				t.Fatalf("after entry %d (%s): replica %d digest %v, replica 0 %v", index, opName(cmd), i+1, got, want)
			}
		}
	}
}

func TestDeterminism(t *testing.T) {
	seed := testSeed(t)
	for run := range 5 {
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, uint64(run)))})
		a := newTestMachine(t, newTestDB(t), 7)
		b := newTestMachine(t, newTestDB(t), 7)
		c := newTestMachine(t, newTestDB(t), 7)
		// c starts with state of its own that the restore must replace.
		feed(t, newGen(randChooser{rand.New(rand.NewPCG(seed, 1000+uint64(run)))}), 30, c)

		feed(t, g, 150, a, b)
		if err := c.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		if got, want := mustDigest(t, c), mustDigest(t, a); got != want {
			t.Fatalf("restored digest %v, source %v", got, want)
		}
		if c.Applied() != a.Applied() || c.Clock() != a.Clock() {
			t.Fatalf("restored Applied(), Clock() = %d, %d, want %d, %d", c.Applied(), c.Clock(), a.Applied(), a.Clock())
		}
		if err := checkS1(c, genShows); err != nil {
			t.Fatalf("restored state: %v", err)
		}
		feed(t, g, 150, a, b, c)
		// A second restore over a state that is already close.
		feed(t, g, 20, a, b)
		if err := c.Restore(bytes.NewReader(snapshotBytes(t, b))); err != nil {
			t.Fatalf("second Restore: %v", err)
		}
		feed(t, g, 50, a, b, c)
	}
}

// TestSnapshotIsPointInTime: entries applied after Snapshot() are not in it.
func TestSnapshotIsPointInTime(t *testing.T) {
	src := newTestMachine(t, newTestDB(t), 3)
	g := newGen(randChooser{rand.New(rand.NewPCG(1, 2))})
	feed(t, g, 40, src)
	want := mustDigest(t, src)
	snap, err := src.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if snap.Applied() != src.Applied() {
		t.Fatalf("Snapshot.Applied() = %d, want %d", snap.Applied(), src.Applied())
	}
	feed(t, g, 20, src)
	var buf bytes.Buffer
	if _, err := snap.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	dst := newTestMachine(t, newTestDB(t), 3)
	if err := dst.Restore(&buf); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got := mustDigest(t, dst); got != want {
		t.Fatalf("restored digest %v, want the digest at snapshot time %v", got, want)
	}
}

// TestRestoreKeepsOtherGroups: groups sharing a database are untouched by a
// restore of their neighbour, and a restore of an empty group empties it.
func TestRestoreKeepsOtherGroups(t *testing.T) {
	db := newTestDB(t)
	lo, mid, hi := newTestMachine(t, db, 4), newTestMachine(t, db, 5), newTestMachine(t, db, 6)
	for i, m := range []*Machine{lo, mid, hi} {
		feed(t, newGen(randChooser{rand.New(rand.NewPCG(9, uint64(i)))}), 40, m)
	}
	dLo, dHi := mustDigest(t, lo), mustDigest(t, hi)
	empty := newTestMachine(t, newTestDB(t), 5)
	if err := mid.Restore(bytes.NewReader(snapshotBytes(t, empty))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if got, want := mustDigest(t, mid), mustDigest(t, empty); got != want {
		t.Fatalf("group 5 after restoring an empty snapshot: digest %v, want %v", got, want)
	}
	if mid.Applied() != 0 || mid.Clock() != 0 {
		t.Fatalf("Applied(), Clock() = %d, %d, want 0, 0", mid.Applied(), mid.Clock())
	}
	if got := mustDigest(t, lo); got != dLo {
		t.Errorf("group 4 digest changed by a restore of group 5: %v, want %v", got, dLo)
	}
	if got := mustDigest(t, hi); got != dHi {
		t.Errorf("group 6 digest changed by a restore of group 5: %v, want %v", got, dHi)
	}
}

// machineState is what a failed Restore must leave alone.
type machineState struct {
	digest  Digest
	applied uint64
	clock   int64
}

func stateOf(t testing.TB, m *Machine) machineState {
	return machineState{mustDigest(t, m), m.Applied(), m.Clock()}
}

func TestRestoreRejectsCorruptSnapshot(t *testing.T) {
	src := newTestMachine(t, newTestDB(t), 7)
	feed(t, newGen(randChooser{rand.New(rand.NewPCG(5, 5))}), 30, src)
	good := snapshotBytes(t, src)

	dst := newTestMachine(t, newTestDB(t), 7)
	feed(t, newGen(randChooser{rand.New(rand.NewPCG(6, 6))}), 20, dst)
	before := stateOf(t, dst)

	check := func(what string, data []byte) {
		t.Helper()
		if err := dst.Restore(bytes.NewReader(data)); err == nil {
			t.Fatalf("Restore(%s) = nil, want an error", what)
		}
		if got := stateOf(t, dst); got != before {
			t.Fatalf("after Restore(%s) failed: state %+v, want unchanged %+v", what, got, before)
		}
	}
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xff} {
			bad := bytes.Clone(good)
			bad[i] ^= mask
			check(fmt.Sprintf("byte %d ^ %#x", i, mask), bad)
		}
	}
	for n := range good {
		check(fmt.Sprintf("first %d bytes", n), good[:n])
	}
	// A snapshot of another group is rejected, however good.
	other := newTestMachine(t, newTestDB(t), 8)
	feed(t, newGen(randChooser{rand.New(rand.NewPCG(5, 5))}), 30, other)
	check("group 8 into group 7", snapshotBytes(t, other))

	// The intact stream still restores.
	if err := dst.Restore(bytes.NewReader(good)); err != nil {
		t.Fatalf("Restore(good) = %v", err)
	}
	if got, want := mustDigest(t, dst), mustDigest(t, src); got != want {
		t.Fatalf("restored digest %v, want %v", got, want)
	}
}

// TestMaxGroupSnapshot: the last group id must snapshot, digest and restore
// its records like any other. groupEnd(0xFFFFFFFF) wraps to groupPrefix(0),
// which sorts before the group's own prefix, so its range is empty.
func TestMaxGroupSnapshot(t *testing.T) {
	const group = ^uint32(0)
	a := newTestMachine(t, newTestDB(t), group)
	b := newTestMachine(t, newTestDB(t), group)
	mustApply(t, a, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	mustApply(t, b, 1, at(1000, cmdShow("admin", "r1", testShow("s2", "A:4:std", "std:100:EUR"))), 1)
	if da, db := mustDigest(t, a), mustDigest(t, b); da == db {
		t.Errorf("group %d: replicas with different shows have equal digests %v: the digest covers no records", group, da)
	}
	c := newTestMachine(t, newTestDB(t), group)
	if err := c.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	v, err := c.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if _, err := v.SeatMap("s1"); err != nil {
		t.Errorf("group %d: SeatMap(s1) after restoring a snapshot that has it = %v, want the show", group, err)
	}
	if err := b.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	vb, err := b.View()
	if err != nil {
		t.Fatal(err)
	}
	defer vb.Close()
	if _, err := vb.SeatMap("s2"); err == nil {
		t.Errorf("group %d: SeatMap(s2) after Restore of a snapshot without it = found, want ErrNotFound (restore must replace the range)", group)
	}
}
