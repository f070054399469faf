// This file proves, by fuzzing, that no input makes the fsm's decoders or
// apply path panic and that accepted input round-trips: DecodeCommand /
// EncodeCommand, Restore (a bad stream is an error that leaves the state
// unchanged), splitSeatID, decodeMeta, decodeExpiryKey and
// decodeRequestAgeKey; and that any command sequence applied to two replicas
// in two databases gives equal results and digests, keeps S1 and never
// creates a hold that is expired at birth. The seed
// corpora under testdata/fuzz run in every plain go test; explore with
//
//	go test -run='^$' -fuzz=FuzzApplySequence -fuzztime=20s ./fsm/
package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seedCommands are one command of every kind, a batch and edge values.
func seedCommands() []*ledgerpb.Command {
	return []*ledgerpb.Command{
		at(1000, cmdShow("admin", "r1", testShow("s1", "A:20:std,B:10:vip", "std:1000:EUR,vip:2500:EUR"))),
		at(1000, cmdHold("c1", "r2", "s1", 5000, "A1", "A2")),
		at(1000, cmdConfirm("c1", "r3", "s1", "h0-2-0", "pay-1")),
		at(1000, cmdRelease("c1", "r4", "s1", "h0-2-0")),
		at(1000, cmdExpire(1000, 16)),
		at(2000, cmdBatch(cmdHold("c1", "r5", "s1", 0, "B1"), cmdHold("c1", "r5", "s1", 0, "B1"), cmdExpire(-5, 0))),
		{},
		{ProposedAtMs: -1 << 63, ClientId: "\x00", RequestId: "é"},
	}
}

func FuzzDecodeCommand(f *testing.F) {
	for _, c := range seedCommands() {
		b, err := EncodeCommand(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		cmd, err := DecodeCommand(data)
		if err != nil {
			return
		}
		enc, err := EncodeCommand(cmd)
		if err != nil {
			t.Fatalf("EncodeCommand(DecodeCommand(%x)): %v", data, err)
		}
		again, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("DecodeCommand(EncodeCommand(cmd)) = %v, want the command", err)
		}
		if !proto.Equal(cmd, again) {
			t.Fatalf("round trip changed the command:\n got  %v\n want %v", again, cmd)
		}
		if enc2, _ := EncodeCommand(again); !bytes.Equal(enc, enc2) {
			t.Fatalf("EncodeCommand is not deterministic: %x then %x", enc, enc2)
		}
	})
}

func FuzzRestore(f *testing.F) {
	m := newTestMachine(f, newTestDB(f), 7)
	feed(f, newGen(randChooser{rand.New(rand.NewPCG(3, 4))}), 25, m)
	good := snapshotBytes(f, m)
	orig := stateOf(f, m)
	other := newTestMachine(f, newTestDB(f), 8)
	feed(f, newGen(randChooser{rand.New(rand.NewPCG(3, 4))}), 5, other)
	empty := snapshotBytes(f, newTestMachine(f, newTestDB(f), 7))

	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add(empty)
	f.Add(snapshotBytes(f, other))
	f.Add([]byte(snapMagic))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := m.Restore(bytes.NewReader(data)); err != nil {
			if got := stateOf(t, m); got != orig {
				t.Fatalf("Restore failed (%v) but changed the state: %+v, want %+v", err, got, orig)
			}
			return
		}
		// Accepted: the header's index and clock are the machine's now.
		if len(data) < 32 {
			t.Fatalf("Restore accepted %d bytes, shorter than the header", len(data))
		}
		if d := mustDigest(t, m); d.Applied != m.Applied() || d.Clock != m.Clock() {
			t.Fatalf("Applied(), Clock() = %d, %d, stored meta says %d, %d", m.Applied(), m.Clock(), d.Applied, d.Clock)
		}
		if err := m.Restore(bytes.NewReader(good)); err != nil {
			t.Fatalf("Restore(good) after an accepted stream: %v", err)
		}
		if got := stateOf(t, m); got != orig {
			t.Fatalf("Restore(good) = state %+v, want %+v", got, orig)
		}
	})
}

func FuzzSplitSeatID(f *testing.F) {
	for _, s := range []string{"A1", "AB12", "ABC500", "ZZZ99999", "A0", "A01", "a1", "", "A", "1", "ABCD1", "A-1", "A 1", "A1x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		row, num, ok := splitSeatID(id)
		if !ok {
			return
		}
		if got := fmt.Sprintf("%s%d", row, num); got != id {
			t.Fatalf("splitSeatID(%q) = %q, %d: formats back as %q", id, row, num, got)
		}
		if !validRowName(row) || num < 1 || len(id) > SeatIDLenMax {
			t.Fatalf("splitSeatID(%q) accepted row %q number %d", id, row, num)
		}
	})
}

func FuzzDecodeMeta(f *testing.F) {
	f.Add(encodeMeta(0, 0))
	f.Add(encodeMeta(42, 1_700_000_000_000))
	f.Add(encodeMeta(^uint64(0), -1))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		applied, clock, err := decodeMeta(b)
		if err != nil {
			if len(b) == metaLen {
				t.Fatalf("decodeMeta(%x) rejected a record of the right length: %v", b, err)
			}
			return
		}
		if got := encodeMeta(applied, clock); !bytes.Equal(got, b) {
			t.Fatalf("encodeMeta(decodeMeta(%x)) = %x", b, got)
		}
	})
}

func FuzzDecodeKeys(f *testing.F) {
	m := &Machine{group: 7, prefix: groupPrefix(7)}
	f.Add(m.requestKey(1000, "c1", "r1"))
	f.Add(m.requestKey(0, "", ""))
	f.Add(m.requestKey(5, "\xff", "r"))
	f.Add([]byte("G\x00\x00\x00\x07\x07\x00\x00\x00\x00\x00\x00\x00\x01\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, k []byte) {
		// Re-encode under the key's own prefix.
		var mk *Machine
		if len(k) >= groupPrefixLen {
			mk = &Machine{prefix: bytes.Clone(k[:groupPrefixLen])}
		}
		if bucket, client, request, err := decodeRequestKey(k); err == nil {
			if got := mk.requestKey(bucket, client, request); !bytes.Equal(got, k) {
				t.Fatalf("requestKey(decodeRequestKey(%x)) = %x", k, got)
			}
		}
	})
}

// fuzzEntriesMax bounds one FuzzApplySequence input's entries.
const fuzzEntriesMax = 16

func FuzzApplySequence(f *testing.F) {
	dbA, dbB := newTestDB(f), newTestDB(f)
	var group uint32 // a fresh group per input keeps the databases open
	for i := range 8 {
		b := make([]byte, 64+32*i)
		r := rand.New(rand.NewPCG(uint64(i), 77))
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		f.Add(b)
	}
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		group++
		a, b := newTestMachine(t, dbA, group), newTestMachine(t, dbB, group)
		ch := &byteChooser{b: data}
		g := newGen(ch)
		g.wild = true
		g.rooms = len(data)%2 == 1 // half the inputs mix in waiting rooms
		g.hooks = len(data)%3 == 1 // a third webhooks and their cursors
		for e := 0; e < fuzzEntriesMax && (e == 0 || !ch.done()); e++ {
			index, cmd := g.entry()
			ra, err := applyRecover(a, index, proto.Clone(cmd).(*ledgerpb.Command))
			if err != nil {
				t.Fatalf("%s: %v", opName(cmd), err)
			}
			rb, err := applyRecover(b, index, cmd)
			if err != nil {
				t.Fatalf("replica b: %s: %v", opName(cmd), err)
			}
			if len(ra) != len(rb) {
				t.Fatalf("Apply(%d) = %d results on a, %d on b", index, len(ra), len(rb))
			}
			for i := range ra {
				if !proto.Equal(ra[i], rb[i]) {
					t.Fatalf("Apply(%d) result %d = %s on a, %s on b", index, i, resultString(ra[i]), resultString(rb[i]))
				}
				if r := ra[i]; r.Code == ledgerpb.Code_CODE_OK && r.HoldId != "" && r.HoldState == ledgerpb.HoldState_HOLD_STATE_HELD &&
					!r.Replayed && r.ExpiresAtMs <= r.AppliedAtMs {
					t.Fatalf("Apply(%d) result %d = %s: a new hold expired at birth", index, i, resultString(r))
				}
			}
			g.observe(cmd, ra)
		}
		if da, db := mustDigest(t, a), mustDigest(t, b); da != db {
			t.Fatalf("digest %v on a, %v on b", da, db)
		}
		if err := checkS1(a, genShows); err != nil {
			t.Fatal(err)
		}
	})
}
