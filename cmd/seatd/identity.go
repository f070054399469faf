package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// A node's cluster identity (shard/cluster.go): the cluster's id, fixed
// when the cluster is bootstrapped and kept in every node's
// DATA_DIR/identityFile with the group count. A node decides it once, at
// its first start, before it serves anything:
//
//   - the seed with the smallest id in --peers (the bootstrapper) makes a
//     new id;
//   - every other seed, and a node started with --join, learns it from
//     the nodes it names (the seeds, or the --join addresses), waiting up
//     to identityLearnMax for one that answers;
//   - on every later start the saved identity is the node's.
//
// A data directory without the file (made before identities existed, or
// seeded by seatd restore) is treated as at a first start: nothing has
// shipped, so there is no upgrade path to keep.

// identityFile is the identity's name inside a data directory.
const identityFile = "cluster.json"

// identityLearnMax bounds how long a node waits, at its first start, for
// a node that tells it the cluster's identity.
const identityLearnMax = 60 * time.Second

// savedIdentity is the file's form.
type savedIdentity struct {
	ClusterID string `json:"cluster_id"`
	Groups    uint32 `json:"groups"`
}

// resolveIdentity returns this node's identity as the comment above
// decides it, saving it on a first start.
func (c *nodeConfig) resolveIdentity(ctx context.Context) (shard.Identity, error) {
	saved, ok, err := loadIdentity(c.DataDir)
	if err != nil || ok {
		return saved, err
	}
	want := c.Groups
	var id shard.Identity
	switch {
	case len(c.Join) > 0:
		id, err = c.learnIdentity(ctx, joinPeers(c.Join))
	case c.ID == bootstrapper(c.Peers):
		id = shard.Identity{ClusterID: raftnode.NewClusterID(), Groups: want}
		c.Logger.Info("bootstrapping a new cluster", "node", c.ID, "cluster", id.ClusterID.String(), "groups", id.Groups)
	default:
		id, err = c.learnIdentity(ctx, slices.DeleteFunc(slices.Clone(c.Peers), func(p raftnode.Peer) bool { return p.ID == c.ID }))
	}
	if err == nil {
		err = id.Validate()
	}
	if err != nil {
		return shard.Identity{}, err
	}
	return id, saveIdentity(c.DataDir, id)
}

// learnIdentity asks peers for the cluster's identity.
func (c *nodeConfig) learnIdentity(ctx context.Context, peers []raftnode.Peer) (shard.Identity, error) {
	dial := shard.PeerDial{Token: c.AdminToken}
	if c.TLS != nil {
		dial.TLS = c.TLS.PeerClient()
	}
	names := make([]string, len(peers))
	for i, p := range peers {
		names[i] = p.GRPCTarget()
	}
	c.Logger.Info("learning the cluster's identity", "node", c.ID, "from", strings.Join(names, ","))
	ctx, cancel := context.WithTimeout(ctx, identityLearnMax)
	defer cancel()
	id, err := shard.LearnIdentity(ctx, peers, dial)
	if err != nil {
		return shard.Identity{}, fmt.Errorf("node %s has no cluster identity yet and none of %s told it theirs within %v (at a new cluster's first start, %s makes it: start that node too): %w",
			c.ID, strings.Join(names, ", "), identityLearnMax, bootstrapper(c.Peers), err)
	}
	c.Logger.Info("learned the cluster's identity", "node", c.ID, "cluster", id.ClusterID.String(), "groups", id.Groups)
	return id, nil
}

// bootstrapper is the seed that makes a new cluster's id: the smallest id,
// so every seed agrees however --peers is ordered.
func bootstrapper(peers []raftnode.Peer) string {
	if len(peers) == 0 {
		return ""
	}
	return slices.MinFunc(peers, func(a, b raftnode.Peer) int { return strings.Compare(a.ID, b.ID) }).ID
}

// joinPeers names --join addresses as peers to learn from.
func joinPeers(addrs []string) []raftnode.Peer {
	out := make([]raftnode.Peer, len(addrs))
	for i, a := range addrs {
		out[i] = raftnode.Peer{GRPCAddr: a}
	}
	return out
}

// loadIdentity reads a data directory's identity; ok is false if it has
// none.
func loadIdentity(dir string) (id shard.Identity, ok bool, err error) {
	path := filepath.Join(dir, identityFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return shard.Identity{}, false, nil
	}
	if err != nil {
		return shard.Identity{}, false, fmt.Errorf("read cluster identity: %w", err)
	}
	var s savedIdentity
	if err := json.Unmarshal(b, &s); err != nil {
		return shard.Identity{}, false, fmt.Errorf("cluster identity %s: %w", path, err)
	}
	cid, err := raftnode.ParseClusterID(s.ClusterID)
	if err == nil {
		id = shard.Identity{ClusterID: cid, Groups: s.Groups}
		err = id.Validate()
	}
	if err != nil {
		return shard.Identity{}, false, fmt.Errorf("cluster identity %s: %w", path, err)
	}
	return id, true, nil
}

// saveIdentity writes the identity atomically (temporary file, fsync,
// rename): a node must never restart with half of it.
func saveIdentity(dir string, id shard.Identity) error {
	b, err := json.MarshalIndent(savedIdentity{ClusterID: id.ClusterID.String(), Groups: id.Groups}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}
	path := filepath.Join(dir, identityFile)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}
	return nil
}
