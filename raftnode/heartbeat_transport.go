package raftnode

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// beatTransport is a group's raft transport: its NetworkTransport (with
// follower progress, metrics_state.go), except that heartbeats go through
// the node's beatCoalescer (heartbeat.go) and appends through its
// appendSender (append.go). It also keeps raft's heartbeat handler, which
// the coalescer calls for heartbeats peers send this group.
type beatTransport struct {
	progressTransport
	beats *beatCoalescer
	// appends is nil in tests of heartbeats alone: appends then go on
	// the group's own connections.
	appends *appendSender
	group   uint32
	// interval is heartbeatGapMin (raftseam.go): raft waits at least this
	// long after a periodic heartbeat's answer before the next one.
	// Read-only.
	interval time.Duration
	// peers maps a follower's id to the address its coalescer is dialed at.
	peers raft.ServerAddressProvider
	// stop is the group's stop channel: a waiting heartbeat gives up.
	stop <-chan struct{}

	// raft is set once raft has started (heartbeats read its commit index).
	raft atomic.Pointer[raft.Raft]
	// encoded is the last address EncodePeer encoded.
	encoded atomic.Pointer[encodedPeer]
	// handler is raft's heartbeat handler, set by SetHeartbeatHandler.
	handler atomic.Pointer[func(raft.RPC)]
	// verifying counts VerifyLeader calls in progress (read.go): while
	// one waits, every heartbeat of the group goes out at once.
	verifying atomic.Int32

	mu struct {
		sync.Mutex
		// last is when the previous heartbeat to each address returned;
		// guarded by mu.
		last map[string]time.Time
	}

	// gate keeps raft's heartbeat handler from running once the group
	// closes: each call holds the read lock, closeHeartbeats the write
	// lock.
	gate struct {
		sync.RWMutex
		// closed is set once by closeHeartbeats; guarded by gate.
		closed bool
	}
}

func newBeatTransport(p progressTransport, beats *beatCoalescer, appends *appendSender, group uint32, interval time.Duration, peers raft.ServerAddressProvider, stop <-chan struct{}) *beatTransport {
	t := &beatTransport{progressTransport: p, beats: beats, appends: appends, group: group, interval: interval, peers: peers, stop: stop}
	t.mu.last = map[string]time.Time{}
	return t
}

// AppendEntriesPipeline refuses, so raft replicates to each follower one
// AppendEntries at a time (each carrying every entry up to the leader's
// last, at most MaxAppendEntries). hashicorp/raft v1.7.3's pipeline can
// wedge: when a follower answers Success=false, raft's pipelineDecode
// returns and nothing reads the pipeline's done channel again; the
// decoder parks on it, and a send raft's loop still picks (its trigger
// and the closed finish channel race) parks on the in-progress channel.
// pipelineReplicate, stuck in that send, then neither replicates to the
// follower again (heartbeats keep it from starting an election) nor lets
// Shutdown return. A raftnode test's Node.Close hung on it in CI
// (grafana/pyroscope#5518 describes the same and turns pipelining off).
func (t *beatTransport) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

// SetHeartbeatHandler keeps raft's handler, behind the gate, for the
// coalescer. The NetworkTransport gets none: every node sends heartbeats in
// frames, so none arrives on a group's own connection (one that did would
// reach raft through its RPC channel, as without a handler).
func (t *beatTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	gated := func(rpc raft.RPC) {
		t.gate.RLock()
		defer t.gate.RUnlock()
		if !t.gate.closed {
			cb(rpc)
		}
	}
	t.handler.Store(&gated)
}

// closeHeartbeats waits for raft's heartbeat handler calls in progress and
// lets no other run: the handler may write the term to the stable store,
// and raft's Shutdown does not wait for it, so without this a heartbeat
// racing the group's close wrote to a closed store and raft panicked.
// Heartbeats after it go unanswered, as raft leaves them once shut down.
func (t *beatTransport) closeHeartbeats() {
	t.gate.Lock()
	t.gate.closed = true
	t.gate.Unlock()
}

// AppendEntries sends a heartbeat (isHeartbeat, raftseam.go) through the
// coalescer, any other append through the append sender, unless its entries
// carry more than appendViaFrameMax bytes: those go on the group's own
// connections.
func (t *beatTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if !isHeartbeat(args) {
		size := appendBytesOf(args)
		if t.appends == nil || size > appendViaFrameMax {
			return t.progressTransport.AppendEntries(id, target, args, resp)
		}
		return t.sendAppend(id, target, args, size, resp)
	}
	// A raft address names the replica's incarnation (incarnation.go): it
	// goes in the frame; the coalescer dials the node.
	target = t.peerAddr(id, target)
	addr := dialAddr(string(target))
	b := &pendingBeat{
		group:       t.group,
		incarnation: incarnationOf(string(target)),
		req:         args,
		commit:      func() uint64 { return t.leaderCommit(args.Term) },
		done:        make(chan error, 1),
	}
	err := t.beats.send(addr, b, t.urgent(addr), t.stop)
	t.mu.Lock()
	t.mu.last[addr] = time.Now()
	t.mu.Unlock()
	if err == nil {
		*resp = b.resp
	}
	t.progress.note(id, args, resp, err)
	return err
}

// sendAppend sends an append through the node's append sender, addressed
// as a heartbeat is.
func (t *beatTransport) sendAppend(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, size int, resp *raft.AppendEntriesResponse) error {
	target = t.peerAddr(id, target)
	a := newAppend()
	a.group, a.incarnation, a.req, a.size = t.group, incarnationOf(string(target)), args, size
	err := t.appends.send(dialAddr(string(target)), a, t.stop)
	if err == nil {
		*resp = a.resp
	}
	a.recycle()
	t.progress.note(id, args, resp, err)
	return err
}

// peerAddr is where raft's transport would send to id: its address
// provider's answer, or target.
func (t *beatTransport) peerAddr(id raft.ServerID, target raft.ServerAddress) raft.ServerAddress {
	if a, err := t.peers.ServerAddr(id); err == nil {
		return a
	}
	return target
}

// urgent reports whether a heartbeat must go out at once: raft sent it
// early (VerifyLeader, a retry after a failure), it is the first to this
// follower, or a VerifyLeader waits.
func (t *beatTransport) urgent(addr string) bool {
	if t.verifying.Load() > 0 {
		return true
	}
	t.mu.Lock()
	last, ok := t.mu.last[addr]
	t.mu.Unlock()
	return !ok || time.Since(last) < t.interval
}

// leaderCommit is the commit index to send with a heartbeat of term, or 0
// unless this replica leads in that term. The commit index is read first:
// leadership of a term is one interval, so if raft still leads in term
// afterwards, it did when the index was read.
func (t *beatTransport) leaderCommit(term uint64) uint64 {
	r := t.raft.Load()
	if r == nil {
		return 0
	}
	c := r.CommitIndex()
	if r.State() != raft.Leader || r.CurrentTerm() != term {
		return 0
	}
	return c
}

// encodedPeer is an address and its encoding.
type encodedPeer struct {
	addr raft.ServerAddress
	b    []byte
}

// EncodePeer encodes addr as the wrapped transport does, remembering the
// last one: raft encodes its own address into the header of every RPC it
// sends (a copy of the string each time), and nothing writes to a
// header's address.
func (t *beatTransport) EncodePeer(id raft.ServerID, addr raft.ServerAddress) []byte {
	if e := t.encoded.Load(); e != nil && e.addr == addr {
		return e.b
	}
	b := t.progressTransport.EncodePeer(id, addr)
	b = b[:len(b):len(b)] // an append to one header's address copies
	t.encoded.Store(&encodedPeer{addr: addr, b: b})
	return b
}
