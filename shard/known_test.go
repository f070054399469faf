// This file proves that a node answers a registry read it cannot serve
// with the registry it learned (package registry hands it over), and only
// that read, of only the catalog group.
package shard

import (
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestKnownNodesAnswersRegistryReadsOnly(t *testing.T) {
	r := &Router{smap: Map{Groups: 8}}
	read := &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_NODES}
	if resp := r.knownNodes(read); resp != nil {
		t.Fatalf("knownNodes without a registry = %v, want nil", resp)
	}
	var list *ledgerpb.NodeList
	r.SetKnownNodes(func() *ledgerpb.NodeList { return list })
	if resp := r.knownNodes(read); resp != nil {
		t.Fatalf("knownNodes before learning = %v, want nil", resp)
	}
	list = &ledgerpb.NodeList{Revision: 7, Nodes: []*ledgerpb.NodeRecord{{NodeId: "n1"}}}
	if resp := r.knownNodes(read); resp == nil || resp.NodeList != list || resp.Status != ledgerpb.ForwardStatus_FORWARD_STATUS_OK {
		t.Fatalf("knownNodes = %v, want the learned registry", resp)
	}
	other := &ledgerpb.ReadRequest{GroupId: (r.smap.CatalogGroup() + 1) % 8, Kind: ledgerpb.ReadKind_READ_KIND_NODES}
	seats := &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_SEAT_MAP}
	if r.knownNodes(other) != nil || r.knownNodes(seats) != nil {
		t.Fatalf("knownNodes answered a read of another group or kind")
	}
}
