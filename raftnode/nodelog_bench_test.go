package raftnode

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"go.etcd.io/bbolt"
)

// BenchmarkLogAppend8Groups measures one round of appends by 8 groups at
// once (each one entry of 200 bytes, fsynced): into the node log, which
// commits what waits together in one bbolt transaction, and into one
// raft-boltdb store per group, as before the node log. It reports the
// appends each commit carried.
//
//	go test -run='^$' -bench=LogAppend -benchtime=200x ./raftnode/
func BenchmarkLogAppend8Groups(b *testing.B) {
	const groups = 8
	data := make([]byte, 200)
	round := func(b *testing.B, stores []raft.LogStore) {
		var wg sync.WaitGroup
		for i := 1; i <= b.N; i++ {
			for _, s := range stores {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := s.StoreLogs([]*raft.Log{{Index: uint64(i), Term: 1, Type: raft.LogCommand, Data: data}}); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
		}
	}
	b.Run("node-log", func(b *testing.B) {
		nl, err := openNodeLog(filepath.Join(b.TempDir(), "log.db"))
		if err != nil {
			b.Fatal(err)
		}
		defer nl.close()
		var commits, appends atomic.Int64
		nl.observe = func(n int) { commits.Add(1); appends.Add(int64(n)) }
		var stores []raft.LogStore
		for g := range groups {
			gl, err := nl.group(uint32(g))
			if err != nil {
				b.Fatal(err)
			}
			stores = append(stores, gl)
		}
		b.ResetTimer()
		cpu := processCPU()
		round(b, stores)
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(float64(appends.Load())/float64(max(commits.Load(), 1)), "appends/commit")
	})
	b.Run("store-per-group", func(b *testing.B) {
		var stores []raft.LogStore
		for range groups {
			s, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "raft.db")})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			stores = append(stores, s)
		}
		b.ResetTimer()
		cpu := processCPU()
		round(b, stores)
		b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
		b.ReportMetric(1, "appends/commit")
	})
}

// processCPU is the process's CPU time (user and system) in nanoseconds:
// an fsync's cost shows as system time.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkLogAppendLoaded measures appends as a loaded node makes them:
// groups whose logs already hold prefill entries each append on their own,
// one append at a time per group as raft does, each append perApp sealed
// entries of a few commands' size. BenchmarkLogAppend8Groups appends into
// an empty log, whose tree is one page deep: here the tree is deeper, as
// in a node that has run for a while (with per-group keys each append also
// dirtied the branch pages above its group's last leaf; with the key
// sequence a commit dirties the sequence's last leaf and its branch). An op is one append; it reports the process's CPU per
// append, the appends each commit carried and the pages bbolt wrote per
// commit (the meta page included).
//
//	go test -run='^$' -bench=LogAppendLoaded -benchtime=20000x ./raftnode/
func BenchmarkLogAppendLoaded(b *testing.B) {
	const (
		groups  = 8
		perApp  = 2
		prefill = 4000
	)
	data := make([]byte, 500)
	nl, err := openNodeLog(filepath.Join(b.TempDir(), "log.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer nl.close()
	var commits, appends atomic.Int64
	nl.observe = func(n int) { commits.Add(1); appends.Add(int64(n)) }
	stores := make([]checkedLogs, groups)
	for g := range groups {
		gl, err := nl.group(uint32(g))
		if err != nil {
			b.Fatal(err)
		}
		stores[g] = checkedLogs{LogStore: gl}
	}
	batch := func(first uint64, n int) []*raft.Log {
		logs := make([]*raft.Log, n)
		for i := range logs {
			logs[i] = &raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
		}
		return logs
	}
	for _, s := range stores {
		for i := uint64(1); i <= prefill; i += 200 {
			if err := s.StoreLogs(batch(i, 200)); err != nil {
				b.Fatal(err)
			}
		}
	}
	before := nl.store.Stats().TxStats
	commits.Store(0)
	appends.Store(0)
	b.ResetTimer()
	cpu := processCPU()
	var wg sync.WaitGroup
	per := (b.N + groups - 1) / groups
	for _, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			next := uint64(prefill + 1)
			for range per {
				if err := s.StoreLogs(batch(next, perApp)); err != nil {
					b.Error(err)
					return
				}
				next += perApp
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	stats := nl.store.Stats().TxStats
	n := float64(per * groups)
	c := float64(max(commits.Load(), 1))
	b.ReportMetric(float64(processCPU()-cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(appends.Load())/c, "appends/commit")
	b.ReportMetric(float64(stats.Write-before.Write)/c, "pages/commit")
}

// BenchmarkBoltCommitShape asks what a node-log commit's CPU would come to
// if its layout or its syncs changed (docs/PERFORMANCE-SHAPE.md, "The node log"):
// raft-boltdb commits of 4 appends of one 600-byte entry (a loaded node's
// commit), with the node log's bbolt options, after prefill rounds of 8
// groups. per-group keys each group's entries as the node log did before
// its key sequence (g<<48 | index), so a commit dirties a leaf and a branch per group; sequential
// keys every entry by one counter, as the node log now does (every
// commit appends to one leaf; its commit records left out); nosync is per-group without the two
// fdatasyncs, which the node log cannot drop: each append must be durable
// before raft acknowledges it. The deep/ cases prefill 18,000 rounds, a
// node's log with raft's defaults (about 18,000 entries a group before a
// compaction), whose full branch pages bbolt copies into element arrays it
// allocates for every group a commit touches: B/op is that garbage, which
// the shallow tree of 4,000 rounds hides (the journal, "One key sequence
// for the node log, measured end to end").
//
//	go test -run='^$' -bench=BoltCommitShape -benchtime=5000x ./raftnode/
func BenchmarkBoltCommitShape(b *testing.B) {
	for _, tc := range []struct {
		name             string
		sequential, skip bool
		prefill          int
	}{
		{"per-group", false, false, 4000}, {"sequential", true, false, 4000}, {"nosync", false, true, 4000},
		{"deep/per-group", false, false, 18000}, {"deep/sequential", true, false, 18000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			const groups, perCommit, prefillPerCommit = 8, 4, 100
			data := make([]byte, 600)
			store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(b.TempDir(), "log.db"), NoSync: tc.skip,
				BoltOptions: &bbolt.Options{NoFreelistSync: true, FreelistType: bbolt.FreelistMapType}})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			next := make([]uint64, groups)
			seq := uint64(0)
			entry := func(g int) *raft.Log {
				next[g]++
				seq++
				idx := uint64(g)<<logIndexBits | next[g]
				if tc.sequential {
					idx = seq
				}
				return &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
			}
			// Rounds of 8 groups, many to a commit: the tree a node's
			// commits would have built, in far fewer syncs.
			for r := 0; r < tc.prefill; r += prefillPerCommit {
				logs := make([]*raft.Log, 0, groups*prefillPerCommit)
				for range min(prefillPerCommit, tc.prefill-r) {
					for g := range groups {
						logs = append(logs, entry(g))
					}
				}
				if err := store.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu := processCPU()
			g := 0
			for range b.N {
				logs := make([]*raft.Log, 0, perCommit)
				for range perCommit {
					logs = append(logs, entry(g%groups))
					g++
				}
				if err := store.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e3, "cpu-µs/commit")
		})
	}
}

// BenchmarkNodeLogStart measures a start's reading of a loaded node log:
// opening it as a node does (the walk of its commit records, and the
// verification of its packs: walk) and opening its 8 groups, each
// of which verifies the entries the packs' did not cover, as a replica's
// start does (group.go, checkedLogs.verifyAll). The log holds 16,384
// entries of 600 bytes a group, appended two at a time by the 8 groups at
// once, as a loaded node's are: so a commit's entries belong to several
// groups, and a group's entries lie in most commits.
//
//	go test -run='^$' -bench=NodeLogStart -benchtime=3x -benchmem ./raftnode/
func BenchmarkNodeLogStart(b *testing.B) {
	path := loadedNodeLog(b)
	b.ResetTimer()
	cpu := processCPU()
	for range b.N {
		nl, err := openNodeLogChecked(path, unseal)
		if err != nil {
			b.Fatal(err)
		}
		for g := range loadedGroups {
			gl, err := nl.group(uint32(g))
			if err != nil {
				b.Fatal(err)
			}
			if err := (checkedLogs{LogStore: gl}).verifyAll(); err != nil {
				b.Fatal(err)
			}
		}
		if err := nl.close(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// BenchmarkNodeLogReadBack reads every entry of the loaded log of
// BenchmarkNodeLogStart once, group after group, as raft reads a group's
// entries past its last snapshot after a start, or a lagging follower's
// from its leader's log: each read decodes the pack that holds the entry.
//
//	go test -run='^$' -bench=NodeLogReadBack -benchtime=3x -benchmem ./raftnode/
func BenchmarkNodeLogReadBack(b *testing.B) {
	path := loadedNodeLog(b)
	nl, err := openNodeLog(path)
	if err != nil {
		b.Fatal(err)
	}
	defer nl.close()
	groups := make([]raft.LogStore, loadedGroups)
	for g := range groups {
		gl, err := nl.group(uint32(g))
		if err != nil {
			b.Fatal(err)
		}
		groups[g] = checkedLogs{LogStore: gl}
	}
	b.ResetTimer()
	cpu := processCPU()
	var l raft.Log
	for range b.N {
		for _, s := range groups {
			for i := uint64(1); i <= loadedEntries; i++ {
				if err := s.GetLog(i, &l); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*loadedGroups*loadedEntries), "cpu-ns/entry")
}

// The loaded node log of BenchmarkNodeLogStart: loadedGroups groups of
// loadedEntries entries.
const (
	loadedGroups  = 8
	loadedEntries = 16384
)

// loadedNodeLog returns the path of a copy of the loaded node log, in the
// benchmark's own directory. The log is written once per test binary
// (writeLoadedNodeLog) and copied for each run: each benchmark runs twice
// under -benchtime Nx, and writing 131,072 entries took most of their
// time in make test.
func loadedNodeLog(b *testing.B) string {
	loaded.once.Do(func() {
		dir, err := os.MkdirTemp("", "raftnode-loaded-")
		if err != nil {
			loaded.err = err
			return
		}
		loaded.dir = dir
		loaded.err = writeLoadedNodeLog(filepath.Join(dir, "log.db"))
	})
	if loaded.err != nil {
		b.Fatal(loaded.err)
	}
	path := filepath.Join(b.TempDir(), "log.db")
	if err := copyFile(path, filepath.Join(loaded.dir, "log.db")); err != nil {
		b.Fatal(err)
	}
	return path
}

// copyFile copies the file at src to a new file at dst.
func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// loaded is the loaded node log written once (loadedNodeLog); TestMain
// removes its directory.
var loaded struct {
	once sync.Once
	dir  string
	err  error
}

// writeLoadedNodeLog writes the loaded node log at path.
func writeLoadedNodeLog(path string) error {
	const (
		groups  = loadedGroups
		perApp  = 2
		entries = loadedEntries
	)
	nl, err := openNodeLog(path)
	if err != nil {
		return err
	}
	data := make([]byte, 600)
	var wg sync.WaitGroup
	errs := make([]error, groups)
	for g := range groups {
		gl, err := nl.group(uint32(g))
		if err != nil {
			nl.close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := checkedLogs{LogStore: gl}
			for i := uint64(1); i <= entries; i += perApp {
				logs := make([]*raft.Log, perApp)
				for k := range logs {
					logs[k] = &raft.Log{Index: i + uint64(k), Term: 1, Type: raft.LogCommand, Data: data, AppendedAt: time.Now()}
				}
				if err := s.StoreLogs(logs); err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		nl.close()
		return err
	}
	return nl.close()
}
