// This file proves cluster identity end to end in one process: the seeds
// of a new cluster share the id the bootstrapper made, each keeps it in its
// data directory, and a node started with --join learns it and the group
// count; the group count is the cluster's, so a node restarted with
// another --groups, or a seed bootstrapping with one, refuses to start
// naming both counts, and one started without --groups takes it; the Peer
// service refuses calls that name another cluster or none, while telling
// every authenticated caller its identity; and a node of another cluster
// started on a port of this one (a port reused) gets none of its raft
// traffic while this cluster keeps serving.
package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

func TestClusterIdentitySharedAndLearned(t *testing.T) {
	c := startCluster(t, false)
	want := c.nodes[0].router.Identity()
	for i, n := range c.nodes {
		saved, ok, err := loadIdentity(n.cfg.DataDir)
		if got := n.router.Identity(); got != want || !ok || err != nil || saved != want {
			t.Fatalf("%s: identity %v, saved %v (%v, %v); want %v in both", c.peers[i].ID, got, saved, ok, err, want)
		}
	}

	// n4 is registered, then started with --join: it learns the id.
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	raftLn, grpcLn := listenLoopback(t, "127.0.0.1:0"), listenLoopback(t, "127.0.0.1:0")
	self := raftnode.Peer{ID: "n4", RaftAddr: raftLn.Addr().String(), GRPCAddr: grpcLn.Addr().String()}
	if _, err := ledgerpb.NewAdminClient(c.conns[0]).AddNode(ctx, &ledgerpb.AddNodeRequest{NodeId: self.ID, RaftAddr: self.RaftAddr, GrpcAddr: self.GRPCAddr}); err != nil {
		t.Fatalf("AddNode(n4) = %v", err)
	}
	cfg := c.config(0)
	cfg.ID, cfg.DataDir, cfg.Peers, cfg.Join = self.ID, filepath.Join(c.dir, self.ID), []raftnode.Peer{self}, []string{c.peers[1].GRPCAddr}
	cfg.Groups = 0 // the cluster's
	cfg.RaftLn, cfg.GRPCLn = raftLn, grpcLn
	n4, err := startNode(cfg)
	if err != nil {
		t.Fatalf("startNode(n4, --join) = %v", err)
	}
	t.Cleanup(func() { n4.close() })
	saved, ok, err := loadIdentity(cfg.DataDir)
	if got := n4.router.Identity(); got != want || !ok || err != nil || saved != want {
		t.Fatalf("joined n4: identity %v, saved %v (%v, %v); want %v", got, saved, ok, err, want)
	}
	if got := n4.router.Map().Groups; got != clusterGroups {
		t.Fatalf("joined n4 without --groups routes over %d groups, want the cluster's %d", got, clusterGroups)
	}
}

func TestGroupCountIsClusterState(t *testing.T) {
	c := startCluster(t, false)
	const other = 16
	c.kill(1)
	if _, err := c.startAgain(1, other); !errors.Is(err, errGroupsMismatch) ||
		!strings.Contains(err.Error(), "--groups 16") || !strings.Contains(err.Error(), "has 4 groups") {
		t.Fatalf("restart n2 with --groups %d = %v, want errGroupsMismatch naming %d and %d", other, err, other, clusterGroups)
	}
	// Without --groups it takes the cluster's, and serves.
	n, err := c.startAgain(1, 0)
	if err != nil {
		t.Fatalf("restart n2 without --groups = %v", err)
	}
	c.nodes[1] = n
	c.waitConnReady(1)
	if got := n.router.Map().Groups; got != clusterGroups {
		t.Fatalf("n2 restarted without --groups routes over %d groups, want %d", got, clusterGroups)
	}
	c.createShow(1, "s-groups")
	c.mustHold(1, "s-groups", "alice", "r1", 0, "A1")

	// A seed's first start with another count than the bootstrapper's.
	cfg := c.config(1)
	cfg.DataDir, cfg.Groups = filepath.Join(c.dir, "n2-fresh"), other
	cfg.RaftLn, cfg.GRPCLn = listenLoopback(t, "127.0.0.1:0"), listenLoopback(t, "127.0.0.1:0")
	if _, err := startNode(cfg); !errors.Is(err, errGroupsMismatch) ||
		!strings.Contains(err.Error(), "16 groups") || !strings.Contains(err.Error(), "has 4") {
		t.Fatalf("first start of a seed with --groups %d = %v, want errGroupsMismatch naming %d and %d", other, err, other, clusterGroups)
	}
	if _, ok, _ := loadIdentity(cfg.DataDir); ok {
		t.Errorf("the refused seed saved an identity")
	}
}

// startAgain starts stopped node i on its data dir and addresses with
// --groups groups (0: none given); the caller keeps the node.
func (c *testCluster) startAgain(i int, groups uint32) (*node, error) {
	c.t.Helper()
	cfg := c.config(i)
	cfg.Groups = groups
	var err error
	if cfg.RaftLn, err = listenAgain(c.peers[i].RaftAddr); err != nil {
		c.t.Fatal(err)
	}
	if cfg.GRPCLn, err = listenAgain(c.peers[i].GRPCAddr); err != nil {
		cfg.RaftLn.Close()
		c.t.Fatal(err)
	}
	return startNode(cfg) // closes the listeners if it fails
}

func TestPeerServiceRefusesOtherClusters(t *testing.T) {
	c := startCluster(t, false)
	want := c.nodes[0].router.Identity()
	conn, err := grpc.NewClient(c.peers[0].GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(testAdminToken)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	peer := ledgerpb.NewPeerClient(conn)
	read := &ledgerpb.ReadRequest{GroupId: c.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_NODES, Hops: 1}
	for _, tc := range []struct {
		name, cluster, reason string
	}{
		{"no cluster id", "", "CLUSTER_ID_REQUIRED"},
		{"another cluster", raftnode.NewClusterID().String(), "OTHER_CLUSTER"},
		{"this cluster", want.ClusterID.String(), ""},
	} {
		ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
		if tc.cluster != "" {
			ctx = metadata.AppendToOutgoingContext(ctx, "seatledger-cluster-id", tc.cluster)
		}
		var hdr metadata.MD
		_, err := peer.Read(ctx, read, grpc.Header(&hdr))
		cancel()
		switch {
		case tc.reason == "" && err != nil:
			t.Errorf("%s: Peer.Read = %v, want OK", tc.name, err)
		case tc.reason != "" && (status.Code(err) != codes.FailedPrecondition || !strings.Contains(errorReason(err), tc.reason)):
			t.Errorf("%s: Peer.Read = %v, want FailedPrecondition %s", tc.name, err, tc.reason)
		}
		if got := hdr.Get("seatledger-cluster-id"); len(got) != 1 || got[0] != want.ClusterID.String() {
			t.Errorf("%s: answer's cluster id header = %q, want %s", tc.name, got, want.ClusterID)
		}
	}
	// What a new node does: the identity comes from the refusal's header.
	ctx, cancel := context.WithTimeout(t.Context(), callTimeout)
	defer cancel()
	got, err := shard.LearnIdentity(ctx, c.peers[:1], shard.PeerDial{Token: testAdminToken})
	if err != nil || got != want {
		t.Errorf("LearnIdentity = %v, %v; want %v", got, err, want)
	}
}

// errorReason is the ErrorInfo reason of a gRPC error, or "".
func errorReason(err error) string {
	for _, d := range status.Convert(err).Details() {
		if r, ok := d.(interface{ GetReason() string }); ok {
			return r.GetReason()
		}
	}
	return ""
}

func TestReusedPortGetsNoRaftTraffic(t *testing.T) {
	c := startCluster(t, false)
	// n3 of this cluster stops; a one-node cluster of another id, also
	// calling itself n3, starts on its addresses (as a test cluster that
	// picked the same free ports would).
	const lost = 2
	c.kill(lost)
	otherLog := &logTail{}
	raftLn, err := listenAgain(c.peers[lost].RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	grpcLn, err := listenAgain(c.peers[lost].GRPCAddr)
	if err != nil {
		raftLn.Close()
		t.Fatal(err)
	}
	cfg := c.config(lost)
	cfg.DataDir, cfg.Peers, cfg.Replicas, cfg.RaftLn, cfg.GRPCLn = filepath.Join(c.dir, "other-n3"), c.peers[lost:], 1, raftLn, grpcLn
	cfg.Logger = slog.New(slog.NewTextHandler(otherLog, &slog.HandlerOptions{Level: slog.LevelWarn}))
	other, err := startNode(cfg)
	if err != nil {
		t.Fatalf("startNode(another cluster's n3) = %v", err)
	}
	t.Cleanup(func() { other.close() })
	if other.router.Identity().ClusterID == c.nodes[0].router.Identity().ClusterID {
		t.Fatalf("the other cluster has this cluster's id %s", other.router.Identity().ClusterID)
	}

	// This cluster still writes, with two of three replicas.
	c.createShow(0, "s-reuse")
	c.mustHold(0, "s-reuse", "alice", "r1", 0, "A1")
	deadline := time.Now().Add(clusterWaitMax)
	for !strings.Contains(otherLog.String(), "another cluster") {
		if time.Now().After(deadline) {
			t.Fatalf("the other cluster's n3 logged no refused connection within %v:\n%s", clusterWaitMax, otherLog)
		}
		time.Sleep(pollInterval)
	}
	// The other n3 leads its own groups alone: nothing of this cluster
	// reached its raft.
	for _, g := range other.raft.Groups() {
		for l := g.Leader(); l != "n3"; l = g.Leader() {
			if time.Now().After(deadline) {
				t.Fatalf("the other cluster's group %d: leader %q after %v, want n3 alone", g.ID(), l, clusterWaitMax)
			}
			time.Sleep(pollInterval)
		}
		if r, err := g.Replicas(); err != nil || len(r) != 1 {
			t.Errorf("the other cluster's group %d: replicas %v, %v; want n3 only", g.ID(), r, err)
		}
	}
}
