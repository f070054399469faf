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

// Two more headers beside muxMagic's (mux.go), for replica incarnations
// (incarnation.go):
//
//   - muxIncMagic, the group id and the incarnation (big-endian uint64) a
//     connection is addressed to; a connection to incarnation 0 keeps the
//     plain header, so nodes of an earlier version understand it.
//   - muxProbeMagic and the group id: the Mux answers with the incarnation
//     of its replica of the group (8 bytes) and closes, or just closes if
//     it hosts none. AddVoter asks it for the server id to add.
//
// A Mux refuses a raft connection whose incarnation is not its replica's,
// so an RPC a sender addressed to an earlier incarnation (a vote, a
// pre-vote, an append, a snapshot, a timeout-now) never reaches raft.
const (
	muxIncMagic    = "SLI1"
	muxProbeMagic  = "SLQ1"
	muxIncBytes    = 8
	muxIncHdrBytes = muxHeaderBytes + muxIncBytes
)

// ErrNotHosted is returned by AddVoter when the node does not host the
// group (HostGroup it first).
var ErrNotHosted = errors.New("raftnode: the node does not host the group")

// muxHeader is a decoded header of any kind.
type muxHeader struct {
	group       uint32
	incarnation uint64
	probe       bool
	// first is the first byte after the header (mux.go), read but for a
	// probe.
	first byte
}

// readHeader reads and decodes a header; the caller sets the deadline.
func readHeader(conn net.Conn) (muxHeader, error) {
	var hdr [muxHeaderBytes]byte
	if _, err := io.ReadFull(conn, hdr[:]); err != nil {
		return muxHeader{}, err
	}
	group := binary.BigEndian.Uint32(hdr[muxMagicLen:])
	switch string(hdr[:muxMagicLen]) {
	case muxMagic:
		return muxHeader{group: group}, nil
	case muxProbeMagic:
		return muxHeader{group: group, probe: true}, nil
	case muxIncMagic:
		var inc [muxIncBytes]byte
		if _, err := io.ReadFull(conn, inc[:]); err != nil {
			return muxHeader{}, err
		}
		return muxHeader{group: group, incarnation: binary.BigEndian.Uint64(inc[:])}, nil
	}
	return muxHeader{}, errMuxBadMagic
}

// encodeHeader is the header of a raft connection to group's replica with
// incarnation inc.
func encodeHeader(group uint32, inc uint64) []byte {
	if inc == 0 {
		hdr := encodeMuxHeader(group)
		return hdr[:]
	}
	hdr := make([]byte, muxIncHdrBytes)
	copy(hdr, muxIncMagic)
	binary.BigEndian.PutUint32(hdr[muxMagicLen:], group)
	binary.BigEndian.PutUint64(hdr[muxHeaderBytes:], inc)
	return hdr
}

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
	hdr := encodeMuxHeader(group)
	copy(hdr[:], muxProbeMagic)
	if _, err := conn.Write(append(slices.Clip(m.preamble), hdr[:]...)); err != nil {
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
