// This file proves the admission driver's liveness across a leader loss:
// a room admits on the leader's entries; when the leader's node stops, the
// new leader's driver resumes admission, and every entry keeps its place.
// It logs how long admission paused (the figure is the test cluster's,
// with its short election timeout; seatbench and jepsen measure real
// processes).
package raftnode

import (
	"fmt"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestAdmissionResumesAfterLeaderLoss(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, _ := tc.leader()
	mustPropose(t, g, testShow())
	mustPropose(t, g, &ledgerpb.Command{ClientId: "admin", RequestId: "room",
		Op: &ledgerpb.Command_SetRoom{SetRoom: &ledgerpb.SetRoomCmd{ShowId: "s1", Open: true, AdmitPerSecond: 20}}})
	type joined struct{ id, token string }
	var entries []joined
	for i := range 120 {
		r := mustPropose(t, g, &ledgerpb.Command{ClientId: fmt.Sprintf("fan%d", i), RequestId: "join",
			Op: &ledgerpb.Command_JoinRoom{JoinRoom: &ledgerpb.JoinRoomCmd{ShowId: "s1", Seed: []byte{byte(i)}}}})
		if r.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("JoinRoom(fan%d) = %v", i, r.Code)
		}
		entries = append(entries, joined{r.RoomEntry.EntryId, r.RoomEntryToken})
	}
	admitted := func(g *Group) uint64 {
		t.Helper()
		v := g.Machine().ReadView()
		defer v.Close()
		r, err := v.Room("s1")
		if err != nil {
			t.Fatal(err)
		}
		return r.Admitted
	}
	places := func(g *Group) map[string]uint64 {
		t.Helper()
		v := g.Machine().ReadView()
		defer v.Close()
		out := map[string]uint64{}
		for _, e := range entries {
			ev, err := v.RoomEntry("s1", e.id, e.token)
			if err != nil {
				t.Fatal(err)
			}
			out[e.id] = ev.Place
		}
		return out
	}
	deadline := time.Now().Add(15 * time.Second)
	for admitted(g) < 10 {
		if time.Now().After(deadline) {
			t.Fatal("the leader admitted fewer than 10 entries in 15 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	before := places(g)

	_, li := tc.leader()
	stopped := time.Now()
	tc.nodes[li].Close()
	tc.nodes[li] = nil
	ng, _ := tc.leader()
	base := admitted(ng)
	for admitted(ng) <= base {
		if time.Now().After(stopped.Add(15 * time.Second)) {
			t.Fatalf("no admission within 15 s of the leader's loss (admitted %d)", base)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("admission resumed %v after the leader's node stopped", time.Since(stopped).Round(time.Millisecond))
	after := places(ng)
	for id, p := range before {
		if p != 0 && after[id] != p {
			t.Fatalf("entry %s moved from place %d to %d across the leader change", id, p, after[id])
		}
	}
}
