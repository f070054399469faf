package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// addNodes registers nodes (fields checked by validateOp). Rejections, in
// order, all or nothing: CODE_NODE_REMOVED when a node's id is retired,
// CODE_NODE_ADDRESS_TAKEN when another registered node (not REMOVED, not
// in this command) listens at one of its addresses, CODE_INVALID_ARGUMENT
// when the registry would exceed NodesMax records. Then each node is stored
// ACTIVE with its addresses; a record that says so already is not written
// again (its revision stays).
//
// A seed command (a node's --peers at start) refuses nothing: it adds only
// the ids the registry lacks whose addresses are free, as long as there is
// room, and leaves every existing record alone.
func (tx *txn) addNodes(c *ledgerpb.AddNodeCmd) *ledgerpb.Result {
	existing := tx.nodeRecords()
	byID := make(map[string]*ledgerpb.NodeRecord, len(existing))
	for _, r := range existing {
		byID[r.NodeId] = r
	}
	if c.Seed {
		return tx.seedNodes(c.Nodes, existing, byID)
	}
	incoming := make(map[string]bool, len(c.Nodes))
	for _, n := range c.Nodes {
		incoming[n.NodeId] = true
	}
	added := 0
	for _, n := range c.Nodes {
		old := byID[n.NodeId]
		if old == nil {
			added++
		} else if old.State == ledgerpb.NodeState_NODE_STATE_REMOVED {
			return reject(ledgerpb.Code_CODE_NODE_REMOVED, "node %s was removed: its id is retired, register the machine under a new id", n.NodeId)
		}
	}
	for _, n := range c.Nodes {
		if other := addressOwner(existing, n, incoming); other != "" {
			return reject(ledgerpb.Code_CODE_NODE_ADDRESS_TAKEN, "node %s listens at an address of node %s", n.NodeId, other)
		}
	}
	if len(existing)+added > NodesMax {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: "nodes",
			Message: "the registry holds its limit of nodes, removed ones included"}
	}
	for _, n := range c.Nodes {
		if old := byID[n.NodeId]; old != nil && sameNode(old, n) && old.State == ledgerpb.NodeState_NODE_STATE_ACTIVE {
			continue
		}
		tx.putNode(&ledgerpb.NodeRecord{NodeId: n.NodeId, RaftAddr: n.RaftAddr, GrpcAddr: n.GrpcAddr, State: ledgerpb.NodeState_NODE_STATE_ACTIVE})
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}

// seedNodes adds the nodes the registry has never seen, in the command's
// order, skipping those whose addresses are taken.
func (tx *txn) seedNodes(nodes, existing []*ledgerpb.NodeRecord, byID map[string]*ledgerpb.NodeRecord) *ledgerpb.Result {
	count := len(existing)
	for _, n := range nodes {
		if byID[n.NodeId] != nil || count >= NodesMax || addressOwner(existing, n, nil) != "" {
			continue
		}
		rec := &ledgerpb.NodeRecord{NodeId: n.NodeId, RaftAddr: n.RaftAddr, GrpcAddr: n.GrpcAddr, State: ledgerpb.NodeState_NODE_STATE_ACTIVE}
		tx.putNode(rec)
		existing = append(existing, rec)
		count++
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}

// addressOwner names a registered node other than n (and not in skip) that
// is not REMOVED and listens at one of n's addresses, or "".
func addressOwner(existing []*ledgerpb.NodeRecord, n *ledgerpb.NodeRecord, skip map[string]bool) string {
	for _, r := range existing {
		if r.NodeId == n.NodeId || skip[r.NodeId] || r.State == ledgerpb.NodeState_NODE_STATE_REMOVED {
			continue
		}
		for _, a := range []string{r.RaftAddr, r.GrpcAddr} {
			if a == n.RaftAddr || a == n.GrpcAddr {
				return r.NodeId
			}
		}
	}
	return ""
}

func sameNode(a, b *ledgerpb.NodeRecord) bool {
	return a.RaftAddr == b.RaftAddr && a.GrpcAddr == b.GrpcAddr
}
