//go:build faults

package raftnode

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// init reads LogCleanerEnv (nodelog_clean.go), in a faults build only.
func init() {
	v := os.Getenv(LogCleanerEnv)
	if v == "" {
		return
	}
	var n [4]uint64
	parts := strings.Split(v, ",")
	for i := range n {
		var err error
		if len(parts) != len(n) {
			panic(fmt.Sprintf("%s=%q: want four numbers, minStep,deleteChunk,copyAfter,copyChunk", LogCleanerEnv, v))
		}
		if n[i], err = strconv.ParseUint(strings.TrimSpace(parts[i]), 10, 32); err != nil || n[i] == 0 {
			panic(fmt.Sprintf("%s=%q: want four positive numbers, minStep,deleteChunk,copyAfter,copyChunk", LogCleanerEnv, v))
		}
	}
	nodeLogCleaner = cleanerTuning{minStep: n[0], deleteChunk: n[1], copyAfter: n[2], copyChunk: n[3]}
}

// CorruptLogEntry flips one bit in the data of one entry of one group's
// log in the node log under dataDir, for the fault harness (jepsen/, built
// with -tags faults: nothing else may break a log): the node must be
// stopped, and must then refuse to start. pick(n) chooses in
// [0, n). It returns what it changed.
func CorruptLogEntry(dataDir string, pick func(n int) int) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(dataDir, "raft", "group-*"))
	if err != nil {
		return "", err
	}
	var ids []uint32
	for _, d := range dirs {
		if id, err := strconv.ParseUint(strings.TrimPrefix(filepath.Base(d), "group-"), 10, 32); err == nil {
			ids = append(ids, uint32(id))
		}
	}
	slices.Sort(ids)
	path := nodeLogPath(dataDir)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("no raft log under %s: %w", dataDir, err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: path})
	if err != nil {
		return "", err
	}
	defer store.Close()
	// The commit records map the groups' entries to their keys, as the
	// node's start reads them.
	nl, err := loadNodeLog(store, path, nil)
	if err != nil {
		return "", err
	}
	type span struct {
		g *groupLog
		b logBounds
	}
	var spans []span
	for _, id := range ids {
		// group finds the last index past the recorded bounds (and
		// finishes an interrupted removal), as the node's start will.
		g, err := nl.group(id)
		if err != nil {
			return "", err
		}
		if first, last := g.bounds(); last > 0 {
			spans = append(spans, span{g, logBounds{first: first, last: last}})
		}
	}
	if len(spans) == 0 {
		return "", fmt.Errorf("no group has entries in %s", path)
	}
	s := spans[pick(len(spans))]
	idx := s.b.first + uint64(pick(int(s.b.last-s.b.first+1)))
	loc, ok := s.g.locOf(idx)
	if !ok {
		return "", fmt.Errorf("entry %d of group %d has no key", idx, s.g.id)
	}
	var l raft.Log
	if err := nl.readEntry(loc, &l); err != nil {
		return "", fmt.Errorf("entry %d of group %d: %w", idx, s.g.id, err)
	}
	if len(l.Data) == 0 {
		return "", fmt.Errorf("entry %d of group %d has no data", idx, s.g.id)
	}
	bit := pick(len(l.Data) * 8)
	if loc.packed {
		// The entry's data lies inside its commit's pack, as read: flip
		// the bit there (the pack's checksum then fails too).
		var p raft.Log
		if err := store.GetLog(loc.rec+1, &p); err != nil {
			return "", fmt.Errorf("the pack of entry %d of group %d: %w", idx, s.g.id, err)
		}
		var in raft.Log
		if _, err := checkPack(p.Data); err != nil {
			return "", err
		}
		packEntry(p.Data, loc.key-loc.rec-1, &in)
		in.Data[bit/8] ^= 1 << (bit % 8)
		l = p
	} else {
		l.Data[bit/8] ^= 1 << (bit % 8)
	}
	if err := store.StoreLog(&l); err != nil {
		return "", err
	}
	return fmt.Sprintf("group-%d entry %d bit %d", s.g.id, idx, bit), nil
}
