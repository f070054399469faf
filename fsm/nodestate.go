package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// setNodeState moves a registered node to ACTIVE, DRAINING or REMOVED
// (fields checked by validateOp). Rejections, in order: CODE_NODE_NOT_FOUND
// for an id never registered, CODE_NODE_REMOVED for a removed node asked
// into another state (removal is final). Asking for the state the node has
// is OK and writes nothing.
func (tx *txn) setNodeState(c *ledgerpb.SetNodeStateCmd) *ledgerpb.Result {
	rec := tx.nodeRecord(c.NodeId)
	switch {
	case rec == nil:
		return reject(ledgerpb.Code_CODE_NODE_NOT_FOUND, "no node %s in the registry", c.NodeId)
	case rec.State == c.State:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
	case rec.State == ledgerpb.NodeState_NODE_STATE_REMOVED:
		return reject(ledgerpb.Code_CODE_NODE_REMOVED, "node %s was removed: its id is retired", c.NodeId)
	}
	rec.State = c.State
	tx.putNode(rec)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
