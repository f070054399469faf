// This file proves the raft layer over real TCP with real stores: group
// commit delivers each command's own result to its caller; followers refuse
// proposals and linearizable reads with ErrNotLeader; the leader's expiry
// driver frees due holds; and a follower that fell behind a compacted log
// catches up by installing a snapshot, ending with the leader's digest.
package raftnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// testCluster is three nodes hosting one group (id 0).
type testCluster struct {
	t     *testing.T
	dir   string
	peers []Peer
	nodes []*Node
	cfg   func(i int) Config
}

func startTestCluster(t *testing.T, tune func(*Config)) *testCluster {
	t.Helper()
	tc := &testCluster{t: t, dir: t.TempDir()}
	var lns []net.Listener
	for i := 0; i < 3; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		tc.peers = append(tc.peers, Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: ln.Addr().String()})
	}
	tc.cfg = func(i int) Config {
		c := Config{
			NodeID: tc.peers[i].ID, DataDir: filepath.Join(tc.dir, tc.peers[i].ID), RaftAddr: tc.peers[i].RaftAddr, ClusterID: testClusterID,
			Peers: tc.peers, Groups: map[uint32][]string{0: {"n1", "n2", "n3"}}, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			ExpireInterval: 20 * time.Millisecond,
			Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		if tune != nil {
			tune(&c)
		}
		return c
	}
	for i := range tc.peers {
		c := tc.cfg(i)
		c.Listener = lns[i]
		n, err := Start(c)
		if err != nil {
			t.Fatalf("Start(%s): %v", c.NodeID, err)
		}
		tc.nodes = append(tc.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n != nil {
				n.Close()
			}
		}
	})
	return tc
}

// leader waits for the group's leader to be ready for reads and writes.
func (tc *testCluster) leader() (*Group, int) {
	tc.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		for i, n := range tc.nodes {
			if n == nil {
				continue
			}
			if g, _ := n.Group(0); g.leaderReady() {
				return g, i
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	tc.t.Fatal("no ready leader within 15s")
	return nil, 0
}

func testShow() *ledgerpb.Command {
	show := &ledgerpb.Show{ShowId: "s1", Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}}}
	for _, r := range []string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J"} {
		show.Rows = append(show.Rows, &ledgerpb.Row{Name: r, Seats: 50, Category: "std"})
	}
	return &ledgerpb.Command{ClientId: "admin", RequestId: "create", Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show}}}
}

func holdCmd(client, req string, ttlMs int64, seats ...string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: req,
		Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: "s1", SeatIds: seats, TtlMs: ttlMs}}}
}

func mustPropose(t *testing.T, g *Group, cmd *ledgerpb.Command) *ledgerpb.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := g.Propose(ctx, cmd)
	if err != nil {
		t.Fatalf("Propose(%s/%s) error: %v", cmd.ClientId, cmd.RequestId, err)
	}
	return res
}

func TestGroupCommitDeliversEachResult(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	before := g.Machine().Applied()
	const n = 400
	var wg sync.WaitGroup
	errs := make(chan string, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			seat := fmt.Sprintf("%c%d", 'A'+i/50, i%50+1)
			res, err := g.Propose(context.Background(), holdCmd(fmt.Sprintf("c%d", i), "r", 0, seat))
			switch {
			case err != nil:
				errs <- fmt.Sprintf("Hold(%s) error %v", seat, err)
			case res.Code != ledgerpb.Code_CODE_OK || len(res.SeatIds) != 1 || res.SeatIds[0] != seat:
				errs <- fmt.Sprintf("Hold(%s) = %v %v, want OK with its own seat", seat, res.Code, res.SeatIds)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	entries := g.Machine().Applied() - before
	t.Logf("%d holds in %d log entries", n, entries)
	if entries >= n {
		t.Errorf("%d concurrent holds took %d entries: group commit did not batch", n, entries)
	}
}

func TestFollowerRefusesProposalsAndLinearizableReads(t *testing.T) {
	tc := startTestCluster(t, nil)
	_, li := tc.leader()
	f, _ := tc.nodes[(li+1)%3].Group(0)
	if _, err := f.Propose(context.Background(), testShow()); err != ErrNotLeader {
		t.Errorf("follower Propose error = %v, want ErrNotLeader", err)
	}
	if _, err := f.View(context.Background(), true); err == nil {
		t.Error("follower linearizable View succeeded, want ErrNotLeader")
	}
	v, err := f.View(context.Background(), false)
	if err != nil {
		t.Fatalf("follower stale View: %v", err)
	}
	v.Close()
}

func TestLeaderExpiresDueHolds(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	res := mustPropose(t, g, holdCmd("c1", "r1", 1000, "A1", "A2"))
	if res.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("Hold(A1,A2) = %v, want OK", res.Code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := g.View(context.Background(), true)
		if err != nil {
			t.Fatal(err)
		}
		h, err := v.Hold(res.HoldId)
		next, pending, _ := v.NextExpiry()
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		// Expired by an Expire entry: the expiry index no longer has it.
		if h.State == ledgerpb.HoldState_HOLD_STATE_EXPIRED && !pending {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("hold %s state %v, expiry index pending=%v (next %d) after 10s; want expired by the leader", res.HoldId, h.State, pending, next)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowerCatchesUpFromSnapshot(t *testing.T) {
	tc := startTestCluster(t, func(c *Config) { c.SnapshotThreshold = 64; c.TrailingLogs = 8 })
	g, li := tc.leader()
	mustPropose(t, g, testShow())
	// The follower has more than TrailingLogs entries when it goes down:
	// raft once kept the last of them below the installed snapshot, a gap
	// that made the follower refuse to restart.
	for i := 0; i < 20; i++ {
		mustPropose(t, g, holdCmd(fmt.Sprintf("early%d", i), "r", 0, fmt.Sprintf("J%d", i+1)))
	}
	fi := (li + 1) % 3
	early, _ := tc.nodes[fi].Group(0)
	waitApplied(t, early, g.Machine().Applied(), 10*time.Second)
	tc.nodes[fi].Close()
	tc.nodes[fi] = nil
	for i := 0; i < 300; i++ {
		seat := fmt.Sprintf("%c%d", 'A'+i/50, i%50+1)
		if res := mustPropose(t, g, holdCmd(fmt.Sprintf("c%d", i), fmt.Sprintf("r%d", i), 0, seat)); res.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("Hold(%s) = %v, want OK", seat, res.Code)
		}
	}
	// Snapshot and compact so the follower cannot catch up from the log.
	if err := g.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("leader snapshot: %v", err)
	}
	// The leader's snapshot keeps its index only (snapshots.go), and the
	// state it sends comes from past that index: the follower must skip
	// the entries between them that raft replicates after the install.
	metas, err := g.metrics.snaps.List()
	if err != nil || len(metas) == 0 || metas[0].Size != 0 {
		t.Fatalf("the leader's snapshots: %+v, %v; want the newest without data", metas, err)
	}
	for i := 0; i < 10; i++ {
		mustPropose(t, g, holdCmd(fmt.Sprintf("after%d", i), "r", 0, fmt.Sprintf("I%d", i+1)))
	}
	n, err := Start(tc.cfg(fi))
	if err != nil {
		t.Fatalf("restart follower: %v", err)
	}
	tc.nodes[fi] = n
	fg, _ := n.Group(0)
	deadline := time.Now().Add(15 * time.Second)
	waitApplied(t, fg, g.Machine().Applied(), 15*time.Second)
	// raft records the installed snapshot only after the state machine's
	// Restore has returned (and moved Applied): wait for it too.
	for fg.Raft().Stats()["last_snapshot_index"] == "0" && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if idx := fg.Raft().Stats()["last_snapshot_index"]; idx == "0" {
		t.Errorf("follower caught up without installing a snapshot (last_snapshot_index %s)", idx)
	}
	sameDigest(t, "the follower after the install", fg, g)
	if metas, err := fg.metrics.snaps.List(); err != nil || len(metas) == 0 || metas[0].Size == 0 {
		t.Errorf("the follower's snapshots: %+v, %v; want the installed one with its data", metas, err)
	}
	// The leader removes a sent snapshot's file once raft closes it,
	// after the install's answer: soon, not at once.
	waitFor(t, "the leader removes the files of snapshots it sent", func() bool {
		left, _ := filepath.Glob(filepath.Join(groupDirOf(tc.cfg(li).DataDir, 0), sendingPattern))
		return len(left) == 0
	})
	// The follower restarts on the log the install left, with entries after
	// the snapshot (every group verifies its whole log when it opens).
	for i := 0; i < 5; i++ {
		mustPropose(t, g, holdCmd(fmt.Sprintf("late%d", i), "r", 0, fmt.Sprintf("J%d", 30+i)))
	}
	waitApplied(t, fg, g.Machine().Applied(), 10*time.Second)
	tc.nodes[fi].Close()
	tc.nodes[fi] = nil
	if n, err = Start(tc.cfg(fi)); err != nil {
		t.Fatalf("restart after the install: %v", err)
	}
	tc.nodes[fi] = n
}

// TestCrashReplaysWhatTheStoreLost: the state store has no WAL, so a crash
// loses what no flush reached, and the replica must come back through
// raft's replay to the state of its peers. Raft restarts from the last
// snapshot's index (NoSnapshotRestoreOnStart), which the snapshot made
// durable in the store before raft recorded it.
func TestCrashReplaysWhatTheStoreLost(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	for i := range 30 {
		mustPropose(t, leader, holdCmd(fmt.Sprintf("c%d", i), "r", 0, fmt.Sprintf("A%d", i+1)))
	}
	fi := (li + 1) % 3
	fg, _ := tc.nodes[fi].Group(0)
	waitApplied(t, fg, leader.Machine().Applied(), 10*time.Second)
	if err := fg.raft.Snapshot().Error(); err != nil {
		t.Fatalf("snapshot on %s: %v", tc.peers[fi].ID, err)
	}
	snapAt := fg.Machine().Applied()
	for i := range 20 {
		mustPropose(t, leader, holdCmd(fmt.Sprintf("d%d", i), "r", 0, fmt.Sprintf("B%d", i+1)))
	}
	waitApplied(t, fg, leader.Machine().Applied(), 10*time.Second)
	tc.nodes[fi].noFlushOnClose = true
	tc.nodes[fi].Close()
	n, err := Start(tc.cfg(fi))
	if err != nil {
		t.Fatalf("restart %s: %v", tc.peers[fi].ID, err)
	}
	tc.nodes[fi] = n
	fg, _ = n.Group(0)
	if got := fg.Machine().Applied(); got < snapAt {
		t.Fatalf("after a crash %s's store is at %d, below its snapshot at %d", tc.peers[fi].ID, got, snapAt)
	}
	leader, _ = tc.leader()
	mustPropose(t, leader, holdCmd("e", "r", 0, "C1"))
	waitApplied(t, fg, leader.Machine().Applied(), 10*time.Second)
	sameDigest(t, "after a crash and replay, "+tc.peers[fi].ID, fg, leader)
}

// waitApplied waits until g has applied index, at most within.
func waitApplied(t *testing.T, g *Group, index uint64, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for g.Machine().Applied() < index {
		if time.Now().After(deadline) {
			t.Fatalf("%s applied %d, want %d within %v", g.self, g.Machine().Applied(), index, within)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sameDigest fails the test unless got's state digest is want's.
func sameDigest(t *testing.T, what string, got, want *Group) {
	t.Helper()
	g, err := got.Machine().Digest()
	if err != nil {
		t.Fatal(err)
	}
	w, err := want.Machine().Digest()
	if err != nil {
		t.Fatal(err)
	}
	if g != w {
		t.Errorf("%s: digest %v, the leader's %v: want equal", what, g, w)
	}
}
