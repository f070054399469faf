package raftnode

// The leaderless clock (leaderless.go): raft's own view of the leader wins
// over observations, a lost leader starts the clock once, and a known
// leader stops it; a lone replica of a two-replica group, which can never
// elect a leader, fails fast after two election timeouts.

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"
)

func TestLeaderWatchClock(t *testing.T) {
	var w leaderWatch
	w.start()
	time.Sleep(5 * time.Millisecond)
	if d := w.elapsed(false); d < 5*time.Millisecond {
		t.Fatalf("elapsed(false) after start = %v, want >= 5ms (no leader known since start)", d)
	}
	if d := w.elapsed(true); d != 0 {
		t.Fatalf("elapsed(true) = %v, want 0", d)
	}
	// The leader-lost observation was dropped: raft's view starts the clock.
	if d := w.elapsed(false); d != 0 {
		t.Fatalf("first elapsed(false) after a known leader = %v, want 0", d)
	}
	time.Sleep(5 * time.Millisecond)
	w.observe(false) // a late observation does not restart the clock
	if d := w.elapsed(false); d < 5*time.Millisecond {
		t.Fatalf("elapsed(false) = %v, want >= 5ms", d)
	}
	w.observe(true)
	w.observe(false)
	if d := w.elapsed(false); d > time.Second {
		t.Fatalf("elapsed(false) after a new leader was observed lost = %v, want about 0", d)
	}
}

func TestCheckLeaderFailsFastWithoutQuorum(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	peers := []Peer{{ID: "n1", RaftAddr: ln.Addr().String()}, {ID: "n2", RaftAddr: dead.Addr().String()}}
	const election = 100 * time.Millisecond
	// Before Start: the group's clock starts later, so no ErrNoLeader may
	// come before leaderlessTimeouts election timeouts from here.
	start := time.Now()
	n, err := Start(Config{NodeID: "n1", DataDir: filepath.Join(t.TempDir(), "n1"), RaftAddr: peers[0].RaftAddr, Listener: ln,
		ClusterID: testClusterID, Peers: peers, Groups: map[uint32][]string{0: {"n1", "n2"}}, Bootstrap: true,
		HeartbeatTimeout: election, ElectionTimeout: election, LeaderLeaseTimeout: election / 2,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	g, err := n.Group(0)
	if err != nil {
		t.Fatal(err)
	}
	for {
		err := g.CheckLeader()
		if errors.Is(err, ErrNoLeader) {
			if waited := time.Since(start); waited < leaderlessTimeouts*election {
				t.Fatalf("CheckLeader = %v after %v, want nil before %d election timeouts", err, waited, leaderlessTimeouts)
			}
			return
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("CheckLeader without a leader for %v = %v, want ErrNoLeader", time.Since(start), err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
