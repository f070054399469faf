// This file proves that a group closes even when raft shut itself down
// first (a leader that removed itself does, ShutdownOnRemove) while
// proposals kept arriving: raft never answers a future left in its
// buffered apply queue, and close must not wait for one (jepsen seed 24 on
// 3 nodes hung a node's DropGroup, and with it the node's API, that way);
// and that a closing group hands raft no more heartbeats.
package raftnode

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// Raft's Shutdown does not wait for its heartbeat handler, which may write
// the term to the stable store that close then closes: once close has shut
// the gate, a heartbeat goes unanswered and raft does not see it.
func TestClosingGroupHandsRaftNoHeartbeats(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	g, err := tc.nodes[(li+1)%3].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	term := g.raft.CurrentTerm()
	hb := &raft.AppendEntriesRequest{RPCHeader: leader.rpcHeader(), Term: term + 1, Leader: leader.rpcHeader().Addr}
	g.trans.closeHeartbeats()
	if _, err := g.heartbeat(hb); !errors.Is(err, errHeartbeatUnanswered) {
		t.Fatalf("heartbeat to a closing group = %v, want %v", err, errHeartbeatUnanswered)
	}
	if got := g.raft.CurrentTerm(); got != term {
		t.Fatalf("a closing group's raft took term %d from a heartbeat, want %d", got, term)
	}
}

func TestCloseAfterRaftShutItselfDown(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, _ := tc.leader()
	mustPropose(t, leader, testShow())
	if err := leader.raft.Shutdown().Error(); err != nil {
		t.Fatal(err)
	}
	// Proposals queued while it led, handed to raft after it shut down.
	var queued []*proposal
	for i := 0; i < 20; i++ {
		p := &proposal{cmd: holdCmd("c", fmt.Sprintf("late%d", i), 60_000, "A1"), done: make(chan outcome, 1), start: time.Now()}
		leader.proposals <- p
		queued = append(queued, p)
	}
	// Node.Close must not close it again.
	n := leader.node
	n.mu.Lock()
	delete(n.mu.groups, 0)
	n.mu.Unlock()
	closed := make(chan error, 1)
	go func() { closed <- leader.close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("close waits for a future raft will never answer")
	}
	for i, p := range queued {
		select {
		case o := <-p.done:
			if o.err == nil {
				t.Fatalf("proposal %d to a shut-down raft succeeded", i)
			}
		default:
			t.Fatalf("proposal %d has no answer after close", i)
		}
	}
}
