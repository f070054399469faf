package raftnode

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// A follower's bounded-stale view claims to be fresh as of some time: it
// must then hold every write acknowledged before that time. Heartbeats do
// not carry the leader's commit index, so the time a follower last heard a
// heartbeat is not such a time; this test makes the two far apart (heartbeats
// every 20 ms, commit-index updates only with new entries or every 2-4 s).
func TestFreshViewIncludesWritesAcknowledgedBeforeItsTime(t *testing.T) {
	tc := startTestCluster(t, func(c *Config) { c.CommitTimeout = 2 * time.Second })
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	follower, err := tc.nodes[(li+1)%3].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	var acked []time.Time
	served := 0
	for i := 0; i < 6; i++ {
		res := mustPropose(t, leader, holdCmd("c", fmt.Sprintf("r%d", i), 60_000, fmt.Sprintf("A%d", i+1)))
		if res.GetCode() != ledgerpb.Code_CODE_OK {
			t.Fatalf("hold %d: %v", i, res)
		}
		acked = append(acked, time.Now())
		time.Sleep(60 * time.Millisecond) // a few heartbeats
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		v, asOf, err := follower.FreshView(ctx, 2*time.Second)
		cancel()
		if err != nil {
			continue // refusing is always allowed
		}
		served++
		total, free, err := v.SeatCounts("s1")
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		before := 0
		for _, a := range acked {
			if a.Before(asOf) {
				before++
			}
		}
		if held := int(total - free); held < before {
			t.Fatalf("follower's view as of %s holds %d seats, but %d holds were acknowledged before then",
				asOf.Format("15:04:05.000"), held, before)
		}
	}
	// Each hold's append carries the commit index of the one before.
	if served < 3 {
		t.Fatalf("the follower served %d of 6 reads; want it to serve once it learns commits", served)
	}
}

// Raft counts an entry applied once it hands it to the FSM goroutine. A
// follower whose FSM goroutine is still applying a write it knows committed
// must not serve a view claiming to be fresh as of a time after that
// write's acknowledgement: FreshView waits for the state machine itself.
func TestFreshViewWaitsForTheStateMachine(t *testing.T) {
	tc := startTestCluster(t, func(c *Config) { c.CommitTimeout = 20 * time.Millisecond })
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	follower, err := tc.nodes[(li+1)%3].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	// Hold the follower's FSM goroutine back: after each batch it applies,
	// the adapter publishes on the group's applied signal (applied.go),
	// and that waits for the signal's lock, held here. The lock is let go
	// before the cluster stops (cleanups run last first).
	follower.applied.mu.Lock()
	t.Cleanup(follower.applied.mu.Unlock)
	// Another show, which leaves s1's seats alone: once raft has handed it
	// to the FSM goroutine, that goroutine stops at its publish (of this
	// batch or an earlier one), so any later entry waits, handed over but
	// not applied.
	other := testShow()
	other.RequestId = "create-s2"
	other.GetCreateShow().Show.ShowId = "s2"
	if res := mustPropose(t, leader, other); res.GetCode() != ledgerpb.Code_CODE_OK {
		t.Fatalf("create s2: %v", res)
	} else {
		waitFor(t, "the follower's raft to hand s2 to its FSM", func() bool { return follower.raft.AppliedIndex() >= res.Revision })
	}
	res := mustPropose(t, leader, holdCmd("c", "r1", 60_000, "A1"))
	if res.GetCode() != ledgerpb.Code_CODE_OK {
		t.Fatalf("hold: %v", res)
	}
	acked := time.Now()
	index := res.Revision
	// The follower knows the hold committed, after its acknowledgement, and
	// raft has handed it over; the FSM has not applied it.
	deadline := time.Now().Add(5 * time.Second)
	for {
		k := follower.commits.get()
		if k.index >= index && k.at.After(acked) && follower.raft.AppliedIndex() >= index {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the follower did not learn index %d was committed (knows %d at %s, raft applied %d)", index, k.index, k.at, follower.raft.AppliedIndex())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if follower.machine.Applied() >= index {
		t.Fatalf("the follower's state machine applied %d while held back", index)
	}
	v, asOf, err := follower.FreshView(context.Background(), 2*time.Second)
	if errors.Is(err, ErrStale) {
		return // refusing is always allowed
	}
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	total, free, err := v.SeatCounts("s1")
	if errors.Is(err, fsm.ErrNotFound) {
		t.Fatalf("the follower's view as of %s misses the show created before the hold acknowledged at %s", asOf.Format("15:04:05.000"), acked.Format("15:04:05.000"))
	}
	if err != nil {
		t.Fatal(err)
	}
	if total == free && asOf.After(acked) {
		t.Fatalf("the follower's view as of %s misses the hold acknowledged at %s", asOf.Format("15:04:05.000"), acked.Format("15:04:05.000"))
	}
}
