package fsm

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The node registry: every node the cluster has had, where its raft and
// gRPC ports listen, and its state (ACTIVE, DRAINING, REMOVED). It lives in
// the catalog group (the gateway sends NodeCmd nowhere else), so it is
// replicated, snapshotted and digested with that group, and every node
// learns it by reading that group. A record is keyed by node id (0x2F);
// REMOVED records stay, so that a retired id is never registered again.
//
// The FSM checks only what it can see: ids, addresses, states. Whether a
// node still hosts replicas is raft's knowledge, spread over every group:
// seatctl checks it before it asks for REMOVED.

// node applies a registry command whose fields validateOp checked.
func (tx *txn) node(c *ledgerpb.NodeCmd) *ledgerpb.Result {
	switch op := c.Op.(type) {
	case *ledgerpb.NodeCmd_AddNode:
		return tx.addNodes(op.AddNode)
	case *ledgerpb.NodeCmd_SetState:
		return tx.setNodeState(op.SetState)
	}
	panic(fmt.Sprintf("fsm: node command without op at index %d", tx.index))
}

func (m *Machine) nodeKey(id string) []byte { return m.key(kindNode, []byte(id)) }

// nodeRecord reads a node's record through the batch; nil if absent.
func (tx *txn) nodeRecord(id string) *ledgerpb.NodeRecord {
	rec := &ledgerpb.NodeRecord{}
	if !tx.get(tx.m.nodeKey(id), rec) {
		return nil
	}
	return rec
}

// nodeRecords reads every record in id order. There are at most NodesMax.
func (tx *txn) nodeRecords() []*ledgerpb.NodeRecord {
	var ids []string
	prefix := tx.m.key(kindNode)
	tx.scan(prefix, prefixEnd(prefix), NodesMax+1, func(k []byte) {
		ids = append(ids, string(k[len(prefix):]))
	})
	if len(ids) > NodesMax {
		violated("node registry holds %d records, more than %d", len(ids), NodesMax)
	}
	out := make([]*ledgerpb.NodeRecord, 0, len(ids))
	for _, id := range ids {
		rec := tx.nodeRecord(id)
		if !(rec != nil && rec.NodeId == id) {
			violated("node record under key %q names %q", id, rec.GetNodeId())
		}
		out = append(out, rec)
	}
	return out
}

// putNode stores a node's record as changed at this entry.
func (tx *txn) putNode(rec *ledgerpb.NodeRecord) {
	if rec.State == ledgerpb.NodeState_NODE_STATE_UNSPECIFIED {
		violated("node %s stored without a state", rec.NodeId)
	}
	rec.Revision, rec.ChangedAtMs = tx.index, tx.now
	tx.put(tx.m.nodeKey(rec.NodeId), rec)
}

// Nodes returns the registry in id order, REMOVED records included.
func (v *View) Nodes() ([]*ledgerpb.NodeRecord, error) {
	prefix := v.m.key(kindNode)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []*ledgerpb.NodeRecord
	for ok := it.First(); ok; ok = it.Next() {
		rec := &ledgerpb.NodeRecord{}
		if err := proto.Unmarshal(it.Value(), rec); err != nil {
			return nil, fmt.Errorf("fsm: read node record: %w", err)
		}
		out = append(out, rec)
	}
	return out, it.Error()
}

// ResetNodes replaces a group's node registry with nodes, all ACTIVE and
// stamped with the group's applied index, outside the log. Only seatd
// restore calls it, on a new cluster's data directory before its first
// start: the backup's registry names the old cluster's nodes and
// addresses. Every replica of the group must be reset with the same nodes
// (the same --peers), or their digests differ. No Machine of the group may
// be in use.
func ResetNodes(db *pebble.DB, group uint32, nodes []*ledgerpb.NodeRecord) error {
	if fe := validateNodes("nodes", nodes); fe != nil {
		return errors.New(fe.Error())
	}
	m, err := NewMachine(db, group)
	if err != nil {
		return err
	}
	b := db.NewBatch()
	defer b.Close()
	prefix := m.key(kindNode)
	if err := b.DeleteRange(prefix, prefixEnd(prefix), nil); err != nil {
		return fmt.Errorf("fsm: reset nodes of group %d: %w", group, err)
	}
	for _, n := range nodes {
		rec := &ledgerpb.NodeRecord{NodeId: n.NodeId, RaftAddr: n.RaftAddr, GrpcAddr: n.GrpcAddr,
			State: ledgerpb.NodeState_NODE_STATE_ACTIVE, Revision: m.Applied(), ChangedAtMs: m.Clock()}
		v, err := proto.MarshalOptions{Deterministic: true}.Marshal(rec)
		if err != nil {
			return fmt.Errorf("fsm: reset nodes of group %d: %w", group, err)
		}
		if err := b.Set(m.nodeKey(n.NodeId), v, nil); err != nil {
			return fmt.Errorf("fsm: reset nodes of group %d: %w", group, err)
		}
	}
	if err := b.Commit(pebble.NoSync); err != nil {
		return fmt.Errorf("fsm: reset nodes of group %d: %w", group, err)
	}
	if err := db.Flush(); err != nil { // no WAL (OpenDB): durable once flushed
		return fmt.Errorf("fsm: reset nodes of group %d: %w", group, err)
	}
	return nil
}

// ValidateNodeCmd checks a registry command's fields against the limits.
func ValidateNodeCmd(c *ledgerpb.NodeCmd) *FieldError {
	switch op := c.GetOp().(type) {
	case *ledgerpb.NodeCmd_AddNode:
		return validateNodes("nodes", op.AddNode.GetNodes())
	case *ledgerpb.NodeCmd_SetState:
		if !ValidID(op.SetState.GetNodeId(), NodeIDLenMax) {
			return nodeIDErr("node_id")
		}
		if st := op.SetState.GetState(); ledgerpb.NodeState_name[int32(st)] == "" || st == ledgerpb.NodeState_NODE_STATE_UNSPECIFIED {
			return fieldErr("state", "must be ACTIVE, DRAINING or REMOVED")
		}
		return nil
	}
	return fieldErr("node", "names no node command")
}

// validateNodes checks 1..NodesMax records with unique ids and addresses.
func validateNodes(field string, nodes []*ledgerpb.NodeRecord) *FieldError {
	if len(nodes) == 0 || len(nodes) > NodesMax {
		return fieldErr(field, "must list 1..%d nodes", NodesMax)
	}
	seen := make(map[string]bool, 3*len(nodes))
	for i, n := range nodes {
		f := field + "[" + strconv.Itoa(i) + "]"
		if fe := ValidateNode(f+".", n.NodeId, n.RaftAddr, n.GrpcAddr); fe != nil {
			return fe
		}
		for _, k := range []string{"id " + n.NodeId, "addr " + n.RaftAddr, "addr " + n.GrpcAddr} {
			if seen[k] {
				return fieldErr(f, "repeats %s of an earlier node", strings.TrimPrefix(strings.TrimPrefix(k, "id "), "addr "))
			}
			seen[k] = true
		}
	}
	return nil
}

// ValidateNode checks a node's id and addresses; field prefixes the field
// names (node_id, raft_addr, grpc_addr).
func ValidateNode(field, id, raftAddr, grpcAddr string) *FieldError {
	switch {
	case !ValidID(id, NodeIDLenMax):
		return nodeIDErr(field + "node_id")
	case !validHostPort(raftAddr):
		return addrErr(field + "raft_addr")
	case !validHostPort(grpcAddr):
		return addrErr(field + "grpc_addr")
	case raftAddr == grpcAddr:
		return fieldErr(field+"grpc_addr", "must differ from raft_addr")
	}
	return nil
}

func nodeIDErr(field string) *FieldError {
	return fieldErr(field, "must be 1..%d characters of [A-Za-z0-9._:-]", NodeIDLenMax)
}

func addrErr(field string) *FieldError {
	return fieldErr(field, "must be HOST:PORT (port 1..65535, at most %d characters)", NodeAddrLenMax)
}

// validHostPort accepts HOST:PORT with a non-empty host of printable ASCII
// without spaces ("[::1]" for IPv6) and a port in 1..65535. Whether the host
// resolves is not the FSM's to ask.
func validHostPort(s string) bool {
	if len(s) > NodeAddrLenMax {
		return false
	}
	i := strings.LastIndexByte(s, ':')
	if i <= 0 {
		return false
	}
	host, port := s[:i], s[i+1:]
	for j := 0; j < len(host); j++ {
		if host[j] <= ' ' || host[j] > '~' || host[j] == '/' {
			return false
		}
	}
	if strings.Contains(host, ":") && !(strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]")) {
		return false
	}
	p, err := strconv.Atoi(port)
	return err == nil && p >= 1 && p <= 65535 && strconv.Itoa(p) == port
}
