// This file proves the watcher plumbing of a group: WaitApplied wakes on a
// follower as soon as its FSM applies the next entry (no polling), gives up
// with the caller's context, and returns ErrUnavailable once the group stops;
// and the leader's expiry driver prunes seat change records past their
// retention even when no hold is ever due.
package raftnode

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestWaitAppliedWakesWatchers(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, li := tc.leader()
	mustPropose(t, g, testShow())
	f, _ := tc.nodes[(li+1)%3].Group(0)
	next := g.Machine().Applied() + 1

	// A short wait with nothing proposed ends with the caller's context.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	err := f.WaitApplied(ctx, next+100)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitApplied(far ahead) with a 50 ms context = %v, want DeadlineExceeded", err)
	}

	// Waiters on a follower wake when it applies the next entry.
	const waiters = 8
	woke := make(chan error, waiters)
	for range waiters {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			woke <- f.WaitApplied(ctx, next)
		}()
	}
	if res := mustPropose(t, g, holdCmd("c1", "r1", 0, "A1")); res.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("Hold(A1) = %v, want OK", res.Code)
	}
	for range waiters {
		if err := <-woke; err != nil {
			t.Errorf("WaitApplied(%d) on a follower = %v, want nil", next, err)
		}
	}
	if got := f.Machine().Applied(); got < next {
		t.Errorf("WaitApplied(%d) returned with the follower at %d", next, got)
	}

	// A stopped group sends its waiters away.
	done := make(chan error, 1)
	go func() { done <- f.WaitApplied(context.Background(), next+100) }()
	tc.nodes[(li+1)%3].Close()
	tc.nodes[(li+1)%3] = nil
	select {
	case err := <-done:
		if !errors.Is(err, ErrUnavailable) {
			t.Errorf("WaitApplied on a stopped group = %v, want ErrUnavailable", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitApplied still waiting 10 s after its node closed")
	}
}

func TestLeaderPrunesChangesWithNoHoldDue(t *testing.T) {
	var clock atomic.Int64
	clock.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	tc := startTestCluster(t, func(c *Config) {
		c.Now = func() time.Time { return time.UnixMilli(clock.Load()) }
		c.PruneCheckInterval = 20 * time.Millisecond
	})
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	res := mustPropose(t, g, holdCmd("c1", "r1", 0, "A1"))
	confirm := &ledgerpb.Command{ClientId: "c1", RequestId: "r2",
		Op: &ledgerpb.Command_Confirm{Confirm: &ledgerpb.ConfirmCmd{ShowId: "s1", HoldId: res.HoldId, PaymentRef: "p", HoldToken: res.HoldToken}}}
	if c := mustPropose(t, g, confirm); c.Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("Confirm(%s) = %v, want OK", res.HoldId, c.Code)
	}
	last := g.Machine().Applied()
	// No hold is live, so only the prune check can propose an Expire.
	clock.Add(fsm.EventRetentionMaxMs + 1000)
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := g.Machine().View()
		if err != nil {
			t.Fatal(err)
		}
		floor, err := v.EventFloor()
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		if floor == last {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("change log floor %d 10 s after the records aged out, want %d (the confirm's revision)", floor, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
