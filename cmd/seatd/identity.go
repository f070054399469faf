package main

import (
	"cmp"
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

// A node's cluster identity (shard/cluster.go): the cluster's id and its
// group count, both fixed when the cluster is bootstrapped and kept in
// every node's DATA_DIR/identityFile. A node decides it once, at its first
// start, before it serves anything:
//
//   - the seed with the smallest id in --peers (the bootstrapper) makes a
//     new id, with --groups (default shard.GroupsDefault);
//   - every other seed, and a node started with --join, learns both from
//     the nodes it names (the seeds, or the --join addresses), waiting up
//     to identityLearnMax for one that answers; a seed given another
//     --groups than the cluster's refuses to start;
//   - on every later start the saved identity is the node's, and a
//     --groups that differs from it is refused: the group count maps shows
//     to groups, so a node with another count would open a second ledger
//     for some shows.
//
// seatd restore seeds a new node's data directory with the backup's group
// count and no id (the new cluster has none yet): the first start then
// bootstraps or learns the id as above, with that count. A data directory
// without the file (made before identities existed) is treated as at a
// first start: nothing has shipped, so there is no upgrade path to keep.

// identityFile is the identity's name inside a data directory.
const identityFile = "cluster.json"

// identityLearnMax bounds how long a node waits, at its first start, for
// a node that tells it the cluster's identity.
const identityLearnMax = 60 * time.Second

// errGroupsMismatch: --groups differs from the cluster's group count.
var errGroupsMismatch = errors.New("--groups differs from the cluster's group count")

// savedIdentity is the file's form.
type savedIdentity struct {
	ClusterID string `json:"cluster_id"`
	Groups    uint32 `json:"groups"`
}

// resolveIdentity returns this node's identity as the comment above
// decides it, saving it on a first start. c.Groups is --groups, 0 when not
// given.
func (c *nodeConfig) resolveIdentity(ctx context.Context) (shard.Identity, error) {
	saved, ok, err := loadIdentity(c.DataDir)
	if err != nil || ok {
		if err == nil {
			err = c.checkGroups(saved.Groups, "this node's data directory says the cluster has")
		}
		return saved, err
	}
	// The count this node must have, if any: --groups, or the backup's
	// (seatd restore), which must agree.
	fixed, source := c.Groups, "it was started with --groups"
	if saved.Groups != 0 {
		if err := c.checkGroups(saved.Groups, "seatd restore seeded its data directory from a backup with"); err != nil {
			return shard.Identity{}, err
		}
		fixed, source = saved.Groups, "seatd restore seeded its data directory from a backup with"
	}
	var id shard.Identity
	switch {
	case len(c.Join) > 0:
		id, err = c.learnIdentity(ctx, joinPeers(c.Join))
	case c.ID == bootstrapper(c.Peers):
		id = shard.Identity{ClusterID: raftnode.NewClusterID(), Groups: cmp.Or(fixed, shard.GroupsDefault)}
		c.Logger.Info("bootstrapping a new cluster", "node", c.ID, "cluster", id.ClusterID.String(), "groups", id.Groups)
	default:
		id, err = c.learnIdentity(ctx, slices.DeleteFunc(slices.Clone(c.Peers), func(p raftnode.Peer) bool { return p.ID == c.ID }))
	}
	if err == nil && fixed != 0 && fixed != id.Groups {
		err = fmt.Errorf("%w: node %s is to have %d groups (%s), but the cluster has %d (fixed when it was bootstrapped)",
			errGroupsMismatch, c.ID, fixed, source, id.Groups)
	}
	if err == nil {
		err = id.Validate()
	}
	if err != nil {
		return shard.Identity{}, err
	}
	return id, saveIdentity(c.DataDir, id)
}

// checkGroups refuses a --groups other than the cluster's count, which
// source names.
func (c *nodeConfig) checkGroups(groups uint32, source string) error {
	if c.Groups != 0 && c.Groups != groups {
		return fmt.Errorf("%w: node %s was started with --groups %d, but %s %d groups (fixed when the cluster was bootstrapped); start it with --groups %d or without --groups",
			errGroupsMismatch, c.ID, c.Groups, source, groups, groups)
	}
	return nil
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
// none, or only the group count seatd restore seeds (then in id.Groups).
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
	if s.ClusterID == "" {
		// Seeded by seatd restore: a group count, no id yet.
		if err := (shard.Map{Groups: s.Groups}).Validate(); err != nil {
			return shard.Identity{}, false, fmt.Errorf("cluster identity %s: %w", path, err)
		}
		return shard.Identity{Groups: s.Groups}, false, nil
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
// rename): a node must never restart with half of it. An identity without
// an id is seatd restore's group count.
func saveIdentity(dir string, id shard.Identity) error {
	saved := savedIdentity{Groups: id.Groups}
	if !id.ClusterID.IsZero() {
		saved.ClusterID = id.ClusterID.String()
	}
	if err := saveJSON(filepath.Join(dir, identityFile), saved); err != nil {
		return fmt.Errorf("save cluster identity: %w", err)
	}
	return nil
}
