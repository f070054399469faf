package raftnode

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"
)

// A replica's raft server id is its node id for a replica bootstrapped with
// the group (incarnation 0, the ids every cluster had before incarnations),
// and node id + incarnationSep + incarnation (16 hex digits) for a replica
// HostGroup started: "n1#9f86d081884c7d65". The reasons are in
// membership.go; this file holds the mechanics.
//
// The incarnation also travels in the raft address the transport dials
// ("host:port#9f86d081884c7d65", from peerAddresses) so the layer's Dial
// can write it in the connection header and the receiving Mux can refuse
// a connection addressed to another incarnation of the group's replica
// (mux.go). An address without a suffix is incarnation 0: a bootstrapped
// replica's, or a node's (the heartbeat layer dials those).

// incarnationSep separates a node id from its replica's incarnation; node
// ids may not contain it (Config.Validate).
const incarnationSep = "#"

// incarnationFile, in the group's directory, holds the replica's
// incarnation; a directory without one (a replica bootstrapped with the
// cluster) is incarnation 0.
const incarnationFile = "INCARNATION"

// replicaID is the raft server id of node's replica with incarnation inc.
func replicaID(node string, inc uint64) raft.ServerID {
	if inc == 0 {
		return raft.ServerID(node)
	}
	return raft.ServerID(node + incarnationSep + formatIncarnation(inc))
}

// nodeOf is the node a raft server id names: the id without its
// incarnation. Everything that maps a server id to a node (leader hints,
// routing, the balancer, metrics, membership) goes through it.
func nodeOf(id raft.ServerID) string {
	node, _, _ := strings.Cut(string(id), incarnationSep)
	return node
}

// incarnationOf is the incarnation a server id or raft address names; 0
// without a suffix, or with one that does not parse (which then matches no
// incarnated replica either).
func incarnationOf(s string) uint64 {
	_, inc, ok := strings.Cut(s, incarnationSep)
	if !ok {
		return 0
	}
	v, err := strconv.ParseUint(inc, 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// withIncarnation appends inc to a raft address (none for 0).
func withIncarnation(addr string, inc uint64) string {
	if inc == 0 {
		return addr
	}
	return addr + incarnationSep + formatIncarnation(inc)
}

// dialAddr is the network address of a raft address: without incarnation.
func dialAddr(addr string) string {
	host, _, _ := strings.Cut(addr, incarnationSep)
	return host
}

func formatIncarnation(inc uint64) string { return fmt.Sprintf("%016x", inc) }

// newIncarnation draws a random, non-zero incarnation. Random rather than
// counted: a counter must be kept somewhere a crash between DropGroup's
// wipe and its tombstone, or a replaced disk, can lose it and so hand out
// an incarnation again; 64 random bits repeat for one (node, group) with a
// chance of about n²/2⁶⁵ over n re-hosts, and need no record but the
// replica's own.
func newIncarnation() (uint64, error) {
	var b [8]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, fmt.Errorf("raftnode: draw an incarnation: %w", err)
		}
		if v := binary.BigEndian.Uint64(b[:]); v != 0 {
			return v, nil
		}
	}
}

// readIncarnation reads a group directory's incarnation; 0 when there is
// no incarnation file (a bootstrapped replica, or an older data dir).
func readIncarnation(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, incarnationFile))
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("raftnode: read incarnation: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 16, 64)
	if err != nil || v == 0 {
		return 0, fmt.Errorf("raftnode: incarnation file %s holds %q, want 16 hex digits", filepath.Join(dir, incarnationFile), strings.TrimSpace(string(b)))
	}
	return v, nil
}

// writeIncarnation records inc in dir, synced (file and directory), before
// the replica first runs: a restart must come back as the same server.
func writeIncarnation(dir string, inc uint64) error {
	path := filepath.Join(dir, incarnationFile)
	if err := writeFileSynced(path, []byte(formatIncarnation(inc)+"\n")); err != nil {
		return fmt.Errorf("raftnode: write incarnation %s: %w", path, err)
	}
	return nil
}

// writeFileSynced writes a small file and makes it, and its entry in its
// directory, durable before it returns.
func writeFileSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(filepath.Dir(path))
	}
	return err
}

// syncDir makes a directory's entries (a new or removed file) durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// serverID is the raft server id under which node appears in the group's
// current configuration, or node's plain id (incarnation 0) if it does not
// appear: for raft calls that name a server (leadership transfer).
func (g *Group) serverID(node string) raft.ServerID {
	if id, ok := g.memberID(node); ok {
		return id
	}
	return raft.ServerID(node)
}

// memberID finds node's server id in the group's current configuration.
func (g *Group) memberID(node string) (raft.ServerID, bool) {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return "", false
	}
	for _, s := range f.Configuration().Servers {
		if nodeOf(s.ID) == node {
			return s.ID, true
		}
	}
	return "", false
}
