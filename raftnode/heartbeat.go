package raftnode

import (
	"errors"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Heartbeats coalesced per node pair (as CockroachDB does).
//
// Raft sends every follower of every group a heartbeat as a synchronous
// round trip on the group's own connection; on an idle cluster those round
// trips were most of the CPU (docs/PERFORMANCE-SHAPE.md). Instead, a group's
// transport (heartbeat_transport.go) hands a heartbeat to the node's
// beatCoalescer: periodic ones wait for the node-wide tick, urgent ones
// (VerifyLeader waits on them) go at once, and every heartbeat queued for
// one peer node goes in one frame on one Mux connection (heartbeat_send.go,
// heartbeat_wire.go). The peer hands each to its group's raft and returns
// raft's own answers in one frame (heartbeat_serve.go): VerifyLeader and
// the leader lease count those answers, so none is ever made up here.
//
// Each heartbeat also carries its group's commit index, which raft's lack:
// followers learn commits from frames rather than from raft's empty appends
// (leader_commit.go), and date them for bounded-stale reads.

// beatGroupID is the Mux group id of heartbeat frames; Config.Validate
// keeps it from raft groups.
const beatGroupID = math.MaxUint32

var (
	// errBeatsClosed fails heartbeats queued when the node shuts down.
	errBeatsClosed = errors.New("raftnode: heartbeat coalescer closed")
	// errBeatRefused is a heartbeat the peer node answered with an error of
	// its own (for example: it hosts no replica of the group).
	errBeatRefused = errors.New("raftnode: heartbeat refused")
)

// beatCoalescer is a node's heartbeat sender and server. It owns one
// goroutine per peer node it sends to, one per accepted connection and its
// accept loop; close stops and waits for them all.
type beatCoalescer struct {
	// layer is the Mux's layer for beatGroupID: Dial reaches a peer's
	// coalescer, Accept yields peers' connections, TLS included.
	layer raft.StreamLayer
	// tick is the period periodic heartbeats wait for, and timeout bounds
	// one frame's round trip; both read-only.
	tick, timeout time.Duration

	// frames counts the frames this node has answered (tests, and a
	// measure of coalescing: heartbeats per frame).
	frames atomic.Uint64

	done chan struct{}
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		// closed is set once by close; guarded by mu.
		closed bool
		// peers maps a dial address to its sender; guarded by mu.
		peers map[string]*beatPeer
		// receivers maps a group id to the local replica that answers its
		// heartbeats; guarded by mu.
		receivers map[uint32]beatReceiver
		// conns are accepted connections, closed by close; guarded by mu.
		conns map[net.Conn]struct{}
	}
}

func newBeatCoalescer(layer raft.StreamLayer, tick, timeout time.Duration) *beatCoalescer {
	c := &beatCoalescer{layer: layer, tick: tick, timeout: timeout, done: make(chan struct{})}
	c.mu.peers = map[string]*beatPeer{}
	c.mu.receivers = map[uint32]beatReceiver{}
	c.mu.conns = map[net.Conn]struct{}{}
	c.wg.Add(1)
	go c.serve()
	return c
}

// close stops sending and serving, fails queued heartbeats, closes every
// connection and waits for all goroutines.
func (c *beatCoalescer) close() {
	c.mu.Lock()
	if c.mu.closed {
		c.mu.Unlock()
		return
	}
	c.mu.closed = true
	peers, conns := c.mu.peers, c.mu.conns
	c.mu.conns = map[net.Conn]struct{}{}
	c.mu.Unlock()
	close(c.done)
	_ = c.layer.Close()
	for _, p := range peers {
		p.closeConn()
	}
	for conn := range conns {
		_ = conn.Close()
	}
	c.wg.Wait()
}
