package raftnode

// Heartbeat frames in a real 3-node cluster: with raft's commit-index
// appends pushed an hour apart, a follower still learns what its leader
// committed from the frames (learnCommit), applies it, and serves
// bounded-stale views that hold every write acknowledged before the time
// they claim (FreshView's rule, here on the piggybacked path).

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestFollowerLearnsCommitsFromHeartbeatFrames(t *testing.T) {
	tc := startTestCluster(t, func(c *Config) { c.CommitTimeout = time.Hour })
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	follower, err := tc.nodes[(li+1)%3].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	var acked []time.Time
	for i := 0; i < 3; i++ {
		res := mustPropose(t, leader, holdCmd("c", fmt.Sprintf("r%d", i), 60_000, fmt.Sprintf("A%d", i+1)))
		if res.GetCode() != ledgerpb.Code_CODE_OK {
			t.Fatalf("hold %d: %v", i, res)
		}
		acked = append(acked, time.Now())
		// The last hold's commit reaches the follower only in a frame:
		// no later entry carries it, and no commit append comes.
		deadline := time.Now().Add(5 * time.Second)
		for {
			held, asOf, ok := freshHeld(t, follower)
			if ok {
				before := 0
				for _, a := range acked {
					if a.Before(asOf) {
						before++
					}
				}
				if held < before {
					t.Fatalf("follower's view as of %s holds %d seats, but %d holds were acknowledged before then",
						asOf.Format("15:04:05.000"), held, before)
				}
				if held == i+1 {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("after hold %d the follower never served a view holding it (applied %d, leader commit %d)",
					i, follower.Raft().AppliedIndex(), leader.Raft().CommitIndex())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	var frames uint64
	for _, n := range tc.nodes {
		frames += n.beats.frames.Load()
	}
	if frames == 0 {
		t.Errorf("no heartbeat frame was answered; heartbeats did not go through the coalescer")
	}
}

// freshHeld returns how many seats of s1 the group's bounded-stale view
// holds and the time it is fresh as of; ok is false if it refused.
func freshHeld(t *testing.T, g *Group) (held int, asOf time.Time, ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	v, asOf, err := g.FreshView(ctx, 2*time.Second)
	if err != nil {
		return 0, time.Time{}, false
	}
	defer v.Close()
	total, free, err := v.SeatCounts("s1")
	if err != nil {
		t.Fatal(err)
	}
	return int(total - free), asOf, true
}

// A heartbeat frame is addressed to a replica incarnation, as a group
// connection is (incarnation.go): one for a re-hosted replica's earlier
// incarnation is refused and leaves its term alone, and once the new
// replica is a member its leader's heartbeats reach it through frames.
func TestHeartbeatFramesRespectIncarnations(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := tc.leader()
	mustPropose(t, leader, testShow())
	fresh, other := (li+1)%3, (li+2)%3
	freshNode := tc.peers[fresh].ID
	fg := rehost(t, tc, leader, fresh)
	og, err := tc.nodes[other].Group(0)
	if err != nil {
		t.Fatal(err)
	}
	hb := &raft.AppendEntriesRequest{RPCHeader: og.rpcHeader(), Term: leader.raft.CurrentTerm() + 5, Leader: og.rpcHeader().Addr}
	if !isHeartbeat(hb) {
		t.Fatalf("test heartbeat %+v is not heartbeat-shaped", hb)
	}
	var resp raft.AppendEntriesResponse
	err = og.trans.AppendEntries(raft.ServerID(freshNode), raft.ServerAddress(tc.peers[fresh].RaftAddr), hb, &resp)
	if !errors.Is(err, errBeatRefused) {
		t.Fatalf("heartbeat frame to %s (earlier incarnation of %s) = %v, want %v", freshNode, fg.self, err, errBeatRefused)
	}
	if got := fg.raft.CurrentTerm(); got > leader.raft.CurrentTerm() {
		t.Fatalf("%s took term %d from a heartbeat addressed to %s", fg.self, got, freshNode)
	}
	addBack(t, tc, leader, fresh)
	time.Sleep(time.Second)
	if st, last := fg.raft.State(), fg.raft.LastContact(); st != raft.Follower || time.Since(last) > 500*time.Millisecond {
		t.Fatalf("re-hosted replica %s: state %v, last contact %v ago; want a follower its leader heartbeats", fg.self, st, time.Since(last))
	}
	if n := tc.nodes[fresh].beats.frames.Load(); n == 0 {
		t.Errorf("node %s answered no heartbeat frame", freshNode)
	}
}
