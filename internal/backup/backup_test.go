// This file proves the backup file: what a Writer commits Opens and
// Verifies with the groups' entries and streams intact; a failed group is
// cut off and may be added again; a flipped byte anywhere, a truncated file
// and a file with a group's digest changed in the header are all refused
// with ErrBadBackup; and an uncommitted backup leaves no file at its path.
package backup

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// testStreams returns the snapshot stream and digest of groups 0..n-1,
// each with a show created in it.
func testStreams(t *testing.T, n int) ([][]byte, []fsm.Digest) {
	t.Helper()
	db, err := fsm.OpenDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var streams [][]byte
	var digests []fsm.Digest
	for g := range uint32(n) {
		m, err := fsm.NewMachine(db, g)
		if err != nil {
			t.Fatal(err)
		}
		show := &ledgerpb.Show{ShowId: fmt.Sprintf("s%d", g), Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}},
			Rows: []*ledgerpb.Row{{Name: "A", Seats: 10, Category: "std"}}}
		m.Apply(7, &ledgerpb.Command{ClientId: "admin", RequestId: "create", ProposedAtMs: 1000,
			Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show}}})
		s, err := m.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if _, err := s.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		s.Close()
		streams, digests = append(streams, buf.Bytes()), append(digests, d)
	}
	return streams, digests
}

func writeTestBackup(t *testing.T, path string, streams [][]byte, digests []fsm.Digest) {
	t.Helper()
	w, err := Create(path, time.UnixMilli(1_700_000_000_000), len(streams))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		if i == 1 { // a failed attempt is cut off
			_, err := w.AddGroup(func(w io.Writer) (Group, error) {
				w.Write(s[:10])
				return Group{}, errors.New("leader lost")
			})
			if err == nil {
				t.Fatal("AddGroup(failing) = nil, want its error")
			}
		}
		d := digests[i]
		if _, err := w.AddGroup(func(w io.Writer) (Group, error) {
			_, err := w.Write(s)
			return Group{ID: d.Group, Applied: d.Applied, Clock: d.Clock, Digest: d.Sum}, err
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

func TestBackupRoundTrip(t *testing.T) {
	streams, digests := testStreams(t, 3)
	path := filepath.Join(t.TempDir(), "cluster.backup")
	writeTestBackup(t, path, streams, digests)
	if _, err := os.Stat(path + ".partial"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("partial file left after Commit: %v", err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Verify(); err != nil {
		t.Fatalf("Verify() = %v", err)
	}
	if len(b.Header.Groups) != 3 || b.Header.Created.UnixMilli() != 1_700_000_000_000 {
		t.Fatalf("header = %+v, want 3 groups created at 1700000000000", b.Header)
	}
	for i, g := range b.Header.Groups {
		got, _ := io.ReadAll(b.Stream(g.ID))
		if !bytes.Equal(got, streams[i]) || g.Digest != digests[i].Sum || g.Applied != 7 {
			t.Errorf("group %d: stream or entry differs from what was written (%+v)", i, g)
		}
	}
}

func TestBackupRefusesDamage(t *testing.T) {
	streams, digests := testStreams(t, 2)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.backup")
	writeTestBackup(t, good, streams, digests)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, data []byte) {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		b, err := Open(path)
		if err == nil {
			err = b.Verify()
			b.Close()
		}
		if !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: Open+Verify = %v, want ErrBadBackup", name, err)
		}
	}
	for _, at := range []int{0, 10, 20, 40, 100, len(raw) / 2, len(raw) - 33, len(raw) - 1} {
		bad := bytes.Clone(raw)
		bad[at] ^= 0x40
		check(fmt.Sprintf("flip-%d", at), bad)
	}
	check("truncated", raw[:len(raw)-1])
	check("extended", append(bytes.Clone(raw), 0))
	check("empty", nil)

	// A header whose digest lies, with a checksum recomputed to match:
	// caught by comparing each stream with its entry.
	w, err := Create(filepath.Join(dir, "lying.backup"), time.Now(), 2)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range streams {
		d := digests[i]
		d.Sum[0] ^= 1
		w.AddGroup(func(w io.Writer) (Group, error) {
			_, err := w.Write(s)
			return Group{ID: d.Group, Applied: d.Applied, Clock: d.Clock, Digest: d.Sum}, err
		})
	}
	if _, err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(filepath.Join(dir, "lying.backup"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := b.Verify(); !errors.Is(err, ErrBadBackup) {
		t.Errorf("Verify(header digest differs from stream) = %v, want ErrBadBackup", err)
	}
}

func TestBackupAbortLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.backup")
	w, err := Create(path, time.Now(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err == nil {
		t.Fatal("Commit() with no groups added = nil, want an error")
	}
	for _, p := range []string{path, path + ".partial"} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s exists after a failed Commit", p)
		}
	}
}
