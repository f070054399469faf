package raftnode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// Asking the group's leader whether a removal has committed (DropGroup).
//
// A removed replica cannot tell by itself that it may go. Raft's leader
// stops replicating to a server as soon as it appends the configuration
// that removes it, after one best-effort append (raftseam.go, 10), so the
// removed replica's own configuration may name it for ever; and one that
// did receive the entry cannot know whether it committed (raft v1.7.3
// does not tell a configuration's index, raftseam.go, 10). So DropGroup
// asks every other node of the peer table at once, over its Mux: a
// configuration question is muxConfigMagic, the group id, and the server
// id asked about (one length byte, then the id); the answer is one byte, a
// configState. DropGroup goes ahead only when a node answers configOmits:
// it leads the group, and its configuration, which a Barrier after reading
// it proved committed, omits this replica's server id (with its
// incarnation).
//
// Why that is enough: a committed configuration is never undone, and every
// later one derives from it one server at a time, so the replica is a
// member again only if AddVoter adds this very server id back (its node's
// Mux would report the incarnation until the drop closes its layer). Even
// then, once dropped, the replica's layer is gone and a new one has a new
// incarnation: it could never vote or count toward a commit as the empty
// replica that took its place (incarnation.go). A stale leader's answer is
// as good as a current one's: what it proved committed stays committed.

// Limits of a configuration question, named once.
const (
	// configAskTimeout bounds DropGroup's questions, all asked at once.
	configAskTimeout = 3 * time.Second
	// configAnswerWait bounds the leader's Barrier; shorter than
	// configAskTimeout so that its answer still arrives.
	configAnswerWait = 2 * time.Second
	// configIDBytesMax is the longest server id a question can carry.
	configIDBytesMax = 255
)

// configState is a node's answer about its replica of a group and a server.
type configState byte

const (
	configNotHosted   configState = iota + 1 // no replica of the group there
	configFollows                            // its replica does not lead
	configNames                              // it leads; its configuration names the server
	configUnconfirmed                        // it leads; its configuration omits the server, not proved committed
	configOmits                              // it leads; its committed configuration omits the server
)

func (s configState) String() string {
	switch s {
	case configNotHosted:
		return "hosts no replica of the group"
	case configFollows:
		return "does not lead the group"
	case configNames:
		return "leads the group and its configuration still names this replica (RemoveVoter it there first)"
	case configUnconfirmed:
		return "leads the group, its configuration omits this replica, but that change is not committed yet"
	case configOmits:
		return "leads the group and its committed configuration omits this replica"
	}
	return fmt.Sprintf("configState(%d)", byte(s))
}

// errConfigWire is a question without a server id, or an answer no
// configState spells.
var errConfigWire = errors.New("raftnode: malformed configuration question or answer")

// confirmRemoved returns nil when g's replica may be dropped without
// force: it never received a configuration (it joined no group yet; at
// most a non-voter was added that never heard of it), or another node
// leads the group with a committed configuration that omits it. Otherwise
// it returns ErrStillMember saying what this replica knows and what each
// node answered.
func (n *Node) confirmRemoved(ctx context.Context, g *Group) error {
	f := g.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return fmt.Errorf("raftnode: group %d: read configuration: %w", g.id, err)
	}
	servers := f.Configuration().Servers
	if len(servers) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, configAskTimeout)
	defer cancel()
	heard := n.askConfigs(ctx, g.id, g.self)
	for _, a := range heard {
		if a.err == nil && a.state == configOmits {
			g.log.Info("leader confirmed this replica's removal", "leader", a.peer, "server_id", string(g.self))
			return nil
		}
	}
	return removalUnconfirmed(g, servers, heard)
}

// configHeard is one node's answer, or why there is none.
type configHeard struct {
	peer  string
	state configState
	err   error
}

// askConfigs asks every other node of the peer table, at once, about its
// replica of group and server sid, and returns their answers in peer
// order. The first configOmits cancels the other questions; it returns
// once every question has ended.
func (n *Node) askConfigs(ctx context.Context, group uint32, sid raft.ServerID) []configHeard {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var peers []Peer
	for _, p := range n.Peers() {
		if p.ID != n.cfg.NodeID && p.RaftTarget() != "" {
			peers = append(peers, p)
		}
	}
	answers := make(chan configHeard, len(peers))
	for _, p := range peers {
		go func() {
			s, err := n.mux.configAt(ctx, p.RaftTarget(), group, sid)
			answers <- configHeard{peer: p.ID, state: s, err: err}
		}()
	}
	heard := make([]configHeard, 0, len(peers))
	for range peers {
		a := <-answers
		if a.err == nil && a.state == configOmits {
			cancel()
		}
		heard = append(heard, a)
	}
	slices.SortFunc(heard, func(a, b configHeard) int { return strings.Compare(a.peer, b.peer) })
	return heard
}

// removalUnconfirmed is ErrStillMember with what was checked and what the
// operator can do.
func removalUnconfirmed(g *Group, servers []raft.Server, heard []configHeard) error {
	var b strings.Builder
	fmt.Fprintf(&b, "group %d: replica %s ", g.id, g.self)
	members := make([]string, 0, len(servers))
	named := false
	for _, s := range servers {
		members = append(members, string(s.ID))
		named = named || s.ID == g.self
	}
	slices.Sort(members)
	if named {
		fmt.Fprintf(&b, "is named by its own configuration (%s)", strings.Join(members, ","))
	} else {
		fmt.Fprintf(&b, "has a configuration without it (%s) that it cannot know committed", strings.Join(members, ","))
	}
	if g.IsLeader() {
		b.WriteString(" and leads the group")
	}
	b.WriteString("; no leader confirmed a committed configuration without it:")
	if len(heard) == 0 {
		b.WriteString(" no other node in the peer table")
	}
	for i, a := range heard {
		sep := ";"
		if i == 0 {
			sep = ""
		}
		if a.err != nil {
			fmt.Fprintf(&b, "%s %s did not answer (%v)", sep, a.peer, a.err)
			continue
		}
		fmt.Fprintf(&b, "%s %s %s", sep, a.peer, a.state)
	}
	b.WriteString(". Run RemoveVoter on the group's leader and retry once it has returned; " +
		"if no leader can be reached from this node but the leader acknowledged RemoveVoter, drop with force")
	return fmt.Errorf("%w: %s", ErrStillMember, b.String())
}

// configOf answers a configuration question about this node's replica of
// group (Mux.configs).
func (n *Node) configOf(group uint32, sid raft.ServerID) configState {
	g, err := n.Group(group)
	if err != nil {
		return configNotHosted
	}
	return g.configOf(sid, configAnswerWait)
}

// configOf answers whether this replica leads the group with a committed
// configuration that omits server sid. The configuration is read first,
// then a Barrier appended after it must commit within wait: raft v1.7.3
// does not tell a configuration's index, so a commit after it is the proof
// (raftseam.go, 10). The term must not change in between: within one term
// a leader's log is never cut, so the entry read is still before the
// Barrier; across a step-down it might have been replaced.
func (g *Group) configOf(sid raft.ServerID, wait time.Duration) configState {
	if !g.IsLeader() {
		return configFollows
	}
	term := g.raft.CurrentTerm()
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return configFollows
	}
	if slices.ContainsFunc(f.Configuration().Servers, func(s raft.Server) bool { return s.ID == sid }) {
		return configNames
	}
	barrier := g.raft.Barrier(wait)
	done := make(chan error, 1)
	// The goroutine ends when raft answers the barrier: committed,
	// leadership lost, or shut down.
	go func() { done <- barrier.Error() }()
	select {
	case err := <-done:
		switch {
		case !g.IsLeader():
			return configFollows
		case err != nil || g.raft.CurrentTerm() != term:
			return configUnconfirmed
		}
		return configOmits
	case <-time.After(wait):
		return configUnconfirmed
	}
}

// answerConfig reads a configuration question's server id from conn,
// answers it and closes conn; raw is conn without TLS, closed on failure.
func (m *Mux) answerConfig(conn, raw net.Conn, group uint32) {
	if err := conn.SetDeadline(time.Now().Add(m.headerWait)); err != nil {
		_ = raw.Close()
		return
	}
	sid, err := readConfigID(conn)
	if err != nil {
		m.reject(raw)
		return
	}
	state := configNotHosted
	if m.configs != nil {
		state = m.configs(group, sid)
	}
	if err := conn.SetDeadline(time.Now().Add(m.headerWait)); err != nil {
		_ = raw.Close()
		return
	}
	if _, err := conn.Write([]byte{byte(state)}); err != nil {
		_ = raw.Close()
		return
	}
	_ = conn.Close()
}

// configAt asks the Mux at addr about its replica of group and server sid,
// within ctx (closing the connection when ctx ends).
func (m *Mux) configAt(ctx context.Context, addr string, group uint32, sid raft.ServerID) (configState, error) {
	q, err := encodeConfigQuestion(group, sid)
	if err != nil {
		return 0, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(configAskTimeout)
	}
	timeout := time.Until(deadline)
	if timeout <= 0 {
		return 0, context.DeadlineExceeded
	}
	conn, err := m.dial(addr, timeout)
	if err != nil {
		return 0, err
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	defer conn.Close()
	if err := conn.SetDeadline(deadline); err != nil {
		return 0, err
	}
	if _, err := conn.Write(append(slices.Clip(m.preamble), q...)); err != nil {
		return 0, err
	}
	var b [1]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err
	}
	s := configState(b[0])
	if s < configNotHosted || s > configOmits {
		return 0, fmt.Errorf("%w: %d", errConfigWire, b[0])
	}
	return s, nil
}

// encodeConfigQuestion is the header and body of a question about group's
// replica and server sid.
func encodeConfigQuestion(group uint32, sid raft.ServerID) ([]byte, error) {
	if len(sid) == 0 || len(sid) > configIDBytesMax {
		return nil, fmt.Errorf("raftnode: server id %q: want 1 to %d bytes", sid, configIDBytesMax)
	}
	q := make([]byte, 0, muxPrefixBytes+1+len(sid))
	q = append(q, muxConfigMagic...)
	q = binary.BigEndian.AppendUint32(q, group)
	q = append(q, byte(len(sid)))
	return append(q, sid...), nil
}

// readConfigID reads a question's server id; the caller sets the deadline.
func readConfigID(r io.Reader) (raft.ServerID, error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	if n[0] == 0 {
		return "", errConfigWire
	}
	b := make([]byte, n[0])
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return raft.ServerID(b), nil
}
