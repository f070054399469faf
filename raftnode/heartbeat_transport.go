package raftnode

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// beatTransport is a group's raft transport: its NetworkTransport (with
// follower progress, metrics_state.go), except that heartbeats go through
// the node's beatCoalescer (beats.go). It also keeps raft's heartbeat
// handler, which the coalescer calls for heartbeats peers send this group.
type beatTransport struct {
	progressTransport
	beats *beatCoalescer
	group uint32
	// interval is HeartbeatTimeout/10: raft waits at least this long after
	// a periodic heartbeat's answer before the next one. Read-only.
	interval time.Duration
	// peers maps a follower's id to the address its coalescer is dialed at.
	peers raft.ServerAddressProvider
	// stop is the group's stop channel: a waiting heartbeat gives up.
	stop <-chan struct{}

	// raft is set once raft has started (heartbeats read its commit index).
	raft atomic.Pointer[raft.Raft]
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
}

func newBeatTransport(p progressTransport, beats *beatCoalescer, group uint32, interval time.Duration, peers raft.ServerAddressProvider, stop <-chan struct{}) *beatTransport {
	t := &beatTransport{progressTransport: p, beats: beats, group: group, interval: interval, peers: peers, stop: stop}
	t.mu.last = map[string]time.Time{}
	return t
}

// SetHeartbeatHandler keeps raft's handler for the coalescer and gives it
// to the NetworkTransport too, which still serves heartbeats a peer sends
// on the group's own connection.
func (t *beatTransport) SetHeartbeatHandler(cb func(raft.RPC)) {
	t.handler.Store(&cb)
	t.progressTransport.SetHeartbeatHandler(cb)
}

// AppendEntries sends a heartbeat through the coalescer, anything else on
// the group's own connections.
func (t *beatTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if !isHeartbeat(args) {
		return t.progressTransport.AppendEntries(id, target, args, resp)
	}
	// A raft address names the replica's incarnation (incarnation.go): it
	// goes in the frame; the coalescer dials the node.
	target = t.peerAddr(id, target)
	addr := dialAddr(string(target))
	if t.beats.plain(addr) {
		return t.progressTransport.AppendEntries(id, target, args, resp)
	}
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

// isHeartbeat reports whether req is what raft's heartbeat loop sends, by
// the test raft's NetworkTransport applies on receipt (handleCommand).
func isHeartbeat(req *raft.AppendEntriesRequest) bool {
	leader := req.RPCHeader.Addr
	if len(leader) == 0 {
		leader = req.Leader
	}
	return req.Term != 0 && leader != nil && req.PrevLogEntry == 0 && req.PrevLogTerm == 0 &&
		len(req.Entries) == 0 && req.LeaderCommitIndex == 0
}

func (g *Group) incarnationID() uint64 { return g.incarnation }

// heartbeat hands req to raft's heartbeat handler, which answers before
// it returns (or not at all when raft is shutting down).
func (g *Group) heartbeat(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
	fn := g.trans.handler.Load()
	if fn == nil {
		return nil, fmt.Errorf("raftnode: group %d has no heartbeat handler yet", g.id)
	}
	ch := make(chan raft.RPCResponse, 1)
	(*fn)(raft.RPC{Command: req, RespChan: ch})
	select {
	case r := <-ch:
		if r.Error != nil {
			return nil, r.Error
		}
		resp, ok := r.Response.(*raft.AppendEntriesResponse)
		if !ok || resp == nil {
			return nil, errors.New("raftnode: heartbeat handler gave no append response")
		}
		return resp, nil
	default:
		return nil, fmt.Errorf("raftnode: group %d is shutting down", g.id)
	}
}

// noteCommit records a commit index a leader's heartbeat frame carried
// with req. Raft applies only what it knows committed, so FreshView would
// wait in vain for an index beyond it: such an index is first handed to
// raft (learnCommit), and recorded only if raft takes it.
func (g *Group) noteCommit(req *raft.AppendEntriesRequest, k knownCommit) {
	r := g.trans.raft.Load()
	if r == nil || (k.index > r.CommitIndex() && !g.learnCommit(r, req, k)) {
		return
	}
	g.commits.noteLater(k)
}

// learnCommit tells this follower's raft that the leader of k.term has
// committed k.index, with the AppendEntries that leader would send for it:
// no entries, the previous entry (k.index, k.term), and commit index
// k.index. It is built only if this replica holds that entry: by raft's
// log matching its log then equals the leader's up to k.index, all
// committed, so raft may apply it; raft checks the entry again itself.
// It goes to raft like any append (raft's answer is dropped: the leader
// has the heartbeat's), unless raft is busy, when the next frame retries.
// The leader sends a commit index only with its own term's entry there;
// before that, FreshView would refuse it anyway (stale.go).
func (g *Group) learnCommit(r *raft.Raft, hb *raft.AppendEntriesRequest, k knownCommit) bool {
	if r.State() != raft.Follower || r.CurrentTerm() != k.term {
		return false
	}
	var e raft.Log
	if err := g.logs.GetLog(k.index, &e); err != nil || e.Term != k.term {
		return false
	}
	req := &raft.AppendEntriesRequest{
		RPCHeader: hb.RPCHeader, Term: k.term, Leader: hb.Leader,
		PrevLogEntry: k.index, PrevLogTerm: k.term, LeaderCommitIndex: k.index,
	}
	select {
	case g.rpcs <- raft.RPC{Command: req, RespChan: make(chan raft.RPCResponse, 1)}:
		return true
	default:
		return false
	}
}

// noteLater keeps k if it is known as of a later time than the record.
func (c *commitKnown) noteLater(k knownCommit) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if k.at.After(c.last.at) {
		c.last = k
	}
}
