package raftnode

import "github.com/hashicorp/raft"

// Raft serves RPCs from its transport's Consumer channel. The group's
// transport hands raft its own channel (progressTransport.Consumer), fed
// by relay from the NetworkTransport, so that this node can serve raft an
// RPC of its own making too (inject: learnCommit).

// relay passes the RPCs of in to raft through out until stop. It starts
// once raft exists.
func (g *Group) relay(in <-chan raft.RPC, out chan<- raft.RPC) {
	defer g.wg.Done()
	for {
		var rpc raft.RPC
		select {
		case rpc = <-in:
		case <-g.stop:
			return
		}
		select {
		case out <- rpc:
		case <-g.stop:
			return
		}
	}
}

// inject serves req to raft, unless raft is busy; raft's answer is
// dropped. It reports whether raft took req.
func (g *Group) inject(req *raft.AppendEntriesRequest) bool {
	select {
	case g.rpcs <- raft.RPC{Command: req, RespChan: make(chan raft.RPCResponse, 1)}:
		return true
	default:
		return false
	}
}
