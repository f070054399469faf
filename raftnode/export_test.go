package raftnode

import "github.com/hashicorp/raft"

// Raft exposes a replica's raft instance to this package's tests only: the
// layers above see Status, TransferLeadership and this package's errors
// (status.go), never hashicorp/raft's types.
func (g *Group) Raft() *raft.Raft { return g.raft }
