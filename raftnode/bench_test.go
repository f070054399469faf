// This file measures the write path below the API: many concurrent
// proposals of one-seat holds to one group's leader in a 3-node cluster over
// loopback TCP, with the raft log fsynced as in production. It reports the
// cost per command and how many commands each raft entry carried (group
// commit). Compare runs with benchstat:
//
//	go test -run='^$' -bench=Propose -benchtime=20000x -count=6 ./raftnode/
package raftnode

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// benchCluster starts three nodes hosting group 0 with production timings.
func benchCluster(b *testing.B) []*Node {
	dir := b.TempDir()
	var lns []net.Listener
	var peers []Peer
	for i := range 3 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		lns = append(lns, ln)
		peers = append(peers, Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: ln.Addr().String()})
	}
	var nodes []*Node
	b.Cleanup(func() {
		for _, n := range nodes {
			n.Close()
		}
	})
	for i, p := range peers {
		n, err := Start(Config{NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, Listener: lns[i], ClusterID: testClusterID,
			Peers: peers, Groups: map[uint32][]string{0: {"n1", "n2", "n3"}}, Bootstrap: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func benchLeader(b *testing.B, nodes []*Node) *Group {
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if g, _ := n.Group(0); g.leaderReady() {
				return g
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Fatal("no ready leader within 20s")
	return nil
}

// benchSeatsPerShow is the size of each show the benchmark creates.
const benchSeatsPerShow = 10000

func benchShow(id string) *ledgerpb.Command {
	show := &ledgerpb.Show{ShowId: id, Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}}}
	for r := range 20 {
		show.Rows = append(show.Rows, &ledgerpb.Row{Name: string(rune('A' + r)), Seats: 500, Category: "std"})
	}
	return &ledgerpb.Command{ClientId: "admin", RequestId: "create-" + id, Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show}}}
}

func benchPropose(b *testing.B, clients int) {
	nodes := benchCluster(b)
	g := benchLeader(b, nodes)
	ctx := context.Background()
	shows := (b.N + benchSeatsPerShow - 1) / benchSeatsPerShow
	for s := range shows {
		if res, err := g.Propose(ctx, benchShow(fmt.Sprintf("s%d", s))); err != nil || res.Code != ledgerpb.Code_CODE_OK {
			b.Fatalf("CreateShow = %v, %v", res, err)
		}
	}
	first := g.Machine().Applied()
	var next atomic.Int64
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= b.N {
					return
				}
				seat := i % benchSeatsPerShow
				cmd := &ledgerpb.Command{ClientId: fmt.Sprintf("c%d-%d", c, i), RequestId: fmt.Sprintf("r%d", i),
					Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: fmt.Sprintf("s%d", i/benchSeatsPerShow),
						SeatIds: []string{fmt.Sprintf("%c%d", 'A'+seat/500, seat%500+1)}}}}
				res, err := g.Propose(ctx, cmd)
				if err != nil || res.Code != ledgerpb.Code_CODE_OK {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d holds failed", n, b.N)
	}
	if entries := g.Machine().Applied() - first; entries > 0 {
		b.ReportMetric(float64(b.N)/float64(entries), "cmds/entry")
	}
}

func BenchmarkPropose1(b *testing.B)   { benchPropose(b, 1) }
func BenchmarkPropose256(b *testing.B) { benchPropose(b, 256) }
