// This file proves ProposeAll: commands queued together go into one entry
// (into ceil(n/BatchCommandsMax) entries when there are more), each caller
// position gets its own command's result, single proposals made meanwhile
// still get theirs, and a follower refuses them all with ErrNotLeader.
// Queue then Wait: a Wait whose ctx has ended answers each queued command
// with its result or ErrOutcomeUnknown, never leaves one unanswered, and
// the commands it gave up on are applied once (a retry is a replay); a
// ctx ended before Queue queues none (ErrUnavailable, not appended).
package raftnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestProposeAllSharesEntries(t *testing.T) {
	const max = 8
	tc := startTestCluster(t, func(c *Config) { c.BatchCommandsMax = max })
	g, li := tc.leader()
	mustPropose(t, g, testShow())
	seatOf := func(i int) string { return fmt.Sprintf("%c%d", 'A'+i/50, i%50+1) }
	for _, tt := range []struct{ n, entries int }{{5, 1}, {max, 1}, {20, 3}} {
		cmds := make([]*ledgerpb.Command, tt.n)
		for i := range cmds {
			cmds[i] = holdCmd(fmt.Sprintf("c%d-%d", tt.n, i), "r", 0, seatOf(100+10*tt.n+i))
		}
		before := g.Machine().Applied()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		results, errs := g.ProposeAll(ctx, cmds)
		cancel()
		for i := range cmds {
			if seat := seatOf(100 + 10*tt.n + i); errs[i] != nil || results[i].Code != ledgerpb.Code_CODE_OK || results[i].SeatIds[0] != seat {
				t.Errorf("ProposeAll of %d: [%d] = %v, %v; want OK holding %s", tt.n, i, results[i], errs[i], seat)
			}
		}
		// Count the entries that carry these commands, not every entry
		// applied meanwhile: the leader's own drivers (expiry, pruning)
		// may append theirs in between.
		if got := entriesCarrying(t, g, before, g.Machine().Applied(), fmt.Sprintf("c%d-", tt.n)); got != tt.entries {
			t.Errorf("ProposeAll of %d commands (at most %d an entry) took %d entries, want %d", tt.n, max, got, tt.entries)
		}
	}

	// Mixed with single proposals: every command gets its own result, and
	// no entry holds more than max (the FSM would refuse it).
	var wg sync.WaitGroup
	for k := range 4 {
		wg.Go(func() {
			cmds := make([]*ledgerpb.Command, 6)
			for i := range cmds {
				cmds[i] = holdCmd(fmt.Sprintf("m%d-%d", k, i), "r", 0, seatOf(300+10*k+i))
			}
			results, errs := g.ProposeAll(context.Background(), cmds)
			for i := range cmds {
				if errs[i] != nil || results[i].SeatIds[0] != seatOf(300+10*k+i) {
					t.Errorf("ProposeAll %d [%d] = %v, %v", k, i, results[i], errs[i])
				}
			}
		})
		wg.Go(func() {
			seat := seatOf(400 + k)
			if res, err := g.Propose(context.Background(), holdCmd(fmt.Sprintf("s%d", k), "r", 0, seat)); err != nil || res.SeatIds[0] != seat {
				t.Errorf("Propose(%s) = %v, %v", seat, res, err)
			}
		})
	}
	wg.Wait()

	f, _ := tc.nodes[(li+1)%3].Group(0)
	if _, errs := f.ProposeAll(context.Background(), []*ledgerpb.Command{holdCmd("x", "r", 0, "A1")}); errs[0] != ErrNotLeader {
		t.Errorf("follower ProposeAll = %v, want ErrNotLeader", errs[0])
	}
}

// entriesCarrying counts the command entries in (after, upto] of g's log
// with a command whose client id starts with prefix.
func entriesCarrying(t *testing.T, g *Group, after, upto uint64, prefix string) int {
	t.Helper()
	n := 0
	var l raft.Log
	for i := after + 1; i <= upto; i++ {
		if err := g.logs.GetLog(i, &l); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		cmd, err := fsm.DecodeCommand(l.Data)
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
		cmds := []*ledgerpb.Command{cmd}
		if b := cmd.GetBatch(); b != nil {
			cmds = b.Commands
		}
		if slices.ContainsFunc(cmds, func(c *ledgerpb.Command) bool { return strings.HasPrefix(c.ClientId, prefix) }) {
			n++
		}
	}
	return n
}

func TestQueueWaitCtxEnded(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	cmds := make([]*ledgerpb.Command, 12)
	for i := range cmds {
		cmds[i] = holdCmd(fmt.Sprintf("q%d", i), "r", 0, fmt.Sprintf("B%d", i+1))
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	q := g.Queue(context.Background(), cmds)
	results, errs := q.Wait(ended)
	for i := range cmds {
		if errs[i] == nil && results[i] != nil && results[i].Code == ledgerpb.Code_CODE_OK {
			continue
		}
		if !errors.Is(errs[i], ErrOutcomeUnknown) || results[i] != nil {
			t.Errorf("Wait with its ctx ended: [%d] = %v, %v; want OK or ErrOutcomeUnknown", i, results[i], errs[i])
		}
	}
	ctx, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	results, errs = g.ProposeAll(ctx, cmds)
	for i := range cmds {
		if errs[i] != nil || !results[i].Replayed || results[i].SeatIds[0] != fmt.Sprintf("B%d", i+1) {
			t.Errorf("retry [%d] = %v, %v; want the first outcome replayed", i, results[i], errs[i])
		}
	}
	_, errs = g.Queue(ended, cmds).Wait(ctx)
	for i := range cmds {
		if !errors.Is(errs[i], ErrUnavailable) {
			t.Errorf("Queue with its ctx ended: [%d] = %v, want ErrUnavailable", i, errs[i])
		}
	}
}
