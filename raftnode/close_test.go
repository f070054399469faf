// This file proves that a group closes even when raft shut itself down
// first (a leader that removed itself does, ShutdownOnRemove) while
// proposals kept arriving: raft never answers a future left in its
// buffered apply queue, and close must not wait for one (jepsen seed 24 on
// 3 nodes hung a node's DropGroup, and with it the node's API, that way).
package raftnode

import (
	"fmt"
	"testing"
	"time"
)

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
