// This file measures the write path below the API: many concurrent
// proposals of one-seat holds to the leaders of one or eight groups in a
// 3-node cluster over loopback TCP, with the raft log fsynced as in
// production. It reports the
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

// benchClusterGroups starts three nodes hosting groups 0..groups-1 with
// production timings.
func benchClusterGroups(b *testing.B, groups int) []*Node {
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
	hosted := map[uint32][]string{}
	for g := range groups {
		hosted[uint32(g)] = []string{"n1", "n2", "n3"}
	}
	for i, p := range peers {
		n, err := Start(Config{NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, Listener: lns[i], ClusterID: testClusterID,
			Peers: peers, Groups: hosted, Bootstrap: true,
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
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

// benchPropose proposes b.N one-seat holds from clients goroutines, spread
// over groups groups whose leaders the balancer has spread over the three
// nodes, each to its group's leader. It reports the process's CPU per
// command (the three nodes and the clients) and commands per entry.
func benchPropose(b *testing.B, groups, clients int) {
	nodes := benchClusterGroups(b, groups)
	leaders := benchSpread(b, nodes, groups)
	ctx := context.Background()
	perGroup := (b.N + groups - 1) / groups
	shows := (perGroup + benchSeatsPerShow - 1) / benchSeatsPerShow
	var first uint64
	for g, l := range leaders {
		for s := range shows {
			if res, err := l.Propose(ctx, benchShow(fmt.Sprintf("g%d-s%d", g, s))); err != nil || res.Code != ledgerpb.Code_CODE_OK {
				b.Fatalf("CreateShow = %v, %v", res, err)
			}
		}
		first += l.Machine().Applied()
	}
	var next atomic.Int64
	var failed atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	cpu := processCPU()
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
				g, j := i%groups, i/groups
				seat := j % benchSeatsPerShow
				cmd := &ledgerpb.Command{ClientId: fmt.Sprintf("c%d-%d", c, i), RequestId: fmt.Sprintf("r%d", i),
					Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: fmt.Sprintf("g%d-s%d", g, j/benchSeatsPerShow),
						SeatIds: []string{fmt.Sprintf("%c%d", 'A'+seat/500, seat%500+1)}}}}
				res, err := leaders[g].Propose(ctx, cmd)
				if err != nil || res.Code != ledgerpb.Code_CODE_OK {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d holds failed", n, b.N)
	}
	var last uint64
	for _, l := range leaders {
		last += l.Machine().Applied()
	}
	if entries := last - first; entries > 0 {
		b.ReportMetric(float64(b.N)/float64(entries), "cmds/entry")
	}
}

// benchSpread waits until every group has a ready leader and no node leads
// more than its share, and returns each group's leader.
func benchSpread(b *testing.B, nodes []*Node, groups int) []*Group {
	share := (groups + len(nodes) - 1) / len(nodes)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		leaders := make([]*Group, groups)
		led := map[*Node]int{}
		ok := true
		for g := range groups {
			for _, n := range nodes {
				if gr, _ := n.Group(uint32(g)); gr != nil && gr.leaderReady() {
					leaders[g] = gr
					led[n]++
				}
			}
			ok = ok && leaders[g] != nil
		}
		for _, c := range led {
			ok = ok && c <= share
		}
		if ok {
			return leaders
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatal("leaders not spread within 30s")
	return nil
}

func BenchmarkPropose1(b *testing.B)   { benchPropose(b, 1, 1) }
func BenchmarkPropose256(b *testing.B) { benchPropose(b, 1, 256) }

// BenchmarkPropose8Groups is the shape of a loaded cluster: 8 groups led
// 3/3/2, 32 clients per group, so that a node-log commit carries several
// groups' appends and their AppendEntries share frames (append.go).
func BenchmarkPropose8Groups(b *testing.B) { benchPropose(b, 8, 256) }
