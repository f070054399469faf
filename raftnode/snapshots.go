package raftnode

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/fsm"
)

// Raft's snapshots of a group, kept as their index only.
//
// Raft snapshots a group every SnapshotThreshold entries so that it may
// drop the log below it (keeping TrailingLogs more), and reads a
// snapshot back for one thing only: to send it to a follower whose next
// entry it no longer has (NoSnapshotRestoreOnStart: a restart replays from
// Pebble, checkpoint.go). Writing the group's whole state to a file at
// every snapshot cost a long run tens of MB a group every minute or so, in
// bursts on the disk the raft log's fsyncs wait on, and twice the store's
// size in disk space, for files that were hardly ever read.
//
// So a snapshot the group takes itself holds no data: the adapter's
// Snapshot makes the state at its index durable in Pebble (a checkpoint,
// so raft may drop the entries below it) and its Persist writes nothing,
// leaving raft's file store a snapshot with its metadata (index, term,
// configuration) and an empty state file. When raft opens such a snapshot
// to send it, lazySnapshots streams the group's state as applied now, at
// an index at or past the snapshot's: the follower installs it, raft
// resumes its log after the snapshot's index, and its state machine skips
// the entries it already holds, as it does after a crash (every entry up
// to the state's applied index is committed, so they are the same
// entries). The stream is spooled to a file first, because raft sends the
// snapshot's size before its bytes; the file goes once sent.
//
// Snapshots with data remain what they were: those a follower received
// from its leader, and the one `seatd restore` seeds. Raft reads them as
// written.
type lazySnapshots struct {
	*raft.FileSnapshotStore
	// dir holds the files of snapshots being sent (the group's
	// directory, beside raft's snapshots/).
	dir string
	m   *fsm.Machine
	// reap makes List wait for a sink's Close, which removes the
	// snapshots past the two newest: a List between its directory read
	// and a removed snapshot's metadata logged "failed to read metadata"
	// (raft lists to send a follower a snapshot while it takes another).
	reap sync.Mutex
	// newest is the newest snapshot's index and size, for the metrics:
	// set at open from a listing, then by each sink's Close, so a scrape
	// lists no directory (a listing during a snapshot's write logged
	// raft's WARN "found temporary snapshot"). Held by reap.
	newest struct{ index, size uint64 }
}

// Newest returns the index and size of the newest snapshot (0, 0 before
// the first).
func (s *lazySnapshots) Newest() (index, size uint64) {
	s.reap.Lock()
	defer s.reap.Unlock()
	return s.newest.index, s.newest.size
}

// List lists the snapshots, newest first, never beside a sink's Close.
func (s *lazySnapshots) List() ([]*raft.SnapshotMeta, error) {
	s.reap.Lock()
	defer s.reap.Unlock()
	return s.FileSnapshotStore.List()
}

// Create starts a snapshot whose Close (which reaps) List waits for.
func (s *lazySnapshots) Create(version raft.SnapshotVersion, index, term uint64, configuration raft.Configuration,
	configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.FileSnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, err
	}
	return &reapingSink{SnapshotSink: sink, store: s, index: index}, nil
}

// reapingSink is a file store's sink whose Close holds the store's reap
// lock and records the snapshot as the newest.
type reapingSink struct {
	raft.SnapshotSink
	store *lazySnapshots
	index uint64
	size  uint64
}

func (r *reapingSink) Write(p []byte) (int, error) {
	n, err := r.SnapshotSink.Write(p)
	r.size += uint64(n)
	return n, err
}

func (r *reapingSink) Close() error {
	r.store.reap.Lock()
	defer r.store.reap.Unlock()
	if err := r.SnapshotSink.Close(); err != nil {
		return err
	}
	if r.index >= r.store.newest.index {
		r.store.newest.index, r.store.newest.size = r.index, r.size
	}
	return nil
}

// sendingPattern names the files of snapshots being sent.
const sendingPattern = "sending-snapshot-*.tmp"

// newLazySnapshots wraps the group's file store, removing files a crash
// left mid-send.
func newLazySnapshots(files *raft.FileSnapshotStore, dir string, m *fsm.Machine) (*lazySnapshots, error) {
	left, err := filepath.Glob(filepath.Join(dir, sendingPattern))
	if err != nil {
		return nil, err
	}
	for _, p := range left {
		os.Remove(p)
	}
	s := &lazySnapshots{FileSnapshotStore: files, dir: dir, m: m}
	metas, err := files.List()
	if err != nil {
		return nil, err
	}
	if len(metas) > 0 {
		s.newest.index, s.newest.size = metas[0].Index, uint64(metas[0].Size)
	}
	return s, nil
}

// Open returns a snapshot's metadata and its stream: the file's for a
// snapshot with data, the group's current state for one without.
func (s *lazySnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.FileSnapshotStore.Open(id)
	if err != nil || meta.Size > 0 {
		return meta, rc, err
	}
	rc.Close()
	f, err := os.CreateTemp(s.dir, sendingPattern)
	if err != nil {
		return nil, nil, fmt.Errorf("raftnode: snapshot %s: %w", id, err)
	}
	fail := func(err error) (*raft.SnapshotMeta, io.ReadCloser, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, nil, fmt.Errorf("raftnode: snapshot %s: %w", id, err)
	}
	snap, err := s.m.CurrentSnapshot()
	if err != nil {
		return fail(err)
	}
	if snap.Applied() < meta.Index {
		snap.Close()
		return fail(fmt.Errorf("the state machine is at %d, below the snapshot's index %d", snap.Applied(), meta.Index))
	}
	n, err := snap.WriteTo(f) // buffers its writes itself
	snap.Close()
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		return fail(err)
	}
	sent := *meta
	sent.Size = n
	return &sent, sendingFile{f}, nil
}

// sendingFile is a spooled snapshot: read once, removed when closed.
type sendingFile struct{ *os.File }

func (s sendingFile) Close() error {
	err := s.File.Close()
	os.Remove(s.Name())
	return err
}
