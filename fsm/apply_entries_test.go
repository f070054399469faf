// This file proves that applying entries several to a Pebble batch
// (ApplyEntries) gives exactly the results and state of applying them one by
// one, replays included, and that ExpiryDue, which answers from an in-memory
// bound, agrees with the stored expiry index.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestApplyEntriesMatchesApply(t *testing.T) {
	seed := testSeed(t)
	for run := range 3 {
		rng := rand.New(rand.NewPCG(seed, uint64(run)))
		g := newGen(randChooser{rng})
		one := newTestMachine(t, newTestDB(t), 5)
		many := newTestMachine(t, newTestDB(t), 5)
		var sent []Entry
		for len(sent) < 400 {
			n := 1 + rng.IntN(8)
			var group []Entry
			var want [][]*ledgerpb.Result
			for range n {
				index, cmd := g.entry()
				data, err := EncodeCommand(cmd)
				if err != nil {
					t.Fatal(err)
				}
				res := one.Apply(index, proto.Clone(cmd).(*ledgerpb.Command))
				g.observe(cmd, res)
				group = append(group, Entry{Index: index, Data: data})
				want = append(want, res)
			}
			// Sometimes raft hands over entries applied before (a replay
			// after restart): they are skipped.
			replayed := 0
			if len(sent) > 0 && rng.IntN(4) == 0 {
				replayed = 1 + rng.IntN(min(3, len(sent)))
				group = append(append([]Entry(nil), sent[len(sent)-replayed:]...), group...)
			}
			got := many.ApplyEntries(group)
			for i := range got {
				if i < replayed {
					if got[i] != nil {
						t.Fatalf("ApplyEntries: replayed entry %d gave %d results, want none", group[i].Index, len(got[i]))
					}
					continue
				}
				w := want[i-replayed]
				if len(got[i]) != len(w) {
					t.Fatalf("ApplyEntries: entry %d gave %d results, Apply %d", group[i].Index, len(got[i]), len(w))
				}
				for j := range w {
					if !proto.Equal(got[i][j], w[j]) {
						t.Fatalf("entry %d result %d = %s, Apply gave %s", group[i].Index, j, resultString(got[i][j]), resultString(w[j]))
					}
				}
			}
			sent = append(sent, group[replayed:]...)
			if a, b := mustDigest(t, one), mustDigest(t, many); a != b || one.Applied() != many.Applied() || one.Clock() != many.Clock() {
				t.Fatalf("after entry %d: ApplyEntries digest %v applied %d clock %d, Apply %v %d %d",
					one.Applied(), b, many.Applied(), many.Clock(), a, one.Applied(), one.Clock())
			}
		}
	}
}

func TestExpiryDue(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	due := func(now int64) bool {
		t.Helper()
		ok, err := m.ExpiryDue(now)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:10:std", "std:100:EUR"))), 1)
	if due(1_000_000) {
		t.Fatalf("ExpiryDue with no holds = true")
	}
	mustApply(t, m, 2, at(2000, cmdHold("c", "r1", "s1", 5000, "A1")), 1) // expires at 7000
	if due(6999) || !due(7000) {
		t.Fatalf("ExpiryDue(6999), ExpiryDue(7000) = %v, %v; want false, true", due(6999), due(7000))
	}
	// A second hold expiring earlier lowers the bound, even after a read
	// tightened it.
	mustApply(t, m, 3, at(2000, cmdHold("c", "r2", "s1", 2000, "A2")), 1) // 4000
	if !due(4000) {
		t.Fatalf("ExpiryDue(4000) = false after a hold expiring at 4000")
	}
	mustApply(t, m, 4, at(8000, cmdExpire(8000, 0)), 1)
	if due(1_000_000) {
		t.Fatalf("ExpiryDue after every hold expired = true")
	}
	// Restore brings holds the bound never saw.
	src := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, src, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:10:std", "std:100:EUR"))), 1)
	mustApply(t, src, 2, at(9000, cmdHold("c", "r1", "s1", 1000, "A1")), 1) // 10000
	if err := m.Restore(bytes.NewReader(snapshotBytes(t, src))); err != nil {
		t.Fatal(err)
	}
	if !due(10000) {
		t.Fatalf("ExpiryDue(10000) after Restore = false")
	}
}
