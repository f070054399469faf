package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/internal/backup"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// runRestore seeds one node's data directory of a NEW cluster from a backup
// (seatctl snapshot save), before the node first starts. Run it on every
// node with the --id, --peers, --groups and --replicas the node will serve
// with; then start the nodes with seatd serve. The restored node registry
// is --peers (the backup's names the old cluster's machines).
func runRestore(args []string) error {
	return restore(args, os.Stdout)
}

func restore(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("seatd restore", flag.ContinueOnError)
	from := fs.String("from", "", "backup file written by seatctl snapshot save")
	id := fs.String("id", "", "this node's id (must appear in --peers)")
	dataDir := fs.String("data-dir", "", "this node's data directory: absent or empty")
	peersFlag := fs.String("peers", "", "every node of the NEW cluster: ID=RAFT_ADDR/GRPC_ADDR, comma-separated (as for serve)")
	groups := fs.Uint("groups", shard.GroupsDefault, "number of raft groups: must equal the backup's")
	replicas := fs.Int("replicas", 3, "replicas per group (as for serve)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *from == "" || *id == "" || *dataDir == "" || *peersFlag == "" {
		fs.Usage()
		return errors.New("--from, --id, --data-dir and --peers are required")
	}
	peers, err := parsePeers(*peersFlag)
	if err != nil {
		return err
	}
	if err := (shard.Map{Groups: uint32(*groups)}).Validate(); err != nil {
		return err
	}
	if *replicas < 1 {
		return errors.New("--replicas must be at least 1")
	}
	b, err := openVerified(*from, uint32(*groups))
	if err != nil {
		return fmt.Errorf("refusing to restore, nothing was written: %w", err)
	}
	defer b.Close()
	ids := make([]string, len(peers))
	for i, p := range peers {
		ids[i] = p.ID
	}
	placement := shard.Placement(uint32(*groups), ids, *replicas)
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	// The backup's node registry names the old cluster's machines: the new
	// cluster's is its --peers.
	var registry []*ledgerpb.NodeRecord
	for _, p := range peers {
		registry = append(registry, &ledgerpb.NodeRecord{NodeId: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: p.GRPCAddr})
	}
	digests, err := raftnode.Seed(raftnode.SeedConfig{NodeID: *id, DataDir: *dataDir, Peers: peers, Groups: placement, Logger: logger,
		Open:     func(g uint32) (io.Reader, error) { return b.Stream(g), nil },
		Registry: registry, RegistryGroup: shard.Map{Groups: uint32(*groups)}.CatalogGroup()})
	if err == nil {
		err = sameDigests(b.Header, digests)
	}
	if err == nil {
		// The group count is fixed now: the first serve bootstraps or
		// learns the new cluster's id with it (identity.go).
		err = saveIdentity(*dataDir, shard.Identity{Groups: uint32(*groups)})
	}
	if err != nil {
		if !errors.Is(err, raftnode.ErrDataDirNotEmpty) {
			// The directory was empty before: take back what Seed wrote.
			os.RemoveAll(filepath.Join(*dataDir, "state"))
			os.RemoveAll(filepath.Join(*dataDir, "raft"))
			os.Remove(filepath.Join(*dataDir, identityFile))
		}
		return fmt.Errorf("restore: %w", err)
	}
	writeRestored(stdout, *from, *id, *dataDir, b.Header, digests)
	return nil
}

// openVerified opens a backup and checks all of it (checksum, every group's
// stream and digest) and its group count before anything is written.
func openVerified(path string, groups uint32) (*backup.File, error) {
	b, err := backup.Open(path)
	if err != nil {
		return nil, err
	}
	if err := b.Verify(); err != nil {
		b.Close()
		return nil, err
	}
	if n := uint32(len(b.Header.Groups)); n != groups {
		b.Close()
		return nil, fmt.Errorf("the backup has %d groups, --groups is %d: a show's group follows from the group count, so they must be equal", n, groups)
	}
	return b, nil
}

// sameDigests checks that each seeded group's state, read back from Pebble,
// has the digest the backup recorded.
func sameDigests(h backup.Header, seeded map[uint32]fsm.Digest) error {
	for g, d := range seeded {
		if want := h.Groups[g].Digest; d.Sum != want || d.Applied != h.Groups[g].Applied {
			return fmt.Errorf("group %d restored at index %d with digest %x, backup has index %d digest %x", g, d.Applied, d.Sum[:8], h.Groups[g].Applied, want[:8])
		}
	}
	return nil
}

// writeRestored says what was seeded and what to do next.
func writeRestored(w io.Writer, from, id, dir string, h backup.Header, seeded map[uint32]fsm.Digest) {
	fmt.Fprintf(w, "backup %s: %d groups, saved %s, verified\n", from, len(h.Groups), h.Created.UTC().Format(time.RFC3339))
	var gs []uint32
	for g := range seeded {
		gs = append(gs, g)
	}
	slices.Sort(gs)
	for _, g := range gs {
		d := seeded[g]
		fmt.Fprintf(w, "  group %d: index %d digest %x\n", g, d.Applied, d.Sum[:8])
	}
	fmt.Fprintf(w, "seeded %s for node %s (%d groups): start it with seatd serve with the same --id, --peers, --groups and --replicas\n", dir, id, len(gs))
}
