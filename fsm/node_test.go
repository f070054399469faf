// This file proves the node registry's documented semantics (node.go,
// addnode.go, nodestate.go): the script testdata/catalog/nodes.txt registers,
// drains and removes nodes and checks every result and the records after
// (the statements are parsed here); ResetNodes replaces a registry outside
// the log and refuses what AddNode would; and validHostPort accepts exactly
// HOST:PORT.
package fsm

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// parseNodeEntry parses node-add and node-state statements.
func (s *scenario) parseNodeEntry(f []string) (*ledgerpb.Command, *expect) {
	arrow := slices.Index(f, "->")
	if arrow < 0 {
		s.fatalf("command without -> expectation")
	}
	pos := f[1:arrow]
	if len(pos) < 3 {
		s.fatalf("%s wants <client> <request> ..., got %q", f[0], strings.Join(pos, " "))
	}
	nc := &ledgerpb.NodeCmd{}
	switch f[0] {
	case "node-add":
		add := &ledgerpb.AddNodeCmd{Seed: len(pos) > 3 && pos[3] == "seed"}
		for _, spec := range splitList(pos[2]) {
			parts := strings.Split(spec, "@")
			for len(parts) < 3 {
				parts = append(parts, "")
			}
			add.Nodes = append(add.Nodes, &ledgerpb.NodeRecord{NodeId: dash(parts[0]), RaftAddr: dash(parts[1]), GrpcAddr: dash(parts[2])})
		}
		nc.Op = &ledgerpb.NodeCmd_AddNode{AddNode: add}
	case "node-state":
		if len(pos) != 4 {
			s.fatalf("node-state wants <client> <request> <id> <state>")
		}
		st := ledgerpb.NodeState(ledgerpb.NodeState_value["NODE_STATE_"+pos[3]])
		nc.Op = &ledgerpb.NodeCmd_SetState{SetState: &ledgerpb.SetNodeStateCmd{NodeId: dash(pos[2]), State: st}}
	}
	want, err := parseExpect(f[arrow+1:])
	if err != nil {
		s.fatalf("%v", err)
	}
	return &ledgerpb.Command{ClientId: dash(pos[0]), RequestId: dash(pos[1]), Op: &ledgerpb.Command_Node{Node: nc}}, want
}

// dash reads "-" as empty.
func dash(s string) string {
	if s == "-" {
		return ""
	}
	return s
}

// checkNodes compares the registry with a nodes or node check.
func (s *scenario) checkNodes(f []string) {
	v := s.view()
	defer v.Close()
	recs, err := v.Nodes()
	if err != nil {
		s.fatalf("Nodes(): %v", err)
	}
	if f[0] == "node" {
		if len(f) != 4 {
			s.fatalf("node check wants <id> <raft> <grpc>")
		}
		for _, r := range recs {
			if r.NodeId == f[1] {
				if r.RaftAddr != f[2] || r.GrpcAddr != f[3] {
					s.errorf("node %s = %s %s, want %s %s", f[1], r.RaftAddr, r.GrpcAddr, f[2], f[3])
				}
				return
			}
		}
		s.errorf("node %s is not in the registry", f[1])
		return
	}
	if len(f) != 3 || f[1] != "=>" {
		s.fatalf("nodes check wants '=> <id>/<state>/<revision>,...'")
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s/%s/%d", r.NodeId, strings.TrimPrefix(r.State.String(), "NODE_STATE_"), r.Revision))
	}
	if g := strings.Join(got, ","); g != dash(f[2]) {
		s.errorf("nodes = %s, want %s", orDash(g), f[2])
	}
}

func nodeOpName(c *ledgerpb.NodeCmd) string {
	switch op := c.Op.(type) {
	case *ledgerpb.NodeCmd_AddNode:
		var ids []string
		for _, n := range op.AddNode.Nodes {
			ids = append(ids, n.NodeId)
		}
		return fmt.Sprintf("AddNode(%s seed=%v)", strings.Join(ids, ","), op.AddNode.Seed)
	case *ledgerpb.NodeCmd_SetState:
		return fmt.Sprintf("SetNodeState(%s %v)", op.SetState.NodeId, op.SetState.State)
	}
	return "NodeCmd(nil)"
}

func TestResetNodes(t *testing.T) {
	db := newTestDB(t)
	m := newTestMachine(t, db, 7)
	add := &ledgerpb.Command{ClientId: "admin", RequestId: "r1", ProposedAtMs: 5000, Op: &ledgerpb.Command_Node{Node: &ledgerpb.NodeCmd{
		Op: &ledgerpb.NodeCmd_AddNode{AddNode: &ledgerpb.AddNodeCmd{Nodes: []*ledgerpb.NodeRecord{
			{NodeId: "old1", RaftAddr: "h:1", GrpcAddr: "h:2"}, {NodeId: "old2", RaftAddr: "h:3", GrpcAddr: "h:4"}}}}}}}
	if res := m.Apply(1, add); res[0].Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("AddNode = %v, want OK", res[0].Code)
	}
	// A node resets a group no machine uses: its machine checkpointed as
	// the node closed.
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	if err := ResetNodes(db, 7, []*ledgerpb.NodeRecord{{NodeId: "n1", RaftAddr: "h:1", GrpcAddr: "h:2"}, {NodeId: "n1", RaftAddr: "h:5", GrpcAddr: "h:6"}}); err == nil {
		t.Fatalf("ResetNodes with a repeated id = nil, want an error")
	}
	if err := ResetNodes(db, 7, []*ledgerpb.NodeRecord{{NodeId: "n2", RaftAddr: "h:7", GrpcAddr: "h:8"}, {NodeId: "n1", RaftAddr: "h:1", GrpcAddr: "h:2"}}); err != nil {
		t.Fatalf("ResetNodes = %v", err)
	}
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	recs, err := v.Nodes()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%s %s %s %v rev=%d at=%d", r.NodeId, r.RaftAddr, r.GrpcAddr, r.State, r.Revision, r.ChangedAtMs))
	}
	want := []string{"n1 h:1 h:2 NODE_STATE_ACTIVE rev=1 at=5000", "n2 h:7 h:8 NODE_STATE_ACTIVE rev=1 at=5000"}
	if !slices.Equal(got, want) {
		t.Fatalf("Nodes() after ResetNodes = %q, want %q", got, want)
	}
}

func TestValidHostPort(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:7001", true},
		{"db-1.example.com:1", true},
		{"[::1]:65535", true},
		{"h:0", false},
		{"h:65536", false},
		{"h:007", false},
		{":7001", false},
		{"h", false},
		{"h:", false},
		{"::1:7001", false},
		{"h st:7001", false},
		{"h/x:7001", false},
		{strings.Repeat("h", NodeAddrLenMax-4) + ":1234", false},
		{strings.Repeat("h", NodeAddrLenMax-5) + ":1234", true},
	} {
		if got := validHostPort(tc.addr); got != tc.ok {
			t.Errorf("validHostPort(%q) = %v, want %v", tc.addr, got, tc.ok)
		}
	}
}
