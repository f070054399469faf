package raftnode

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// Incarnations at the Mux (incarnation.go). Every raft connection's header
// names the incarnation it is addressed to (mux.go), and a Mux refuses a
// raft connection whose incarnation is not its replica's, so an RPC a
// sender addressed to an earlier incarnation (a vote, a pre-vote, an
// append, a snapshot, a timeout-now) never reaches raft. A probe (the
// group id after muxProbeMagic) asks which incarnation of the group a node
// hosts: the Mux answers with it (8 bytes) and closes, or just closes if it
// hosts none. AddVoter asks it for the server id to add.

// ErrNotHosted is returned by AddVoter when the node does not host the
// group (HostGroup it first).
var ErrNotHosted = errors.New("raftnode: the node does not host the group")

// answerProbe writes the layer's incarnation to conn and closes it; raw is
// conn without TLS, closed on a failed write.
func (l *muxLayer) answerProbe(conn, raw net.Conn, wait time.Duration) {
	var b [muxIncBytes]byte
	binary.BigEndian.PutUint64(b[:], l.incarnation)
	if err := conn.SetDeadline(time.Now().Add(wait)); err != nil {
		_ = raw.Close()
		return
	}
	if _, err := conn.Write(b[:]); err != nil {
		_ = raw.Close()
		return
	}
	_ = conn.Close()
}

// refuseStale counts and logs, at most once a second, a connection
// addressed to incarnation inc, not this replica's.
func (l *muxLayer) refuseStale(inc uint64, conn net.Conn) {
	l.stale.Add(1)
	if l.log == nil {
		return
	}
	now, last := time.Now().UnixNano(), l.lastStaleLog.Load()
	if now-last < int64(handshakeLogEvery) || !l.lastStaleLog.CompareAndSwap(last, now) {
		return
	}
	l.log.Warn("refusing raft traffic addressed to another incarnation of this replica",
		"addressed_to", formatIncarnation(inc), "incarnation", formatIncarnation(l.incarnation),
		"remote", conn.RemoteAddr().String(), "refused", l.stale.Load())
}

// incarnationAt asks the Mux at addr which incarnation of group it hosts.
func (m *Mux) incarnationAt(addr string, group uint32, timeout time.Duration) (uint64, error) {
	conn, err := m.dial(addr, timeout)
	if err != nil {
		return 0, fmt.Errorf("raftnode: ask %s for its replica of group %d: %w", addr, group, err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return 0, err
	}
	if _, err := conn.Write(append(slices.Clip(m.preamble), encodeProbe(group)...)); err != nil {
		return 0, fmt.Errorf("raftnode: ask %s for its replica of group %d: %w", addr, group, err)
	}
	var b [muxIncBytes]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, fmt.Errorf("%w: group %d at %s", ErrNotHosted, group, addr)
		}
		return 0, fmt.Errorf("raftnode: ask %s for its replica of group %d: %w", addr, group, err)
	}
	return binary.BigEndian.Uint64(b[:]), nil
}
