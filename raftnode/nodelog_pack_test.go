package raftnode

// This file proves a commit's pack (nodelog_pack.go): its entries read
// back as written (term, type, data, extensions, the time appended or
// none); a damaged pack is refused, never read; its decoder never panics;
// and logs whose commits keep their entries one to a key (as a seatd
// before packs wrote them) are read, carried on, copied forward and
// reopened beside packed commits.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func packTestLogs() []*raft.Log {
	return []*raft.Log{
		{Term: 3, Type: raft.LogCommand, Data: []byte("one"), AppendedAt: time.Unix(1700000000, 123456789)},
		{Term: 3, Type: raft.LogNoop},
		{Term: 4, Type: raft.LogConfiguration, Data: []byte{0, 1, 2}, Extensions: []byte("ext"), AppendedAt: time.Unix(0, 1)},
		{Term: 1 << 60, Type: raft.LogBarrier, Extensions: []byte("x")},
	}
}

func samePackEntry(got, want *raft.Log) bool {
	return got.Term == want.Term && got.Type == want.Type && bytes.Equal(got.Data, want.Data) &&
		bytes.Equal(got.Extensions, want.Extensions) && got.AppendedAt.Equal(want.AppendedAt) && got.AppendedAt.IsZero() == want.AppendedAt.IsZero()
}

func TestPackRoundTrip(t *testing.T) {
	logs := packTestLogs()
	p := appendPack([]byte("prefix"), logs)[len("prefix"):]
	n, err := checkPack(p)
	if err != nil || n != uint64(len(logs)) {
		t.Fatalf("checkPack = %d, %v; want %d", n, err, len(logs))
	}
	for i, want := range logs {
		var got raft.Log
		packEntry(p, uint64(i), &got)
		if !samePackEntry(&got, want) {
			t.Fatalf("entry %d = %+v, want %+v", i, got, *want)
		}
		if len(got.Data) > 0 && cap(got.Data) != len(got.Data) {
			t.Fatalf("entry %d's data may be appended into the pack", i)
		}
	}
	// Every flipped bit is refused.
	for bit := range len(p) * 8 {
		bad := append([]byte(nil), p...)
		bad[bit/8] ^= 1 << (bit % 8)
		if _, err := checkPack(bad); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("bit %d flipped: checkPack = %v, want ErrCorruptLog", bit, err)
		}
	}
}

// Packed entries go through the store and back whole, the time they were
// appended and their extensions too.
func TestNodeLogPackedEntriesReadBackWhole(t *testing.T) {
	nl := openTestLog(t, filepath.Join(t.TempDir(), "log.db"))
	g := openTestGroup(t, nl, 1)
	logs := packTestLogs()
	for i, l := range logs {
		l.Index = uint64(i + 1)
	}
	if err := g.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	check := func(g *groupLog) {
		t.Helper()
		for i, want := range packTestLogs() {
			var got raft.Log
			if err := g.GetLog(uint64(i+1), &got); err != nil {
				t.Fatal(err)
			}
			if got.Index != uint64(i+1) || !samePackEntry(&got, want) {
				t.Fatalf("GetLog(%d) = %+v, want %+v", i+1, got, *want)
			}
		}
	}
	check(g)
	nl, g = reopen(t, nl, 1)
	defer nl.close()
	check(g)
}

// A pack damaged on disk is refused by every read of its entries, and the
// group's verification.
func TestNodeLogRefusesADamagedPack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log.db")
	nl := openTestLog(t, path)
	g := openTestGroup(t, nl, 1)
	if err := (checkedLogs{LogStore: g}).StoreLogs(entries(1, 1, 6)); err != nil {
		t.Fatal(err)
	}
	loc, _ := g.locOf(3)
	if !loc.packed {
		t.Fatal("an append was not packed")
	}
	var p raft.Log
	if err := nl.store.GetLog(loc.rec+1, &p); err != nil {
		t.Fatal(err)
	}
	p.Data[len(p.Data)/2] ^= 0x10
	if err := nl.store.StoreLog(&p); err != nil {
		t.Fatal(err)
	}
	nl.close()
	nl = openTestLog(t, path)
	defer nl.close()
	g = openTestGroup(t, nl, 1)
	var l raft.Log
	for i := uint64(1); i <= 6; i++ {
		if err := g.GetLog(i, &l); !errors.Is(err, ErrCorruptLog) {
			t.Fatalf("GetLog(%d) of a damaged pack = %v, want ErrCorruptLog", i, err)
		}
	}
	if err := (checkedLogs{LogStore: g}).verifyAll(); !errors.Is(err, ErrCorruptLog) {
		t.Fatalf("verifyAll = %v, want ErrCorruptLog", err)
	}
}

// writeEntryKeyCommit writes, as a seatd before packs did, a commit at
// the log's next key of group id's entries first..last of generation gen,
// one to a key. nl has no writer (loadWithoutWriter).
func writeEntryKeyCommit(t *testing.T, nl *nodeLog, id uint32, first, last uint64, gen int) {
	t.Helper()
	rec := nl.next
	n := last - first + 1
	logs := []*raft.Log{{Index: rec, Type: raft.LogNoop,
		Data: appendCommitRecordVersion(nil, commitEntryKeys, []commitSpan{{kind: spanAppend, group: id, first: first, count: uint32(n)}})}}
	for i, l := range entriesGen(id, first, last, gen) {
		l.Index = rec + 1 + uint64(i)
		logs = append(logs, l)
	}
	if err := nl.store.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	nl.next = rec + 1 + n
}

// A log whose commits keep their entries one to a key is read as it was,
// carried on in packed commits (a conflict's append replacing some of
// them), copied forward by the cleaner and reopened.
func TestNodeLogReadsEntryKeyCommits(t *testing.T) {
	smallCleaner(t)
	path := filepath.Join(t.TempDir(), "log.db")
	openTestLog(t, path).close()
	old := loadWithoutWriter(t, path)
	writeEntryKeyCommit(t, old, 1, 1, 10, 0)
	writeEntryKeyCommit(t, old, 2, 1, 4, 0)
	writeEntryKeyCommit(t, old, 1, 11, 20, 0)
	old.store.Close()

	nl := openTestLog(t, path)
	g1, g2 := openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
	checkRange(t, g1, 1, 20)
	checkRange(t, g2, 1, 4)
	if loc, _ := g1.locOf(5); loc.packed {
		t.Fatal("an entry of an old commit reads as packed")
	}
	// A conflict inside the old entries, and its append, packed.
	deleteRange(t, g1, 16, 20)
	storeGen(t, g1, 16, 25, 1)
	gens := func(i uint64) int { return map[bool]int{true: 1}[i >= 16] }
	checkGens(t, g1, 1, 25, gens)
	if loc, _ := g1.locOf(16); !loc.packed {
		t.Fatal("an append was not packed")
	}
	nl, g1 = reopen(t, nl, 1)
	checkGens(t, g1, 1, 25, gens)
	g2 = openTestGroup(t, nl, 2)
	checkRange(t, g2, 1, 4)

	// The idle group's old entries pin the floor while group 1 appends
	// and compacts: the cleaner copies them forward into a packed commit.
	last := uint64(25)
	for range 60 {
		storeGen(t, g1, last+1, last+6, 1)
		last += 6
		deleteRange(t, g1, 1, last-12)
	}
	tidyUp(t, nl)
	if nl.copied == 0 {
		t.Fatal("the cleaner copied nothing")
	}
	if loc, _ := g2.locOf(1); !loc.packed {
		t.Fatalf("group 2's entries were not copied into a packed commit: %+v", loc)
	}
	checkRange(t, g2, 1, 4)
	checkFloor(t, nl)
	nl, g1 = reopen(t, nl, 1)
	defer nl.close()
	checkGens(t, g1, last-11, last, gens)
	checkRange(t, openTestGroup(t, nl, 2), 1, 4)
}

// The pack's decoder never panics on what it accepts, and what it accepts
// encodes back to the same bytes.
func FuzzPack(f *testing.F) {
	f.Add(appendPack(nil, packTestLogs()))
	f.Add(appendPack(nil, nil))
	f.Add(appendPack(nil, packTestLogs()[:1]))
	f.Add([]byte{packVersion, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		n, err := checkPack(p)
		if err != nil {
			if !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("an error not ErrCorruptLog: %v", err)
			}
			return
		}
		logs := make([]*raft.Log, n)
		for i := range logs {
			logs[i] = new(raft.Log)
			packEntry(p, uint64(i), logs[i])
		}
		if again := appendPack(nil, logs); !bytes.Equal(again, p) {
			t.Fatalf("%x decodes to %d entries, which encode to %x", p, n, again)
		}
	})
}

// rewritePack stores the pack of the commit at rec after edit changed it,
// with its checksum made good again if fix.
func rewritePack(t *testing.T, nl *nodeLog, rec uint64, fix bool, edit func(p []byte)) {
	t.Helper()
	var p raft.Log
	if err := nl.store.GetLog(rec+1, &p); err != nil {
		t.Fatal(err)
	}
	edit(p.Data)
	if fix {
		end := len(p.Data) - 4
		binary.BigEndian.PutUint32(p.Data[end:], crc32.Checksum(p.Data[:end], castagnoli))
	}
	if err := nl.store.StoreLog(&p); err != nil {
		t.Fatal(err)
	}
}

// A node's start verifies each pack once, and every entry in it by its
// seal: a damaged pack, or an entry whose seal fails in a pack whose
// checksum was made good, and the start refuses the log, saying so as a
// group's refusal does. A group then verifies only what the start did
// not: commits that keep their entries one to a key, and packs written
// since.
func TestNodeLogStartVerifiesPacksOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		fix  bool
	}{{"pack", false}, {"seal", true}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log.db")
			openTestLog(t, path).close()
			old := loadWithoutWriter(t, path)
			writeEntryKeyCommit(t, old, 1, 1, 4, 0)
			old.store.Close()
			nl := openTestLog(t, path)
			g1, g2 := openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
			for _, g := range []*groupLog{g1, g2} {
				first, _ := g.bounds()
				if err := (checkedLogs{LogStore: g}).StoreLogs(entries(g.id, max(first, 5), 9)); err != nil {
					t.Fatal(err)
				}
			}
			// Group 1's old entries are not sealed: entries() writes them
			// bare, so verifying them fails, which shows they are read.
			nl.close()
			nl, err := openNodeLogChecked(path, unseal)
			if err != nil {
				t.Fatalf("a sound log refused: %v", err)
			}
			g1, g2 = openTestGroup(t, nl, 1), openTestGroup(t, nl, 2)
			if nl.checkedBelow != nl.next {
				t.Fatalf("checked below %#x, next %#x", nl.checkedBelow, nl.next)
			}
			if err := (checkedLogs{LogStore: g2}).verifyAll(); err != nil {
				t.Fatalf("group 2: %v", err)
			}
			if err := (checkedLogs{LogStore: g1}).verifyAll(); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("group 1's bare entries one to a key: verifyAll = %v, want ErrCorruptLog", err)
			}
			// Packs written since the start are verified by the group.
			if err := g2.StoreLogs(entries(2, 10, 10)); err != nil {
				t.Fatal(err)
			}
			if err := (checkedLogs{LogStore: g2}).verifyAll(); !errors.Is(err, ErrCorruptLog) {
				t.Fatalf("group 2's bare entry packed since the start: verifyAll = %v, want ErrCorruptLog", err)
			}
			deleteRange(t, g2, 10, 10)
			loc, _ := g2.locOf(7)
			nl.close()

			old = loadWithoutWriter(t, path)
			rewritePack(t, old, loc.rec, tc.fix, func(p []byte) { p[len(p)-6] ^= 0x01 })
			old.store.Close()
			bad, err := openNodeLogChecked(path, unseal)
			if !errors.Is(err, ErrCorruptLog) || !strings.Contains(err.Error(), "refuses to start on a damaged log") {
				if bad != nil {
					bad.close()
				}
				t.Fatalf("a damaged %s: openNodeLogChecked = %v, want a refusal", tc.name, err)
			}
		})
	}
}
