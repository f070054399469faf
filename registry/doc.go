// Package registry is how a node learns which nodes make up the cluster and
// where they listen. The node registry itself is replicated state in the
// catalog group (fsm/node.go); this package reads it, by a bounded-stale
// read routed like any browse read, every RefreshInterval, and hands the
// live nodes to the node's peer table (raftnode/peers.go): raft's dials,
// AddVoter, the balancer, the router's forwards and Status all use it. It
// also registers the seed list at a new cluster's start, takes a joining
// node's first registry from a node it is given (Join), and tells a node
// whether it may run as registered (SelfState).
//
// It is its own package, not part of shard/, because it is membership,
// not routing: shard/ only routes its reads and proposals, and answers a
// registry read it cannot serve with the registry this package learned
// (shard.Router.SetKnownNodes), so a node joining the cluster can learn it
// from any node. seatd (cmd/) runs it; the Admin API (gateway/nodes.go)
// rereads it after a change so the node's own peer table has it at once.
package registry
