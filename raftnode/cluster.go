package raftnode

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// Cluster identity. A cluster gets a random id when it is bootstrapped
// (seatd decides who makes it and keeps it in every node's data
// directory); every raft connection starts with it, before the mux header,
// and a Mux refuses a connection that names another cluster before raft
// sees a byte of it. Without it, a node of one cluster that dials an
// address now served by a node of another (ports reused by test clusters,
// a machine rebuilt with the same addresses) would send it votes and
// appends, and two clusters with the same seed list would even form one.
// Nothing has shipped, so there is no header without the id to accept.

// ClusterID names a cluster: 16 random bytes, written in hex.
type ClusterID [16]byte

// ErrClusterID is returned for a malformed or missing cluster id.
var ErrClusterID = errors.New("raftnode: bad cluster id")

// NewClusterID draws a new id.
func NewClusterID() ClusterID {
	var id ClusterID
	rand.Read(id[:]) // never fails (crypto/rand panics instead)
	return id
}

// ParseClusterID reads an id written by String.
func ParseClusterID(s string) (ClusterID, error) {
	var id ClusterID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return ClusterID{}, fmt.Errorf("%w: %q is not %d hex digits", ErrClusterID, s, 2*len(id))
	}
	copy(id[:], b)
	if id.IsZero() {
		return ClusterID{}, fmt.Errorf("%w: all zeros", ErrClusterID)
	}
	return id, nil
}

// String is the id in lowercase hex.
func (c ClusterID) String() string { return hex.EncodeToString(c[:]) }

// IsZero reports the zero id, which names no cluster.
func (c ClusterID) IsZero() bool { return c == ClusterID{} }

// ClusterID is the id of the cluster this node belongs to.
func (n *Node) ClusterID() ClusterID { return n.cfg.ClusterID }

// The cluster preamble every raft connection starts with: muxClusterMagic,
// then the 16-byte id. The mux header (mux.go, mux_incarnation.go)
// follows it.
const (
	muxClusterMagic = "SLC1"
	muxClusterBytes = len(muxClusterMagic) + len(ClusterID{})
)

// errMuxForeign never leaves the package: route turns it into a rejection.
var errMuxForeign = errors.New("raftnode: connection from another cluster")

// encodeClusterPreamble is the preamble naming id.
func encodeClusterPreamble(id ClusterID) []byte {
	b := make([]byte, 0, muxClusterBytes)
	return append(append(b, muxClusterMagic...), id[:]...)
}

// readCluster reads the preamble and checks it names this Mux's cluster;
// a foreign one is counted and logged. The caller sets the deadline.
func (m *Mux) readCluster(conn, raw net.Conn) error {
	var b [muxClusterBytes]byte
	if _, err := io.ReadFull(conn, b[:]); err != nil {
		return err
	}
	if string(b[:len(muxClusterMagic)]) != muxClusterMagic {
		return errMuxBadMagic
	}
	var id ClusterID
	copy(id[:], b[len(muxClusterMagic):])
	if id != m.cluster {
		m.refuseForeign(id, raw)
		return errMuxForeign
	}
	return nil
}

// refuseForeign counts and logs, at most once per handshakeLogEvery, a
// connection from a node of another cluster.
func (m *Mux) refuseForeign(id ClusterID, conn net.Conn) {
	n := m.foreign.Add(1)
	if m.log == nil {
		return
	}
	now, last := time.Now().UnixNano(), m.lastForeignLog.Load()
	if now-last < int64(handshakeLogEvery) || !m.lastForeignLog.CompareAndSwap(last, now) {
		return
	}
	m.log.Warn("raft port: refusing a connection from a node of another cluster (an address of this cluster reused by another, or a node started with another cluster's data?)",
		"cluster", m.cluster.String(), "their_cluster", id.String(), "remote", conn.RemoteAddr().String(), "refused", n)
}

// Foreign returns how many connections were refused for naming another
// cluster (they count in Rejected too).
func (m *Mux) Foreign() uint64 { return m.foreign.Load() }
