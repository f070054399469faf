// This file proves how a node reads the registry it learns: the peer table
// gets the ACTIVE and DRAINING nodes (draining marked), never REMOVED ones;
// and SelfState tells a node that was removed, is not registered or is
// registered at other addresses from one it may run as, while an empty
// registry (a new cluster before its first registration) passes.
package registry

import (
	"errors"
	"fmt"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

func TestLivePeers(t *testing.T) {
	list := &ledgerpb.NodeList{Nodes: []*ledgerpb.NodeRecord{
		{NodeId: "n1", RaftAddr: "h:1", GrpcAddr: "h:2", State: ledgerpb.NodeState_NODE_STATE_REMOVED},
		{NodeId: "n2", RaftAddr: "h:3", GrpcAddr: "h:4", State: ledgerpb.NodeState_NODE_STATE_DRAINING},
		{NodeId: "n3", RaftAddr: "h:5", GrpcAddr: "h:6", State: ledgerpb.NodeState_NODE_STATE_ACTIVE},
	}}
	got := fmt.Sprint(livePeers(list))
	want := fmt.Sprint([]raftnode.Peer{{ID: "n2", RaftAddr: "h:3", GRPCAddr: "h:4", Draining: true}, {ID: "n3", RaftAddr: "h:5", GRPCAddr: "h:6"}})
	if got != want {
		t.Fatalf("livePeers = %s, want %s", got, want)
	}
}

func TestSelfState(t *testing.T) {
	self := raftnode.Peer{ID: "n4", RaftAddr: "h:7", GRPCAddr: "h:8"}
	rec := func(id, raft, grpc string, st ledgerpb.NodeState) *ledgerpb.NodeList {
		return &ledgerpb.NodeList{Nodes: []*ledgerpb.NodeRecord{
			{NodeId: "n1", RaftAddr: "h:1", GrpcAddr: "h:2", State: ledgerpb.NodeState_NODE_STATE_ACTIVE},
			{NodeId: id, RaftAddr: raft, GrpcAddr: grpc, State: st}}}
	}
	for _, tc := range []struct {
		name string
		list *ledgerpb.NodeList
		want error
	}{
		{"empty registry", &ledgerpb.NodeList{}, nil},
		{"active", rec("n4", "h:7", "h:8", ledgerpb.NodeState_NODE_STATE_ACTIVE), nil},
		{"draining", rec("n4", "h:7", "h:8", ledgerpb.NodeState_NODE_STATE_DRAINING), nil},
		{"removed", rec("n4", "h:7", "h:8", ledgerpb.NodeState_NODE_STATE_REMOVED), ErrNodeRemoved},
		{"absent", rec("n5", "h:7", "h:8", ledgerpb.NodeState_NODE_STATE_ACTIVE), ErrNotRegistered},
		{"other addresses", rec("n4", "h:7", "h:9", ledgerpb.NodeState_NODE_STATE_ACTIVE), ErrNotRegistered},
	} {
		err := SelfState(tc.list, self)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("SelfState(%s) = %v, want %v", tc.name, err, tc.want)
		}
	}
}
