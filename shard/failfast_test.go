// This file proves fail-fast under a real partition (DESIGN 4, Outcomes):
// three nodes over real raft and gRPC on 127.0.0.1, each peer link through
// a jepsen/netproxy Link. One follower is cut from its peers (connections
// dropped, new ones accepted and blackholed). Within two election timeouts
// of losing its leader, it answers writes and linearizable reads at once
// with raftnode.ErrNoLeader, never holding a call until the client gives
// up, and still serves stale reads from its replica; the other two keep
// serving writes; after the heal it serves writes again.
package shard

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/jepsen/netproxy"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Raft timing of the partition test: the election timeout.
const (
	cutElection  = 300 * time.Millisecond
	cutHeartbeat = 300 * time.Millisecond
)

// cutCluster is three nodes hosting group 0; links[i][j] carry node i's
// raft and gRPC dials to node j.
type cutCluster struct {
	t       *testing.T
	routers []*Router
	links   [][][]*netproxy.Link
}

func startCutCluster(t *testing.T) *cutCluster {
	t.Helper()
	const n = 3
	c := &cutCluster{t: t, links: make([][][]*netproxy.Link, n)}
	var raftLns, grpcLns []net.Listener
	var real []raftnode.Peer
	for i := range n {
		raftLns, grpcLns = append(raftLns, fwdListen(t)), append(grpcLns, fwdListen(t))
		real = append(real, raftnode.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: raftLns[i].Addr().String(), GRPCAddr: grpcLns[i].Addr().String()})
	}
	dir := t.TempDir()
	for i := range n {
		peers := append([]raftnode.Peer(nil), real...)
		c.links[i] = make([][]*netproxy.Link, n)
		for j := range n {
			if j == i {
				continue
			}
			for _, target := range []string{real[j].RaftAddr, real[j].GRPCAddr} {
				l, err := netproxy.Listen(fmt.Sprintf("n%d->n%d", i+1, j+1), target, uint64(10*i+j))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { l.Close() })
				c.links[i][j] = append(c.links[i][j], l)
			}
			peers[j].RaftDial, peers[j].GRPCDial = c.links[i][j][0].Addr(), c.links[i][j][1].Addr()
		}
		rn, err := raftnode.Start(raftnode.Config{
			NodeID: real[i].ID, DataDir: filepath.Join(dir, real[i].ID), RaftAddr: real[i].RaftAddr, Listener: raftLns[i],
			ClusterID: raftnode.ClusterID{1}, Peers: peers, Groups: map[uint32][]string{0: {"n1", "n2", "n3"}}, Bootstrap: true,
			HeartbeatTimeout: cutHeartbeat, ElectionTimeout: cutElection,
			LeaderLeaseTimeout: cutHeartbeat / 2, CommitTimeout: 5 * time.Millisecond,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("raftnode.Start(%s): %v", real[i].ID, err)
		}
		r := NewRouter(rn, Map{Groups: 1})
		gs := grpc.NewServer()
		ledgerpb.RegisterPeerServer(gs, r.PeerServer())
		go gs.Serve(grpcLns[i])
		// Last in, first out: the links close after, so raft's own
		// connections do not wait out their timeouts.
		t.Cleanup(func() {
			gs.Stop()
			r.Close()
			rn.Close()
		})
		c.routers = append(c.routers, r)
	}
	return c
}

// leader waits for a ready leader of group 0 and returns its index.
func (c *cutCluster) leader() int {
	c.t.Helper()
	for deadline := time.Now().Add(fwdWait); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, r := range c.routers {
			g, err := r.node.Group(0)
			if err != nil || !g.IsLeader() {
				continue
			}
			if _, err := r.SeatMap(c.t.Context(), "none", ledgerpb.Consistency_LINEARIZABLE); errors.Is(err, ErrShowNotFound) {
				return i
			}
		}
	}
	c.t.Fatalf("no ready leader of group 0 within %v", fwdWait)
	return -1
}

// cut cuts (or heals) every link to and from node v.
func (c *cutCluster) cut(v int, cut bool) {
	for i := range c.links {
		for j := range c.links[i] {
			if i != v && j != v {
				continue
			}
			for _, l := range c.links[i][j] {
				if cut {
					l.Cut()
				} else {
					l.Heal()
				}
			}
		}
	}
}

func cutHold(show, client, req, seat string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: req,
		Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: show, SeatIds: []string{seat}}}}
}

func TestCutOffNodeFailsFast(t *testing.T) {
	c := startCutCluster(t)
	li := c.leader()
	vi := (li + 1) % 3 // a follower to cut off
	lead, victim := c.routers[li], c.routers[vi]
	show := &ledgerpb.Show{ShowId: "s", Title: "Fail fast",
		Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 1000, Currency: "EUR"}}}
	for _, row := range "ABCDEFGHIJ" {
		show.Rows = append(show.Rows, &ledgerpb.Row{Name: string(row), Seats: 20, Category: "std"})
	}
	key := make([]byte, fsm.TokenKeyBytes)
	rand.Read(key)
	propose := func(r *Router, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
		ctx, cancel := context.WithTimeout(t.Context(), fwdWait)
		defer cancel()
		return r.Propose(ctx, "s", cmd)
	}
	if res, err := propose(lead, &ledgerpb.Command{ClientId: "admin", RequestId: "create",
		Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show, TokenKey: key}}}); err != nil || res.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("CreateShow = %v, %v, want OK", res, err)
	}
	if res, err := propose(victim, cutHold("s", "v", "before", "A1")); err != nil || res.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("Hold(A1) through n%d before the cut = %v, %v, want OK", vi+1, res, err)
	}

	c.cut(vi, true)
	cutAt := time.Now()
	// The follower notices the silence within two heartbeat timeouts (raft
	// randomizes it), then fails fast after two election timeouts; the
	// margin is this shared machine's.
	bound := 2*cutHeartbeat + 2*cutElection + time.Second
	// fast bounds one answer once failing fast: no wait on the group.
	const fast = 300 * time.Millisecond
	var failedFastAt time.Duration
	for i := 0; ; i++ {
		start := time.Now()
		_, err := propose(victim, cutHold("s", "v", fmt.Sprintf("cut-%d", i), fmt.Sprintf("B%d", i%20+1)))
		if errors.Is(err, raftnode.ErrNoLeader) {
			failedFastAt = time.Since(cutAt)
			break
		}
		if err == nil || !(errors.Is(err, raftnode.ErrOutcomeUnknown) || errors.Is(err, raftnode.ErrUnavailable)) {
			t.Fatalf("Hold through the cut-off n%d = %v after %v, want ErrNoLeader, or unknown/unavailable before it", vi+1, err, time.Since(start))
		}
		if time.Since(cutAt) > bound {
			t.Fatalf("Hold through the cut-off n%d = %v %v after the cut, want ErrNoLeader within %v", vi+1, err, time.Since(cutAt), bound)
		}
	}
	t.Logf("n%d cut off: its first ErrNoLeader %v after the cut", vi+1, failedFastAt)
	if failedFastAt > bound {
		t.Errorf("the cut-off n%d failed fast %v after the cut, want within %v", vi+1, failedFastAt, bound)
	}

	for i := range 5 {
		start := time.Now()
		_, err := propose(victim, cutHold("s", "v", fmt.Sprintf("fast-%d", i), fmt.Sprintf("C%d", i+1)))
		if took := time.Since(start); !errors.Is(err, raftnode.ErrNoLeader) || took > fast {
			t.Errorf("Hold(C%d) through the cut-off n%d = %v after %v, want ErrNoLeader within %v", i+1, vi+1, err, took, fast)
		}
		start = time.Now()
		_, err = victim.SeatMap(t.Context(), "s", ledgerpb.Consistency_LINEARIZABLE)
		if took := time.Since(start); !errors.Is(err, raftnode.ErrNoLeader) || took > fast {
			t.Errorf("linearizable SeatMap at the cut-off n%d = %v after %v, want ErrNoLeader within %v", vi+1, err, took, fast)
		}
		if sm, err := victim.SeatMap(t.Context(), "s", ledgerpb.Consistency_STALE); err != nil || sm.Consistency != ledgerpb.Consistency_STALE {
			t.Errorf("stale SeatMap at the cut-off n%d = %v, want served from its replica", vi+1, err)
		}
		if res, err := propose(lead, cutHold("s", "m", fmt.Sprintf("major-%d", i), fmt.Sprintf("D%d", i+1))); err != nil || res.Code != ledgerpb.Code_CODE_OK {
			t.Errorf("Hold(D%d) at the majority's leader n%d during the cut = %v, %v, want OK", i+1, li+1, res, err)
		}
	}

	c.cut(vi, false)
	healAt := time.Now()
	for i := 0; ; i++ {
		res, err := propose(victim, cutHold("s", "v", "after", "E1"))
		if err == nil && res.Code == ledgerpb.Code_CODE_OK {
			break
		}
		if time.Since(healAt) > fwdWait {
			t.Fatalf("Hold(E1) through n%d %v after the heal = %v, %v, want OK", vi+1, time.Since(healAt), res, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("n%d served a write again %v after the heal", vi+1, time.Since(healAt))
}
