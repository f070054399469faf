package raftnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Backup and restore of a group's state (seatctl snapshot save, seatd
// restore). A backup is one fsm snapshot stream per group, taken on each
// group's leader; a restore seeds a NEW cluster's data directories from it
// before the nodes first start.

// ErrDataDirNotEmpty: Seed refuses a data directory that holds anything.
var ErrDataDirNotEmpty = errors.New("raftnode: data directory is not empty")

// Backup returns a snapshot of the group's state that includes every write
// acknowledged before the call (linearizable): on the leader, a barrier
// entry commits at a quorum (so this replica still leads) and is applied
// here before the state is pinned. Close the snapshot when done.
func (g *Group) Backup(ctx context.Context) (*fsm.Snapshot, error) {
	if !g.IsLeader() {
		return nil, ErrNotLeader
	}
	timeout := barrierTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if err := g.raft.Barrier(timeout).Error(); err != nil {
		if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
			return nil, ErrNotLeader
		}
		return nil, fmt.Errorf("%w: barrier of group %d: %v", ErrUnavailable, g.id, err)
	}
	return g.machine.Snapshot()
}

// SeedConfig describes seeding a new node's data directory from group
// snapshots, before the node's first start.
type SeedConfig struct {
	NodeID  string
	DataDir string
	// Peers and Groups are what the node will start with (Config): the
	// node seeds exactly the groups whose replicas name it.
	Peers  []Peer
	Groups map[uint32][]string
	// Open returns a reader of a group's fsm snapshot stream.
	Open func(group uint32) (io.Reader, error)
	// Registry, when not empty, replaces the node registry of group
	// RegistryGroup (the catalog group) once it is restored: the backup's
	// registry names the old cluster's nodes and addresses (fsm.ResetNodes).
	// Every node of the new cluster must seed the same Registry.
	Registry      []*ledgerpb.NodeRecord
	RegistryGroup uint32
	Logger        *slog.Logger
}

// Validate reports the first thing wrong with the config: what Config
// checks of the node, peers and groups, and a snapshot source.
func (c *SeedConfig) Validate() error {
	if c.Open == nil {
		return errors.New("raftnode: seeding needs a snapshot source")
	}
	if _, ok := c.Groups[c.RegistryGroup]; len(c.Registry) > 0 && !ok {
		return fmt.Errorf("raftnode: registry group %d is not a group of the cluster", c.RegistryGroup)
	}
	// RaftAddr and ClusterID are not used to seed; Config.Validate wants
	// them.
	check := Config{NodeID: c.NodeID, DataDir: c.DataDir, RaftAddr: "seed", ClusterID: ClusterID{1}, Peers: c.Peers, Groups: c.Groups}
	return check.Validate()
}

// Seed writes, for every group this node will host, the group's state into
// Pebble and a raft snapshot of it at the state's applied index, with the
// group's initial configuration. It returns each seeded group's digest,
// computed from Pebble after the restore and before any registry reset (so
// it can be checked against the backup's). DataDir must be empty or absent.
//
// Why a raft snapshot: the FSM skips entries at or below its applied index
// (idempotent apply), and the restored applied index A comes from the old
// cluster. A group bootstrapped the usual way starts its log at index 1, so
// every write up to A would be skipped. Seeded instead with a snapshot at
// index A (term 1) holding the configuration, raft starts with lastIndex =
// lastApplied = A and appends from A+1 on: the FSM's index and raft's agree,
// revisions keep growing from the backup's, and a replica that falls behind
// before the first real snapshot is sent this one, which holds the same
// state as its peers' Pebble. NoSnapshotRestoreOnStart keeps raft from restoring it again on
// start: Pebble has it already.
func Seed(cfg SeedConfig) (map[uint32]fsm.Digest, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := requireEmptyDir(cfg.DataDir); err != nil {
		return nil, err
	}
	db, err := fsm.OpenDB(filepath.Join(cfg.DataDir, "state"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[uint32]fsm.Digest{}
	ids := make([]uint32, 0, len(cfg.Groups))
	for id, replicas := range cfg.Groups {
		if slices.Contains(replicas, cfg.NodeID) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	for _, id := range ids {
		m, err := fsm.NewMachine(db, id)
		if err != nil {
			return nil, err
		}
		if err := m.UseScratchDir(cfg.DataDir); err != nil {
			return nil, err
		}
		r, err := cfg.Open(id)
		if err != nil {
			return nil, err
		}
		if err := m.Restore(r); err != nil {
			return nil, fmt.Errorf("raftnode: restore group %d: %w", id, err)
		}
		d, err := m.Digest()
		if err != nil {
			return nil, err
		}
		if len(cfg.Registry) > 0 && id == cfg.RegistryGroup {
			if err := fsm.ResetNodes(db, id, cfg.Registry); err != nil {
				return nil, err
			}
		}
		if err := seedRaft(cfg, m); err != nil {
			return nil, err
		}
		out[id] = d
		cfg.Logger.Info("seeded group", "node", cfg.NodeID, "group", id, "applied_index", d.Applied, "replicas", cfg.Groups[id])
	}
	return out, nil
}

// seedTerm is the term of a seeded snapshot: the new cluster's first.
const seedTerm = 1

// seedRaft creates the group's raft log (empty, term 1) and a snapshot at
// the machine's applied index holding the group's state as seeded in Pebble
// (a reset registry included, so a replica sent this snapshot before the
// first real one gets what its peers have) and its initial configuration.
func seedRaft(cfg SeedConfig, m *fsm.Machine) error {
	id, applied := m.Group(), m.Applied()
	dir := groupDirOf(cfg.DataDir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("raftnode: group dir: %w", err)
	}
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: false})
	if err != nil {
		return fmt.Errorf("raftnode: create raft log of group %d: %w", id, err)
	}
	defer store.Close()
	// Raft's own key (raftseam.go): BootstrapCluster sets it to 1 too.
	if err := store.SetUint64(keyCurrentTerm, seedTerm); err != nil {
		return fmt.Errorf("raftnode: set term of group %d: %w", id, err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, newRaftLogger(cfg.Logger, slog.LevelWarn))
	if err != nil {
		return fmt.Errorf("raftnode: snapshot store of group %d: %w", id, err)
	}
	var conf raft.Configuration
	for _, node := range cfg.Groups[id] {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(node), Address: raft.ServerAddress(peerAddr(cfg.Peers, node))})
	}
	// A group that never applied a command (applied 0) still needs a
	// snapshot index of at least 1: raft's indexes start there. Entries
	// then start at 2, above the FSM's 0, so nothing is skipped.
	index := max(applied, 1)
	// The transport only encodes peers for the legacy meta field, as the
	// network transport does (the address itself).
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	sink, err := snaps.Create(raft.SnapshotVersionMax, index, seedTerm, conf, index, trans)
	if err != nil {
		return fmt.Errorf("raftnode: create snapshot of group %d: %w", id, err)
	}
	snap, err := m.Snapshot()
	if err != nil {
		sink.Cancel()
		return err
	}
	defer snap.Close()
	if _, err := snap.WriteTo(sink); err != nil {
		sink.Cancel()
		return fmt.Errorf("raftnode: write snapshot of group %d: %w", id, err)
	}
	if err := sink.Close(); err != nil {
		return fmt.Errorf("raftnode: write snapshot of group %d: %w", id, err)
	}
	return nil
}

// requireEmptyDir accepts an absent or empty directory.
func requireEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("raftnode: read data dir: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("%w: %s holds %s (restore seeds a new node only)", ErrDataDirNotEmpty, dir, entries[0].Name())
	}
	return nil
}
