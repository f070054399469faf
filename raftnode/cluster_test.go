// This file proves that cluster identity keeps clusters apart on the raft
// port: two nodes bootstrapped with the same seed list on the same ports
// form one group when they share a cluster id, and when their ids differ
// neither ever learns a leader while each Mux counts the other's
// connections as foreign. It also pins the id's text form.
package raftnode

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// clusterApartWait is how long two nodes of different clusters are
// watched for a leader: ten election timeouts of the test timing.
const clusterApartWait = 2 * time.Second

// startPair starts n1 and n2, of clusters a and b, both bootstrapping
// group 0 over {n1, n2} on fresh loopback ports.
func startPair(t *testing.T, a, b ClusterID) [2]*Node {
	t.Helper()
	dir := t.TempDir()
	var lns [2]net.Listener
	var peers []Peer
	for i, id := range []string{"n1", "n2"} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		peers = append(peers, Peer{ID: id, RaftAddr: ln.Addr().String()})
	}
	var nodes [2]*Node
	for i, cluster := range []ClusterID{a, b} {
		n, err := Start(Config{NodeID: peers[i].ID, DataDir: filepath.Join(dir, peers[i].ID), RaftAddr: peers[i].RaftAddr,
			Listener: lns[i], ClusterID: cluster, Peers: peers, Groups: map[uint32][]string{0: {"n1", "n2"}}, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, BalanceInterval: -1,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatalf("Start(%s) = %v", peers[i].ID, err)
		}
		nodes[i] = n
		t.Cleanup(func() { n.Close() })
	}
	return nodes
}

func leaderOf(n *Node) string {
	g, err := n.Group(0)
	if err != nil {
		return ""
	}
	return g.Leader()
}

func TestClustersOnSamePortsStayApart(t *testing.T) {
	t.Run("same cluster forms one group", func(t *testing.T) {
		// The control: without the id, this is what two clusters with
		// the same seed list on reused ports would do.
		nodes := startPair(t, testClusterID, testClusterID)
		deadline := time.Now().Add(15 * time.Second)
		for leaderOf(nodes[0]) == "" || leaderOf(nodes[0]) != leaderOf(nodes[1]) {
			if time.Now().After(deadline) {
				t.Fatalf("no common leader within 15s: n1 sees %q, n2 sees %q", leaderOf(nodes[0]), leaderOf(nodes[1]))
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("other clusters never hear each other", func(t *testing.T) {
		nodes := startPair(t, testClusterID, ClusterID{0xbb})
		deadline := time.Now().Add(clusterApartWait)
		for time.Now().Before(deadline) {
			for i, n := range nodes {
				if l := leaderOf(n); l != "" {
					t.Fatalf("node %d of a two-node group whose peer is another cluster's sees leader %q, want none", i+1, l)
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		for i, n := range nodes {
			if n.mux.Foreign() == 0 {
				t.Errorf("node %d: Foreign() = 0 after %v of the other cluster's elections, want > 0", i+1, clusterApartWait)
			}
		}
	})
}

func TestClusterIDText(t *testing.T) {
	id := NewClusterID()
	got, err := ParseClusterID(id.String())
	if err != nil || got != id {
		t.Fatalf("ParseClusterID(%s) = %v, %v; want %v", id, got, err, id)
	}
	for _, bad := range []string{"", "xyz", id.String()[:30], id.String() + "00", ClusterID{}.String()} {
		if _, err := ParseClusterID(bad); !errors.Is(err, ErrClusterID) {
			t.Errorf("ParseClusterID(%q) = %v, want ErrClusterID", bad, err)
		}
	}
	if err := (&Config{NodeID: "n1", DataDir: "d", RaftAddr: "a", Peers: []Peer{{ID: "n1", RaftAddr: "a"}}}).Validate(); !errors.Is(err, ErrClusterID) {
		t.Errorf("Validate(no cluster id) = %v, want ErrClusterID", err)
	}
}
