// This file proves the peer table: a node starts with its saved table plus
// the seed list (its own entry and dial overrides from the seed list); the
// registry replaces the table but never drops this node or the seed list's
// dial overrides, an empty registry changes nothing, and each change is
// saved so that a restart (of a node that joined without --peers) knows
// its peers; raft's dials resolve through the table.
package raftnode

import (
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/hashicorp/raft"
)

func TestPeerTable(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{NodeID: "n4", DataDir: dir, RaftAddr: "127.0.0.1:7004", ClusterID: testClusterID,
		Peers:  []Peer{{ID: "n4", RaftAddr: "127.0.0.1:7004", GRPCAddr: "127.0.0.1:9004"}, {ID: "n1", RaftAddr: "h:1", GRPCAddr: "h:2", RaftDial: "proxy:1"}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	start := func() *Node {
		t.Helper()
		p, err := initialPeers(cfg)
		if err != nil {
			t.Fatalf("initialPeers: %v", err)
		}
		n := &Node{cfg: cfg}
		n.peers.Store(p)
		return n
	}
	ids := func(n *Node) []string {
		var out []string
		for _, p := range n.Peers() {
			out = append(out, p.ID)
		}
		return out
	}
	n := start()
	if got := ids(n); !slices.Equal(got, []string{"n1", "n4"}) {
		t.Fatalf("initial peers = %v, want the seed list n1,n4", got)
	}
	if changed, err := n.SetPeers(nil); changed || err != nil {
		t.Fatalf("SetPeers(empty registry) = %v, %v; want no change", changed, err)
	}
	registry := []Peer{
		{ID: "n1", RaftAddr: "h:11", GRPCAddr: "h:12"},
		{ID: "n2", RaftAddr: "h:21", GRPCAddr: "h:22", Draining: true},
		{ID: "n4", RaftAddr: "elsewhere:1", GRPCAddr: "elsewhere:2"},
	}
	if changed, err := n.SetPeers(registry); !changed || err != nil {
		t.Fatalf("SetPeers(registry) = %v, %v; want a change", changed, err)
	}
	if changed, _ := n.SetPeers(registry); changed {
		t.Fatalf("SetPeers(same registry) changed the table")
	}
	if got := ids(n); !slices.Equal(got, []string{"n1", "n2", "n4"}) {
		t.Fatalf("peers = %v, want n1,n2,n4", got)
	}
	n1, _ := n.Peer("n1")
	if n1.RaftAddr != "h:11" || n1.RaftTarget() != "proxy:1" {
		t.Errorf("n1 = %+v, want the registry's address dialled through the seed list's proxy", n1)
	}
	if self, _ := n.Peer("n4"); self.RaftAddr != "127.0.0.1:7004" || self.GRPCAddr != "127.0.0.1:9004" {
		t.Errorf("self = %+v, want the addresses it started with", self)
	}
	if p, _ := n.Peer("n2"); !p.Draining {
		t.Errorf("n2 = %+v, want draining", p)
	}
	addr, err := peerAddresses{n}.ServerAddr(raft.ServerID("n2"))
	if err != nil || addr != "h:21" {
		t.Errorf("ServerAddr(n2) = %q, %v; want h:21", addr, err)
	}
	if _, err := (peerAddresses{n}).ServerAddr(raft.ServerID("n9")); err == nil {
		t.Errorf("ServerAddr(n9) = nil error, want one (raft then dials the configuration's address)")
	}

	// A restart without the seed list's n1 (a node that joined lists only
	// itself) starts from the saved table.
	cfg.Peers = cfg.Peers[:1]
	n = start()
	if got := ids(n); !slices.Equal(got, []string{"n1", "n2", "n4"}) {
		t.Fatalf("peers after restart = %v, want the saved n1,n2,n4", got)
	}
	if p, _ := n.Peer("n1"); p.RaftAddr != "h:11" || p.RaftTarget() != "h:11" {
		t.Errorf("n1 after restart = %+v, want its registered address (no proxy without the seed list's)", p)
	}
}
