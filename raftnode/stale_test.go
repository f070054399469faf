package raftnode

import (
	"context"
	"fmt"
	"testing"
	"time"

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
