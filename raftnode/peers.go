package raftnode

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/raft"
)

// The peer table: where this node reaches every other node. It starts as
// Config.Peers (the seed list, --peers) joined with the table this node
// last saved, and is replaced at run time by the node registry (the
// catalog group's replicated list of nodes, which package registry reads
// and hands to SetPeers). Raft dials through it (the transport's address
// provider), so a node that joined after this one started, or that moved,
// is reached at its registered address; AddVoter takes a new replica's
// address from it; the balancer and the router take their list of nodes
// from it.
//
// The table is saved in DataDir/peersFile whenever it changes, so a node
// that joined a running cluster (no --peers) restarts knowing its peers
// even if the nodes it joined through are gone.

// peersFile is where a node saves its peer table.
const peersFile = "peers.json"

// peerTable is an immutable snapshot of the table, swapped whole.
type peerTable struct {
	list []Peer // sorted by id, this node included
}

func (t *peerTable) get(id string) (Peer, bool) {
	i, ok := slices.BinarySearchFunc(t.list, id, func(p Peer, id string) int { return strings.Compare(p.ID, id) })
	if !ok {
		return Peer{}, false
	}
	return t.list[i], true
}

// Peers lists the cluster's nodes as this node knows them, in id order:
// the registry's ACTIVE and DRAINING nodes once it has been learned.
func (n *Node) Peers() []Peer { return slices.Clone(n.peers.Load().list) }

// Peer returns a node of the peer table.
func (n *Node) Peer(id string) (Peer, bool) { return n.peers.Load().get(id) }

// SetPeers replaces the peer table with the registry's live nodes (ACTIVE
// and DRAINING). This node stays in it with its own addresses, and nodes of
// Config.Peers keep their RaftDial and GRPCDial. An empty list (a cluster
// whose registry is not written yet) changes nothing. It reports whether
// the table changed; a changed table is saved.
func (n *Node) SetPeers(peers []Peer) (bool, error) {
	if len(peers) == 0 {
		return false, nil
	}
	next := n.withLocal(peers)
	cur := n.peers.Load()
	if slices.Equal(cur.list, next.list) {
		return false, nil
	}
	n.peers.Store(next)
	n.cfg.Logger.Info("peer table changed", "peers", peerNames(next.list))
	return true, savePeers(n.cfg.DataDir, next.list)
}

// withLocal builds a table from peers plus this node, with the seed list's
// dial overrides. This node keeps the addresses it started with (the seed
// list's entry): they are the ones its bootstrap configurations recorded.
func (n *Node) withLocal(peers []Peer) *peerTable {
	seeds := &peerTable{list: sortedPeers(n.cfg.Peers)}
	self, ok := seeds.get(n.cfg.NodeID)
	if !ok {
		self = Peer{ID: n.cfg.NodeID, RaftAddr: n.cfg.RaftAddr}
	}
	out := []Peer{self}
	for _, p := range peers {
		if p.ID == n.cfg.NodeID {
			out[0].Draining = p.Draining
			continue
		}
		if s, ok := seeds.get(p.ID); ok {
			p.RaftDial, p.GRPCDial = s.RaftDial, s.GRPCDial
		}
		out = append(out, p)
	}
	return &peerTable{list: sortedPeers(out)}
}

// initialPeers is the table a node starts with: the saved table, then the
// seed list's nodes it lacks (the registry may have removed some since;
// the first SetPeers drops them again). This node's own entry and every
// dial override come from the seed list.
func initialPeers(cfg Config) (*peerTable, error) {
	saved, err := loadPeers(cfg.DataDir)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]Peer, len(saved)+len(cfg.Peers))
	for _, p := range saved {
		byID[p.ID] = p
	}
	for _, p := range cfg.Peers {
		old, ok := byID[p.ID]
		switch {
		case !ok || p.ID == cfg.NodeID:
			p.Draining = old.Draining
			byID[p.ID] = p
		default:
			old.RaftDial, old.GRPCDial = p.RaftDial, p.GRPCDial
			byID[p.ID] = old
		}
	}
	list := make([]Peer, 0, len(byID))
	for _, p := range byID {
		list = append(list, p)
	}
	return &peerTable{list: sortedPeers(list)}, nil
}

func sortedPeers(ps []Peer) []Peer {
	out := slices.Clone(ps)
	slices.SortFunc(out, func(a, b Peer) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func peerNames(ps []Peer) string {
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.ID)
		if p.Draining {
			b.WriteString("(draining)")
		}
	}
	return b.String()
}

// savedPeer is one line of the saved table; dial overrides are the
// process's own (flags) and are not saved.
type savedPeer struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	GRPCAddr string `json:"grpc_addr"`
	Draining bool   `json:"draining,omitempty"`
}

// savePeers writes the table atomically (temporary file, fsync, rename).
func savePeers(dir string, ps []Peer) error {
	out := make([]savedPeer, len(ps))
	for i, p := range ps {
		out[i] = savedPeer{ID: p.ID, RaftAddr: p.RaftAddr, GRPCAddr: p.GRPCAddr, Draining: p.Draining}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, peersFile+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return fmt.Errorf("raftnode: save peers: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, peersFile))
	}
	if err != nil {
		return fmt.Errorf("raftnode: save peers: %w", err)
	}
	return nil
}

// loadPeers reads the saved table; none saved is an empty table.
func loadPeers(dir string) ([]Peer, error) {
	b, err := os.ReadFile(filepath.Join(dir, peersFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raftnode: read saved peers: %w", err)
	}
	var saved []savedPeer
	if err := json.Unmarshal(b, &saved); err != nil {
		return nil, fmt.Errorf("raftnode: saved peers %s: %w", filepath.Join(dir, peersFile), err)
	}
	out := make([]Peer, 0, len(saved))
	for _, s := range saved {
		if s.ID == "" || s.RaftAddr == "" {
			return nil, fmt.Errorf("raftnode: saved peers %s: a peer without id or raft address", filepath.Join(dir, peersFile))
		}
		out = append(out, Peer{ID: s.ID, RaftAddr: s.RaftAddr, GRPCAddr: s.GRPCAddr, Draining: s.Draining})
	}
	return out, nil
}

// peerAddresses resolves a server id to the address to dial from the peer
// table at dial time, so a node that joined or moved is found, with the
// id's incarnation appended for the layer's Dial to put in the header
// (incarnation.go). An id the table lacks is an error: raft then dials the
// address in the group's configuration, which AddVoter recorded with the
// same incarnation.
type peerAddresses struct{ n *Node }

func (p peerAddresses) ServerAddr(id raft.ServerID) (raft.ServerAddress, error) {
	if peer, ok := p.n.Peer(nodeOf(id)); ok && peer.RaftTarget() != "" {
		return raft.ServerAddress(withIncarnation(peer.RaftTarget(), incarnationOf(string(id)))), nil
	}
	return "", fmt.Errorf("raftnode: no address for node %s", id)
}

// raftAddr is a node's raft address as configurations record it, or "".
func (n *Node) raftAddr(id string) string {
	p, _ := n.Peer(id)
	return p.RaftAddr
}

// peerAddr is a peer's raft address in a list, or "".
func peerAddr(peers []Peer, id string) string {
	for _, p := range peers {
		if p.ID == id {
			return p.RaftAddr
		}
	}
	return ""
}
