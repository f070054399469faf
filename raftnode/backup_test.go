// This file proves backup and seeding at the raft layer: a leader's Backup
// holds every acknowledged write (a follower refuses with ErrNotLeader); a
// new three-node cluster seeded from that stream starts with every replica
// at the backup's applied index and digest, raft's log continues after that
// index (a new hold applies, a seat held before the backup stays taken), the
// node registry is the new cluster's on every replica, a replica that lost
// its disk catches up from the seeded snapshot (which holds that registry
// too: its digest ends equal to the leader's), and Seed refuses a data
// directory that is not empty.
package raftnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestBackupSeedsNewCluster(t *testing.T) {
	old := startTestCluster(t, nil)
	g, li := old.leader()
	mustPropose(t, g, testShow())
	for i := range 20 {
		seat := fmt.Sprintf("A%d", i+1)
		if res := mustPropose(t, g, holdCmd("c"+seat, "r"+seat, 600_000, seat)); res.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("Hold(%s) = %v, want OK", seat, res.Code)
		}
	}
	if fg, _ := old.nodes[(li+1)%3].Group(0); fg != nil {
		if _, err := fg.Backup(context.Background()); !errors.Is(err, ErrNotLeader) {
			t.Fatalf("follower Backup() = %v, want ErrNotLeader", err)
		}
	}
	snap, err := g.Backup(context.Background())
	if err != nil {
		t.Fatalf("leader Backup() = %v", err)
	}
	want, err := snap.Digest()
	if err != nil {
		t.Fatal(err)
	}
	var stream bytes.Buffer
	if _, err := snap.WriteTo(&stream); err != nil {
		t.Fatal(err)
	}
	snap.Close()
	if want.Applied != g.Machine().Applied() {
		t.Fatalf("backup at index %d, leader applied %d: want every acknowledged write", want.Applied, g.Machine().Applied())
	}

	// A new cluster on new ports, seeded before its first start.
	dir := t.TempDir()
	var lns []net.Listener
	var peers []Peer
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		peers = append(peers, Peer{ID: "n" + strconv.Itoa(i+1), RaftAddr: ln.Addr().String()})
	}
	groups := map[uint32][]string{0: {"n1", "n2", "n3"}}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var registry []*ledgerpb.NodeRecord
	for i, p := range peers {
		registry = append(registry, &ledgerpb.NodeRecord{NodeId: p.ID, RaftAddr: p.RaftAddr, GrpcAddr: fmt.Sprintf("127.0.0.1:%d", 1+i)})
	}
	for _, p := range peers {
		digests, err := Seed(SeedConfig{NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), Peers: peers, Groups: groups, Logger: quiet,
			Open:     func(uint32) (io.Reader, error) { return bytes.NewReader(stream.Bytes()), nil },
			Registry: registry, RegistryGroup: 0})
		if err != nil {
			t.Fatalf("Seed(%s) = %v", p.ID, err)
		}
		if digests[0] != want {
			t.Fatalf("Seed(%s) digest %v, want the backup's %v", p.ID, digests[0], want)
		}
	}
	if _, err := Seed(SeedConfig{NodeID: "n1", DataDir: filepath.Join(dir, "n1"), Peers: peers, Groups: groups, Logger: quiet,
		Open: func(uint32) (io.Reader, error) { return bytes.NewReader(stream.Bytes()), nil }}); !errors.Is(err, ErrDataDirNotEmpty) {
		t.Fatalf("Seed(used data dir) = %v, want ErrDataDirNotEmpty", err)
	}
	for _, n := range old.nodes {
		n.Close()
	}
	old.nodes = nil

	tc := &testCluster{t: t, dir: dir, peers: peers, cfg: old.cfg}
	for i, p := range peers {
		c := old.cfg(i)
		c.NodeID, c.DataDir, c.RaftAddr, c.Listener, c.Peers = p.ID, filepath.Join(dir, p.ID), p.RaftAddr, lns[i], peers
		n, err := Start(c)
		if err != nil {
			t.Fatalf("Start(seeded %s) = %v", p.ID, err)
		}
		tc.nodes = append(tc.nodes, n)
		t.Cleanup(func() { n.Close() })
	}
	var seeded []string
	for _, n := range tc.nodes {
		ng, _ := n.Group(0)
		got, err := ng.Machine().Digest()
		if err != nil || got.Applied != want.Applied || got == want {
			t.Fatalf("%s digest after start = %v (%v), want the backup's index %d and a new registry", n.ID(), got, err, want.Applied)
		}
		seeded = append(seeded, fmt.Sprint(got))
		v, err := ng.Machine().View()
		if err != nil {
			t.Fatal(err)
		}
		recs, err := v.Nodes()
		v.Close()
		if err != nil || len(recs) != 3 || recs[2].NodeId != "n3" || recs[2].RaftAddr != peers[2].RaftAddr {
			t.Fatalf("%s registry after start = %v (%v), want the new cluster's n1..n3", n.ID(), recs, err)
		}
	}
	if seeded[0] != seeded[1] || seeded[0] != seeded[2] {
		t.Fatalf("seeded digests differ: %v", seeded)
	}
	ng, _ := tc.leader()
	if res := mustPropose(t, ng, holdCmd("d1", "after-A1", 600_000, "A1")); res.Code == ledgerpb.Code_CODE_OK {
		t.Fatalf("Hold(A1) after restore = OK, want it taken by the restored hold")
	}
	if res := mustPropose(t, ng, holdCmd("d2", "after-B1", 600_000, "B1")); res.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("Hold(B1) after restore = %v, want OK", res.Code)
	}
	if got := ng.Machine().Applied(); got <= want.Applied {
		t.Fatalf("applied %d after new writes, want above the backup's %d", got, want.Applied)
	}
	if _, err := os.Stat(filepath.Join(dir, "n1", "raft", "group-0", "raft.db")); err != nil {
		t.Fatal(err)
	}
	// A replica that lost its disk catches up from the seeded snapshot,
	// which the leader sends as it would any snapshot of its own.
	lost := (li + 1) % 3
	if tc.nodes[lost].ID() == ng.node.ID() {
		lost = (lost + 1) % 3
	}
	tc.nodes[lost].Close()
	if err := os.RemoveAll(filepath.Join(dir, peers[lost].ID)); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", peers[lost].RaftAddr)
	if err != nil {
		t.Fatal(err)
	}
	c := old.cfg(lost)
	c.NodeID, c.DataDir, c.RaftAddr, c.Listener, c.Peers, c.Bootstrap = peers[lost].ID, filepath.Join(dir, peers[lost].ID), peers[lost].RaftAddr, ln, peers, false
	n, err := Start(c)
	if err != nil {
		t.Fatalf("Start(wiped %s) = %v", c.NodeID, err)
	}
	tc.nodes[lost] = n
	t.Cleanup(func() { n.Close() })
	deadline := time.Now().Add(10 * time.Second)
	for _, n := range tc.nodes {
		fg, _ := n.Group(0)
		for fg.Machine().Applied() < ng.Machine().Applied() && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if fg.Machine().Applied() < ng.Machine().Applied() {
			t.Fatalf("%s applied %d, leader %d: the replica did not follow after the restore", n.ID(), fg.Machine().Applied(), ng.Machine().Applied())
		}
	}
	lg, _ := tc.nodes[lost].Group(0)
	if idx := lg.Raft().Stats()["last_snapshot_index"]; idx != strconv.FormatUint(want.Applied, 10) {
		t.Errorf("wiped replica's last snapshot index = %s, want the seeded %d", idx, want.Applied)
	}
	leaderDigest, err := ng.Machine().Digest()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := lg.Machine().Digest(); err != nil || got != leaderDigest {
		t.Errorf("wiped replica's digest %v (%v), leader's %v: want equal", got, err, leaderDigest)
	}
}
