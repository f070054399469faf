// This file proves VerifySnapshot: it accepts what WriteTo writes and
// computes from the stream alone the digest a replica reports at that index,
// and one flipped byte anywhere, a truncation or a trailing byte is refused.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestVerifySnapshot(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 7)
	feed(t, newGen(randChooser{rand.New(rand.NewPCG(3, 4))}), 30, m)
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := snap.Digest()
	if err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if want := mustDigest(t, m); d != want {
		t.Fatalf("Snapshot.Digest() = %v, want the machine's %v", d, want)
	}
	stream := snapshotBytes(t, m)
	got, err := VerifySnapshot(bytes.NewReader(stream))
	if err != nil {
		t.Fatalf("VerifySnapshot(good stream) = %v", err)
	}
	if got != d {
		t.Fatalf("VerifySnapshot digest = %v, want the snapshot's %v", got, d)
	}
	for _, at := range []int{0, 9, 30, len(stream) / 2, len(stream) - 40, len(stream) - 1} {
		bad := bytes.Clone(stream)
		bad[at] ^= 0x01
		if _, err := VerifySnapshot(bytes.NewReader(bad)); err == nil {
			t.Errorf("VerifySnapshot(byte %d of %d flipped) = nil, want an error", at, len(stream))
		}
	}
	if _, err := VerifySnapshot(bytes.NewReader(stream[:len(stream)-1])); err == nil {
		t.Error("VerifySnapshot(truncated) = nil, want an error")
	}
	if _, err := VerifySnapshot(bytes.NewReader(append(bytes.Clone(stream), 0))); err == nil {
		t.Error("VerifySnapshot(trailing byte) = nil, want an error")
	}
}
