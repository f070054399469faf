package raftnode

import (
	"bufio"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
)

// beatReceiver is a local replica as heartbeat frames see it (Group).
type beatReceiver interface {
	// incarnationID is the replica's incarnation (incarnation.go).
	incarnationID() uint64
	// heartbeat hands req to raft's heartbeat handler and returns its
	// answer.
	heartbeat(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error)
	// noteCommit takes a leader's commit index, sent with the heartbeat
	// req, for bounded-stale reads and for raft (leader_commit.go).
	noteCommit(req *raft.AppendEntriesRequest, k knownCommit)
}

// register makes r answer heartbeats for group; unregister undoes it if r
// is still the receiver.
func (c *beatCoalescer) register(group uint32, r beatReceiver) {
	c.mu.Lock()
	c.mu.receivers[group] = r
	c.mu.Unlock()
}

func (c *beatCoalescer) unregister(group uint32, r beatReceiver) {
	c.mu.Lock()
	if c.mu.receivers[group] == r {
		delete(c.mu.receivers, group)
	}
	c.mu.Unlock()
}

func (c *beatCoalescer) receiver(group uint32) beatReceiver {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.receivers[group]
}

// serve accepts peers' heartbeat connections until close shuts the layer.
func (c *beatCoalescer) serve() {
	defer c.wg.Done()
	for {
		conn, err := c.layer.Accept()
		if err != nil {
			return // the layer is closed: only close (or the Mux's) does that
		}
		if !c.track(conn) {
			_ = conn.Close()
			return
		}
	}
}

// track starts conn's goroutine, unless the coalescer is closed: wg.Add
// happens under mu while open, so close's Wait never races it.
func (c *beatCoalescer) track(conn net.Conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return false
	}
	c.mu.conns[conn] = struct{}{}
	c.wg.Add(1)
	go c.serveConn(conn)
	return true
}

func (c *beatCoalescer) untrack(conn net.Conn) {
	c.mu.Lock()
	delete(c.mu.conns, conn)
	c.mu.Unlock()
	_ = conn.Close()
}

// serveConn answers one peer's frames in order until the connection fails.
// It sets no read deadline: a peer leading no group here may send nothing
// for a long time, and TCP keepalive finds a dead one.
//
// Dating commit indexes: frames on a connection are strictly sequential
// (heartbeat_send.go: one goroutine writes a frame, reads its answer, and
// only then reads the commit indexes of the next; urgent heartbeats take
// the same path). So a frame's commit indexes were read after its previous
// frame arrived here, and a write acknowledged before that arrival is
// covered: by this leader, it was committed before; by an earlier leader,
// FreshView's term check covers it; by a later leader, that leader was
// elected without this replica (raft still took the heartbeat's term here),
// which in a group of three or four voters needs this leader's vote, so
// came after the read. In larger groups it rests on the leader lease, as a
// leader's own FreshView does. Hence a commit index is known as of the
// previous frame's arrival, never its own; a connection's first frame
// dates none.
func (c *beatCoalescer) serveConn(conn net.Conn) {
	defer c.wg.Done()
	defer c.untrack(conn)
	r := bufio.NewReader(conn)
	var prev time.Time
	for {
		body, err := readBeatFrame(r)
		if err != nil {
			return
		}
		arrived := time.Now()
		reqs, err := decodeBeatReqs(body)
		if err != nil {
			return
		}
		replies := make([]beatReply, len(reqs))
		for i := range reqs {
			replies[i] = c.answer(&reqs[i], prev)
		}
		prev = arrived
		c.frames.Add(1)
		if err := conn.SetWriteDeadline(time.Now().Add(c.timeout)); err != nil {
			return
		}
		if _, err := conn.Write(encodeBeatReplies(replies)); err != nil {
			return
		}
	}
}

// answer hands one heartbeat to its group's raft. A group not hosted here,
// or hosted as another incarnation than the one the heartbeat is addressed
// to, fails that heartbeat alone, as its own connection would have been
// refused (mux.go).
func (c *beatCoalescer) answer(br *beatReq, prev time.Time) beatReply {
	r := c.receiver(br.group)
	if r == nil {
		return beatReply{err: fmt.Sprintf("raftnode: no replica of group %d here", br.group)}
	}
	if inc := r.incarnationID(); inc != br.incarnation {
		return beatReply{err: fmt.Sprintf("raftnode: heartbeat of group %d addressed to incarnation %s; this replica is %s",
			br.group, formatIncarnation(br.incarnation), formatIncarnation(inc))}
	}
	resp, err := r.heartbeat(&br.req)
	if err != nil {
		return beatReply{err: err.Error()}
	}
	// Success with the request's term: raft took the sender as the leader
	// of that term.
	if br.commit > 0 && !prev.IsZero() && resp.Success && resp.Term == br.req.Term {
		r.noteCommit(&br.req, knownCommit{at: prev, index: br.commit, term: br.req.Term})
	}
	return beatReply{resp: *resp}
}

// incarnationID is the replica's incarnation (incarnation.go).
func (g *Group) incarnationID() uint64 { return g.incarnation }

// heartbeat hands req to raft's heartbeat handler and returns its answer.
func (g *Group) heartbeat(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
	fn := g.trans.handler.Load()
	if fn == nil {
		return nil, fmt.Errorf("raftnode: group %d has no heartbeat handler yet", g.id)
	}
	resp, err := answerHeartbeat(*fn, req)
	if err != nil {
		return nil, fmt.Errorf("raftnode: group %d: %w", g.id, err)
	}
	return resp, nil
}
