package raftnode

import (
	"bufio"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// send queues b for the peer at addr and waits for its answer, for the
// frame's error, for close, or for stop (the group's own shutdown). An
// urgent heartbeat goes out at once, with whatever else is queued.
func (c *beatCoalescer) send(addr string, b *pendingBeat, urgent bool, stop <-chan struct{}) error {
	p, err := c.peer(addr)
	if err != nil {
		return err
	}
	p.enqueue(b, urgent)
	select {
	case err := <-b.done:
		return err
	case <-stop:
		return fmt.Errorf("raftnode: heartbeat to %s: group stopping", addr)
	case <-c.done:
		return errBeatsClosed
	}
}

// hurry sends every queued heartbeat now (a VerifyLeader is waiting). A
// peer with nothing queued is not woken: linearizable reads call this
// thousands of times a second under load.
func (c *beatCoalescer) hurry() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.mu.peers {
		p.mu.Lock()
		if len(p.mu.queue) > 0 {
			p.signal()
		}
		p.mu.Unlock()
	}
}

func (c *beatCoalescer) peer(addr string) (*beatPeer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.mu.closed {
		return nil, errBeatsClosed
	}
	p := c.mu.peers[addr]
	if p == nil {
		p = &beatPeer{c: c, addr: addr, wake: make(chan struct{}, 1), tick: time.NewTimer(time.Hour)}
		p.tick.Stop()
		c.mu.peers[addr] = p
		c.wg.Add(1)
		go p.run()
	}
	return p, nil
}

// untilTick is how long from now to the next multiple of tick: every peer
// of a node (and, clocks allowing, every node) flushes at the same instants,
// so a node wakes once per tick, not once per peer.
func untilTick(now time.Time, tick time.Duration) time.Duration {
	return tick - time.Duration(now.UnixNano()%int64(tick))
}

// pendingBeat is one heartbeat waiting for its answer. commit reads the
// leader's commit index when its frame is built (0: none to send).
type pendingBeat struct {
	group uint32
	// incarnation is the target replica's (incarnation.go): the peer
	// refuses the heartbeat if its replica is another one, as its Mux
	// refuses a group connection.
	incarnation uint64
	req         *raft.AppendEntriesRequest
	commit      func() uint64
	// resp and err are the answer, written by the peer's goroutine before
	// it sends on done.
	resp raft.AppendEntriesResponse
	err  error
	done chan error // buffered: the sender never blocks on a caller
}

// beatPeer sends one peer node's heartbeats: its goroutine (run) owns the
// connection's reads and writes; enqueue and close only touch mu.
type beatPeer struct {
	c    *beatCoalescer
	addr string
	wake chan struct{} // capacity 1: a send is due
	// tick fires at the next tick while periodic heartbeats wait; run
	// receives it itself (a timer channel, not AfterFunc: no goroutine
	// per tick). Reset and stopped under mu.
	tick *time.Timer

	mu struct {
		sync.Mutex
		// queue holds heartbeats not yet in a frame; guarded by mu.
		queue []*pendingBeat
		// armed is set while tick runs for the next tick; guarded by mu.
		armed bool
		// conn is the connection to the peer, nil until dialed or after an
		// error; guarded by mu (run uses it without the lock, close closes
		// it to end a blocked read).
		conn net.Conn
		r    *bufio.Reader
	}
}

func (p *beatPeer) enqueue(b *pendingBeat, urgent bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.queue = append(p.mu.queue, b)
	switch {
	case urgent:
		p.signal()
	case !p.mu.armed:
		p.tick.Reset(untilTick(time.Now(), p.c.tick))
		p.mu.armed = true
	}
}

func (p *beatPeer) signal() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *beatPeer) run() {
	defer p.c.wg.Done()
	for {
		select {
		case <-p.wake:
		case <-p.tick.C:
		case <-p.c.done:
			for _, b := range p.take() {
				b.done <- errBeatsClosed
			}
			return
		}
		if batch := p.take(); len(batch) > 0 {
			p.exchange(batch)
		}
	}
}

// take empties the queue (up to a frame's worth; the rest go next, at
// once) and stops the tick timer.
func (p *beatPeer) take() []*pendingBeat {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.armed {
		p.tick.Stop()
		p.mu.armed = false
	}
	batch := p.mu.queue
	if len(batch) > beatsPerFrameMax {
		batch, p.mu.queue = batch[:beatsPerFrameMax], batch[beatsPerFrameMax:]
		p.signal()
	} else {
		p.mu.queue = nil
	}
	return batch
}

// exchange sends batch as one frame, reads the answers and hands each
// caller its own. An I/O error or a malformed answer closes the connection
// and fails the whole batch at once; a heartbeat the peer refused fails
// alone.
func (p *beatPeer) exchange(batch []*pendingBeat) {
	err := p.roundTrip(batch)
	if err != nil {
		p.closeConn()
		err = fmt.Errorf("raftnode: heartbeats to %s: %w", p.addr, err)
	}
	for _, b := range batch {
		if err != nil {
			b.done <- err
		} else {
			b.done <- b.err
		}
	}
}

func (p *beatPeer) roundTrip(batch []*pendingBeat) error {
	conn, r, err := p.connect()
	if err != nil {
		return err
	}
	// Commit indexes are read now, after the answer to the previous frame
	// on this connection came back: the receiver dates them by that frame
	// (heartbeat_serve.go).
	reqs := make([]beatReq, len(batch))
	for i, b := range batch {
		reqs[i] = beatReq{group: b.group, incarnation: b.incarnation, req: *b.req}
		if b.commit != nil {
			reqs[i].commit = b.commit()
		}
	}
	if err := conn.SetDeadline(time.Now().Add(p.c.timeout)); err != nil {
		return err
	}
	_, err = conn.Write(encodeBeatReqs(reqs))
	var body []byte
	if err == nil {
		body, err = readBeatFrame(r)
	}
	if err != nil {
		return err
	}
	replies, err := decodeBeatReplies(body)
	if err != nil {
		return err
	}
	if len(replies) != len(batch) {
		return fmt.Errorf("%w: %d answers to %d heartbeats", errBeatFrame, len(replies), len(batch))
	}
	for i, b := range batch {
		if replies[i].err != "" {
			b.err = fmt.Errorf("%w by %s: %s", errBeatRefused, p.addr, replies[i].err)
			continue
		}
		b.resp = replies[i].resp
	}
	return nil
}

// connect returns the peer connection, dialing it if there is none. A
// connection dialed while the coalescer closes is closed here: close has
// already closed the one it saw.
func (p *beatPeer) connect() (conn net.Conn, r *bufio.Reader, err error) {
	p.mu.Lock()
	conn, r = p.mu.conn, p.mu.r
	p.mu.Unlock()
	if conn != nil {
		return conn, r, nil
	}
	conn, err = p.c.layer.Dial(raft.ServerAddress(p.addr), p.c.timeout)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.c.done:
		_ = conn.Close()
		return nil, nil, errBeatsClosed
	default:
	}
	p.mu.conn, p.mu.r = conn, bufio.NewReader(conn)
	return p.mu.conn, p.mu.r, nil
}

func (p *beatPeer) closeConn() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.conn != nil {
		_ = p.mu.conn.Close()
	}
	p.mu.conn, p.mu.r = nil, nil
}
