package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// clusterView is the cluster as the nodes that answered Status see it: the
// status and shards commands print it, the others look leaders and
// replicas up in it.
type clusterView struct {
	Nodes  []nodeView  `json:"nodes"`
	Groups []groupView `json:"groups"`
}

// nodeView is one node of the cluster (the registry's ACTIVE and DRAINING
// nodes).
type nodeView struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	GRPCAddr string `json:"grpc_addr"`
	// State is the registry's: active or draining.
	State   string `json:"state"`
	Up      bool   `json:"up"`
	Version string `json:"version,omitempty"`
	Error   string `json:"error,omitempty"`
}

// groupView is one raft group put together from its replicas' reports.
type groupView struct {
	Group      uint32 `json:"group"`
	RangeStart uint32 `json:"range_start"`
	RangeEnd   uint32 `json:"range_end"`
	// Leader is the replica that reports itself leader at the highest term,
	// else the leader most replicas name; "" if none.
	Leader string `json:"leader"`
	Term   uint64 `json:"term"`
	// Replicas is the configuration as the leader (else the most advanced
	// replica) reports it.
	Replicas []string `json:"replicas"`
	// Reports has one entry per configured replica and per other node that
	// hosts the group, in node order.
	Reports []replicaView `json:"reports"`
}

// replicaView is one replica's report, or its absence.
type replicaView struct {
	Node string `json:"node"`
	// Reported is false when the node did not answer or does not host the
	// group although the configuration names it.
	Reported    bool   `json:"reported"`
	State       string `json:"state"`
	Term        uint64 `json:"term,omitempty"`
	CommitIndex uint64 `json:"commit_index,omitempty"`
	// AppliedIndex is the replica's state machine position; Lag is how far
	// it is behind the most advanced replica that answered.
	AppliedIndex uint64 `json:"applied_index,omitempty"`
	Lag          uint64 `json:"lag"`
	Digest       string `json:"digest,omitempty"`
	DigestIndex  uint64 `json:"digest_index,omitempty"`

	// What the replica believes: its configuration and leader.
	config   []string
	leaderID string
}

// buildView assembles the cluster view from every node's answer.
func buildView(answers []nodeAnswer) clusterView {
	var v clusterView
	up := map[string]bool{}
	reports := map[uint32][]replicaView{}
	byGroup := map[uint32]*groupView{}
	for _, a := range answers {
		n := nodeView{ID: a.info.Id, RaftAddr: a.info.RaftAddr, GRPCAddr: a.info.GrpcAddr, State: stateName(a.info.State)}
		if a.err != nil || a.resp == nil {
			n.Error = "no answer"
			if a.err != nil {
				n.Error = describe(a.err)
			}
			v.Nodes = append(v.Nodes, n)
			continue
		}
		n.Up, n.Version, up[n.ID] = true, a.resp.Version, true
		v.Nodes = append(v.Nodes, n)
		for _, g := range a.resp.Groups {
			if byGroup[g.Group] == nil {
				byGroup[g.Group] = &groupView{Group: g.Group, RangeStart: g.RangeStart, RangeEnd: g.RangeEnd}
			}
			reports[g.Group] = append(reports[g.Group], replicaView{Node: a.info.Id, Reported: true, State: g.State,
				Term: g.Term, CommitIndex: g.CommitIndex, AppliedIndex: g.AppliedIndex,
				Digest: g.Digest, DigestIndex: g.DigestIndex, config: g.Replicas, leaderID: g.LeaderId})
		}
	}
	for id, g := range byGroup {
		finishGroup(g, reports[id], up)
		v.Groups = append(v.Groups, *g)
	}
	slices.SortFunc(v.Groups, func(x, y groupView) int { return cmp.Compare(x.Group, y.Group) })
	return v
}

// finishGroup picks a group's leader, term and configuration from its
// replicas' reports, and lists every replica with its lag.
func finishGroup(g *groupView, reps []replicaView, up map[string]bool) {
	var maxApplied uint64
	var ahead *replicaView // the most advanced replica
	var self *replicaView  // the replica that says it leads, at the highest term
	for i := range reps {
		r := &reps[i]
		g.Term = max(g.Term, r.Term)
		if ahead == nil || r.AppliedIndex > ahead.AppliedIndex {
			ahead = r
		}
		maxApplied = max(maxApplied, r.AppliedIndex)
		if r.State == "Leader" && (self == nil || r.Term > self.Term) {
			self = r
		}
	}
	switch {
	case self != nil:
		g.Leader, g.Replicas = self.Node, self.config
	case ahead != nil:
		g.Leader, g.Replicas = namedLeader(reps, g.Term), ahead.config
	}
	g.Replicas = slices.Clone(g.Replicas)
	slices.Sort(g.Replicas)
	seen := map[string]bool{}
	for _, r := range reps {
		r.Lag = maxApplied - r.AppliedIndex
		g.Reports = append(g.Reports, r)
		seen[r.Node] = true
	}
	for _, id := range g.Replicas {
		if seen[id] {
			continue
		}
		state := "down"
		if up[id] {
			state = "absent" // configured, but the node does not host it
		}
		g.Reports = append(g.Reports, replicaView{Node: id, State: state})
	}
	slices.SortFunc(g.Reports, func(x, y replicaView) int { return strings.Compare(x.Node, y.Node) })
}

// namedLeader is the leader most replicas at term name (ties to the
// smaller id), or "".
func namedLeader(reps []replicaView, term uint64) string {
	votes := map[string]int{}
	best := ""
	for _, r := range reps {
		if r.Term != term || r.leaderID == "" {
			continue
		}
		votes[r.leaderID]++
		n := votes[r.leaderID]
		if best == "" || n > votes[best] || (n == votes[best] && r.leaderID < best) {
			best = r.leaderID
		}
	}
	return best
}

// group returns the view of group id, or nil.
func (v clusterView) group(id uint32) *groupView {
	for i := range v.Groups {
		if v.Groups[i].Group == id {
			return &v.Groups[i]
		}
	}
	return nil
}

// node returns the view of node id, or nil.
func (v clusterView) node(id string) *nodeView {
	for i := range v.Nodes {
		if v.Nodes[i].ID == id {
			return &v.Nodes[i]
		}
	}
	return nil
}

// up reports whether node id answered.
func (v clusterView) up(id string) bool {
	n := v.node(id)
	return n != nil && n.Up
}

// nodeIDs lists the peer list's ids.
func (v clusterView) nodeIDs() []string {
	var ids []string
	for _, n := range v.Nodes {
		ids = append(ids, n.ID)
	}
	return ids
}

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Every node (up or down) and every group (range, leader, term, indexes, lag per replica)",
		Long: `status reads the node registry through the first endpoint that answers (its
ACTIVE and DRAINING nodes; that node's peer table if the registry cannot be read),
then asks every node for its Status. A node that does not answer is shown down; the
command fails only if no endpoint answers.`,
		Example: "  seatctl status\n  seatctl status -o json --endpoints 127.0.0.1:9001,127.0.0.1:9002",
		Args:    exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			v, err := a.pollView(c.Context(), false)
			if err != nil {
				return err
			}
			if a.json() {
				return writeJSON(a.out, v)
			}
			writeStatus(a.out, v)
			return nil
		},
	}
}

func newShardsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "shards",
		Short: "The shard map: hash ranges -> group -> replicas -> leader",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			v, err := a.pollView(c.Context(), false)
			if err != nil {
				return err
			}
			rows := shardRows(v)
			if a.json() {
				return writeJSON(a.out, rows)
			}
			writeShards(a.out, rows)
			return nil
		},
	}
}

// shardRow is one range of the shard map.
type shardRow struct {
	RangeStart uint32   `json:"range_start"`
	RangeEnd   uint32   `json:"range_end"`
	Group      uint32   `json:"group"`
	Replicas   []string `json:"replicas"`
	Leader     string   `json:"leader"`
}

// shardRows lists the groups by range.
func shardRows(v clusterView) []shardRow {
	rows := []shardRow{}
	for _, g := range v.Groups {
		rows = append(rows, shardRow{RangeStart: g.RangeStart, RangeEnd: g.RangeEnd, Group: g.Group,
			Replicas: g.Replicas, Leader: g.Leader})
	}
	slices.SortFunc(rows, func(x, y shardRow) int { return cmp.Compare(x.RangeStart, y.RangeStart) })
	return rows
}

// writeStatus prints the nodes table, then one line per group replica
// (the group's columns on its first line only).
func writeStatus(w io.Writer, v clusterView) {
	t := newTable(w)
	t.row("NODE", "RAFT ADDR", "GRPC ADDR", "STATE", "STATUS", "VERSION", "ERROR")
	for _, n := range v.Nodes {
		st := "down"
		if n.Up {
			st = "up"
		}
		t.row(n.ID, n.RaftAddr, n.GRPCAddr, dash(n.State), st, dash(n.Version), dash(n.Error))
	}
	t.flush()
	fmt.Fprintln(w)
	t = newTable(w)
	t.row("GROUP", "RANGE", "LEADER", "TERM", "REPLICAS", "REPLICA", "STATE", "COMMIT", "APPLIED", "LAG")
	for _, g := range v.Groups {
		for i, r := range g.Reports {
			cols := []string{"", "", "", "", ""}
			if i == 0 {
				cols = []string{fmt.Sprint(g.Group), rangeText(g.RangeStart, g.RangeEnd), dash(g.Leader),
					fmt.Sprint(g.Term), dash(strings.Join(g.Replicas, ","))}
			}
			if !r.Reported {
				t.row(append(cols, r.Node, r.State, "-", "-", "-")...)
				continue
			}
			t.row(append(cols, r.Node, r.State, fmt.Sprint(r.CommitIndex),
				fmt.Sprint(r.AppliedIndex), fmt.Sprint(r.Lag))...)
		}
	}
	t.flush()
}

// writeShards prints the shard map.
func writeShards(w io.Writer, rows []shardRow) {
	t := newTable(w)
	t.row("RANGE", "GROUP", "REPLICAS", "LEADER")
	for _, r := range rows {
		t.row(rangeText(r.RangeStart, r.RangeEnd), fmt.Sprint(r.Group), dash(strings.Join(r.Replicas, ",")), dash(r.Leader))
	}
	t.flush()
}

// rangeText prints a hash range as fixed-width hex, so ranges line up.
func rangeText(lo, hi uint32) string {
	return fmt.Sprintf("%08x-%08x", lo, hi)
}

// stateName is a registry state in lower case: NODE_STATE_DRAINING ->
// draining; "" when unset (a node from before the registry).
func stateName(s ledgerpb.NodeState) string {
	if s == ledgerpb.NodeState_NODE_STATE_UNSPECIFIED {
		return ""
	}
	return strings.ToLower(strings.TrimPrefix(s.String(), "NODE_STATE_"))
}
