package raftnode

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// AppendEntries coalesced per node pair, as heartbeats are (heartbeat.go).
//
// Raft's NetworkTransport sends each group's AppendEntries on the group's
// own connection, msgpack-encoded, as one round trip: a write and a read
// on each side per append, for appends of a few commands. Under load a
// node-log commit (nodelog.go) ends the log writes of all the groups a node
// leads at once, and their appends to a follower leave together. So a
// group's transport (heartbeat_transport.go) hands its appends to the
// node's appendSender instead: every append queued for one peer node goes
// in one frame on one Mux connection, hand-encoded (append_wire.go). The
// peer hands each append to its group's raft, one group at a time in the
// order they came (a lane per group and connection), and returns each
// answer as soon as raft gives it, with whatever other answers are ready,
// in one frame: a group whose follower waits on its disk never holds up
// another group's answer. Raft still sends one append at a time per
// follower (the pipeline is off: heartbeat_transport.go), and raft's own
// answers are what the leader gets; nothing here makes one up.
//
// An append whose entries carry more than appendViaFrameMax bytes (a
// follower catching up) goes on the group's own connection, as do votes,
// snapshots and timeouts. The two paths never reorder one follower's
// appends: raft waits for each answer before it sends the next.

// appendGroupID is the Mux group id of append frames; Config.Validate
// keeps it from raft groups.
const appendGroupID = math.MaxUint32 - 1

var (
	// errAppendsClosed fails appends queued when the node shuts down.
	errAppendsClosed = errors.New("raftnode: append sender closed")
	// errAppendRefused is an append the peer node answered with an error of
	// its own (for example: it hosts no replica of the group).
	errAppendRefused = errors.New("raftnode: append refused")
)

// appendReceiver is a local replica as append frames see it (Group).
type appendReceiver interface {
	// incarnationID is the replica's incarnation (incarnation.go).
	incarnationID() uint64
	// appendEntries hands req to raft and returns raft's answer; it gives
	// up when stop closes.
	appendEntries(req *raft.AppendEntriesRequest, stop <-chan struct{}) (*raft.AppendEntriesResponse, error)
}

// appendSender sends this node's appends to its peers and serves the
// appends peers send it. It owns, per peer it sends to, a writer goroutine
// and a reader per connection; per accepted connection, a reader, a
// writer and a lane per group; and its accept loop. close stops and waits
// for them all.
type appendSender struct {
	// layer is the Mux's layer for appendGroupID.
	layer raft.StreamLayer
	// timeout bounds an append's round trip (raft's transport timeout).
	timeout time.Duration
	// receiver finds the local replica of a group (nil: none here).
	receiver func(group uint32) appendReceiver
	// observe, if set, is told the appends in each frame this node sends:
	// requests if sent, else answers (metrics).
	observe func(sent bool, appends int)

	// sent and served count the appends this node sent and answered
	// through frames (tests; the metric counts them per frame).
	sent, served atomic.Uint64

	done chan struct{}
	wg   sync.WaitGroup

	mu struct {
		sync.Mutex
		// closed is set once by close; guarded by mu.
		closed bool
		// peers maps a dial address to its sender; guarded by mu.
		peers map[string]*appendPeer
		// conns are accepted connections, closed by close; guarded by mu.
		conns map[net.Conn]struct{}
	}
}

func newAppendSender(layer raft.StreamLayer, timeout time.Duration, receiver func(uint32) appendReceiver, observe func(sent bool, appends int)) *appendSender {
	s := &appendSender{layer: layer, timeout: timeout, receiver: receiver, observe: observe, done: make(chan struct{})}
	s.mu.peers = map[string]*appendPeer{}
	s.mu.conns = map[net.Conn]struct{}{}
	s.wg.Add(1)
	go s.serve()
	return s
}

// close stops sending and serving, fails the appends waiting, closes every
// connection and waits for all goroutines.
func (s *appendSender) close() {
	s.mu.Lock()
	if s.mu.closed {
		s.mu.Unlock()
		return
	}
	s.mu.closed = true
	peers, conns := s.mu.peers, s.mu.conns
	s.mu.conns = map[net.Conn]struct{}{}
	s.mu.Unlock()
	close(s.done)
	_ = s.layer.Close()
	for _, p := range peers {
		p.dropConn(nil, errAppendsClosed)
	}
	for conn := range conns {
		_ = conn.Close()
	}
	s.wg.Wait()
}

// pendingAppend is one append waiting for its answer.
type pendingAppend struct {
	group       uint32
	incarnation uint64
	req         *raft.AppendEntriesRequest
	// size is appendBytesOf(req), for filling frames.
	size int
	// resp is raft's answer, written by the connection's reader before
	// it sends nil on done; done carries the error otherwise, once.
	resp raft.AppendEntriesResponse
	done chan error // buffered: nobody blocks on a caller
	// answered: send received done's one value; nothing refers to the
	// append any more once its caller read resp (newAppend, recycle).
	answered bool
}

// pendingAppends keeps answered appends with their channels.
var pendingAppends sync.Pool

// newAppend returns an empty append with its done channel.
func newAppend() *pendingAppend {
	if a, ok := pendingAppends.Get().(*pendingAppend); ok {
		return a
	}
	return &pendingAppend{done: make(chan error, 1)}
}

// recycle keeps a for newAppend if its one answer was received: else the
// answer may still come, on a channel that must not be reused.
func (a *pendingAppend) recycle() {
	if a.answered {
		*a = pendingAppend{done: a.done}
		pendingAppends.Put(a)
	}
}

// send queues a for the peer at addr and waits for its answer, for the
// frame's error, for the timeout, for close, or for stop (the group's own
// shutdown). A timeout drops the connection, as raft's transport does: the
// peer is stuck or gone, and every append on it would time out too.
func (s *appendSender) send(addr string, a *pendingAppend, stop <-chan struct{}) error {
	p, err := s.peer(addr)
	if err != nil {
		return err
	}
	c := p.enqueue(a)
	t := getTimer(s.timeout)
	defer putTimer(t)
	select {
	case err := <-a.done:
		a.answered = true
		return err
	case <-t.C:
		err := fmt.Errorf("raftnode: append to %s: no answer within %s", addr, s.timeout)
		p.dropConn(c, err)
		return err
	case <-stop:
		return fmt.Errorf("raftnode: append to %s: group stopping", addr)
	case <-s.done:
		return errAppendsClosed
	}
}

func (s *appendSender) peer(addr string) (*appendPeer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, errAppendsClosed
	}
	p := s.mu.peers[addr]
	if p == nil {
		p = &appendPeer{s: s, addr: addr, wake: make(chan struct{}, 1)}
		s.mu.peers[addr] = p
		s.wg.Add(1)
		go p.run()
	}
	return p, nil
}

// appendPeer sends one peer node's appends: its goroutine (run) dials and
// writes frames; each connection's reader (appendConn.read) hands out the
// answers.
type appendPeer struct {
	s    *appendSender
	addr string
	wake chan struct{} // capacity 1: appends are queued

	mu struct {
		sync.Mutex
		// queue holds appends not yet in a frame; guarded by mu.
		queue []*pendingAppend
		// spare is an emptied queue's array, for the next queue: run
		// gives back the batches take handed out whole. Guarded by mu.
		spare []*pendingAppend
		// conn is the connection to the peer, nil until dialed or after an
		// error; guarded by mu.
		conn *appendConn
	}
	// reqs and frame are write's, reused from frame to frame; owned by
	// run's goroutine.
	reqs  []appendReq
	frame []byte
}

// appendConn is one connection to a peer and the appends sent on it that
// await their answers.
type appendConn struct {
	conn net.Conn
	mu   struct {
		sync.Mutex
		// next is the id of the next append sent; waiting maps ids to
		// appends sent; failed, once set, is why the connection is
		// dead, and fails what is sent after. All guarded by mu.
		next    uint64
		waiting map[uint64]*pendingAppend
		failed  error
	}
}

// enqueue queues a and returns the connection it will most likely go on
// (nil: none yet), for send to drop on a timeout.
func (p *appendPeer) enqueue(a *pendingAppend) *appendConn {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.queue = append(p.mu.queue, a)
	select {
	case p.wake <- struct{}{}:
	default:
	}
	return p.mu.conn
}

func (p *appendPeer) run() {
	defer p.s.wg.Done()
	for {
		select {
		case <-p.wake:
		case <-p.s.done:
			p.mu.Lock()
			batch := p.mu.queue
			p.mu.queue = nil
			p.mu.Unlock()
			for _, a := range batch {
				a.done <- errAppendsClosed
			}
			return
		}
		// The appends of the groups one node-log commit ended are on
		// their way: let them in before the frame goes.
		runtime.Gosched()
		for {
			batch, whole := p.take()
			if len(batch) == 0 {
				break
			}
			p.write(batch)
			if whole {
				p.giveBack(batch)
			}
		}
	}
}

// take empties the queue up to a frame's fill; whole reports that batch
// was the whole queue, whose array the queue no longer shares.
func (p *appendPeer) take() (batch []*pendingAppend, whole bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, size := 0, 0
	for n < len(p.mu.queue) && n < appendsPerFrameMax && (n == 0 || size < appendFrameFill) {
		size += p.mu.queue[n].size
		n++
	}
	if n == len(p.mu.queue) {
		batch = p.mu.queue
	} else {
		batch = p.mu.queue[:n:n]
	}
	p.mu.queue = p.mu.queue[n:]
	if len(p.mu.queue) == 0 {
		// The next appends go to the spare array, if run gave one back.
		p.mu.queue, p.mu.spare = p.mu.spare, nil
		return batch, true
	}
	return batch, false
}

// giveBack keeps a batch's array, once written, for a later queue: a
// queue of appends allocated none of its own under a steady load.
func (p *appendPeer) giveBack(batch []*pendingAppend) {
	clear(batch) // the appends are answered elsewhere: keep none alive
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.spare == nil {
		p.mu.spare = batch[:0]
	}
}

// appendFrameKept bounds the frame buffer a peer keeps between frames:
// the fill of a frame and some.
const appendFrameKept = 2 * appendFrameFill

// write sends batch as one frame. An I/O error drops the connection and
// fails every append waiting on it.
func (p *appendPeer) write(batch []*pendingAppend) {
	c, err := p.connect()
	if err != nil {
		err = fmt.Errorf("raftnode: appends to %s: %w", p.addr, err)
		for _, a := range batch {
			a.done <- err
		}
		return
	}
	reqs := slices.Grow(p.reqs[:0], len(batch))[:len(batch)]
	defer func() {
		clear(reqs) // keep no entries alive
		p.reqs = reqs[:0]
	}()
	c.mu.Lock()
	if err := c.mu.failed; err != nil {
		c.mu.Unlock()
		for _, a := range batch {
			a.done <- err
		}
		return
	}
	for i, a := range batch {
		id := c.mu.next
		c.mu.next++
		c.mu.waiting[id] = a
		reqs[i] = appendReq{id: id, group: a.group, incarnation: a.incarnation, req: *a.req}
	}
	c.mu.Unlock()
	frame := appendAppendReqs(p.frame, reqs)
	if cap(frame) <= appendFrameKept {
		p.frame = frame
	}
	err = c.conn.SetWriteDeadline(time.Now().Add(p.s.timeout))
	if err == nil {
		_, err = c.conn.Write(frame)
	}
	if err != nil {
		p.dropConn(c, fmt.Errorf("raftnode: appends to %s: %w", p.addr, err))
		return
	}
	p.s.sent.Add(uint64(len(batch)))
	if p.s.observe != nil {
		p.s.observe(true, len(batch))
	}
}

// connect returns the peer connection, dialing it if there is none, and
// starts its reader.
func (p *appendPeer) connect() (*appendConn, error) {
	p.mu.Lock()
	c := p.mu.conn
	p.mu.Unlock()
	if c != nil {
		return c, nil
	}
	conn, err := p.s.layer.Dial(raft.ServerAddress(p.addr), p.s.timeout)
	if err != nil {
		return nil, err
	}
	c = &appendConn{conn: conn}
	c.mu.waiting = map[uint64]*pendingAppend{}
	p.mu.Lock()
	defer p.mu.Unlock()
	// Under p.mu, as close's dropConn takes it: a connection dialed while
	// the sender closes is closed here, or close sees it.
	select {
	case <-p.s.done:
		_ = conn.Close()
		return nil, errAppendsClosed
	default:
	}
	p.mu.conn = c
	p.s.wg.Add(1)
	go p.read(c)
	return c, nil
}

// read hands out the answers that arrive on c until it fails.
func (p *appendPeer) read(c *appendConn) {
	defer p.s.wg.Done()
	r := bufio.NewReader(c.conn)
	for {
		body, err := readFrame(r, appendFrameBytesMax, errAppendFrame)
		var replies []appendReply
		if err == nil {
			replies, err = decodeAppendReplies(body)
		}
		if err != nil {
			p.dropConn(c, fmt.Errorf("raftnode: appends to %s: %w", p.addr, err))
			return
		}
		for i := range replies {
			c.mu.Lock()
			a := c.mu.waiting[replies[i].id]
			delete(c.mu.waiting, replies[i].id)
			c.mu.Unlock()
			if a == nil {
				continue // its caller timed out, and dropped c meanwhile
			}
			if replies[i].err != "" {
				a.done <- fmt.Errorf("%w by %s: %s", errAppendRefused, p.addr, replies[i].err)
				continue
			}
			a.resp = replies[i].resp
			a.done <- nil
		}
	}
}

// dropConn closes c (nil: whichever connection the peer has) and fails
// every append waiting on it with err; the next frame dials anew.
func (p *appendPeer) dropConn(c *appendConn, err error) {
	p.mu.Lock()
	if c == nil {
		c = p.mu.conn
	}
	if c != nil && p.mu.conn == c {
		p.mu.conn = nil
	}
	p.mu.Unlock()
	if c == nil {
		return
	}
	_ = c.conn.Close()
	c.mu.Lock()
	if c.mu.failed == nil {
		c.mu.failed = err
	}
	waiting := c.mu.waiting
	c.mu.waiting = map[uint64]*pendingAppend{}
	c.mu.Unlock()
	for _, a := range waiting {
		a.done <- err
	}
}

// serve accepts peers' append connections until close shuts the layer.
func (s *appendSender) serve() {
	defer s.wg.Done()
	for {
		conn, err := s.layer.Accept()
		if err != nil {
			return // the layer is closed: only close (or the Mux's) does that
		}
		if !s.track(conn) {
			_ = conn.Close()
			return
		}
	}
}

// track starts conn's goroutines, unless the sender is closed: wg.Add
// happens under mu while open, so close's Wait never races it.
func (s *appendSender) track(conn net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return false
	}
	s.mu.conns[conn] = struct{}{}
	s.wg.Add(1)
	go s.serveConn(conn)
	return true
}

func (s *appendSender) untrack(conn net.Conn) {
	s.mu.Lock()
	delete(s.mu.conns, conn)
	s.mu.Unlock()
	_ = conn.Close()
}

// appendLaneDepth is how many appends of one group a lane holds before the
// connection's reader waits: raft sends one at a time per follower, so
// more than one means a leader retried after a timeout.
const appendLaneDepth = 16

// appendServed is an accepted connection's state shared by its reader,
// lanes and writer.
type appendServed struct {
	s    *appendSender
	conn net.Conn
	// gone is closed when the reader stops: lanes and writer end.
	gone chan struct{}
	wake chan struct{} // capacity 1: replies are queued
	mu   struct {
		sync.Mutex
		// replies wait for the writer; spare is an array the writer
		// gave back, for the next replies. Guarded by mu.
		replies, spare []appendReply
	}
	// frame is writeReplies' buffer, reused; owned by its goroutine.
	frame []byte
}

// serveConn reads one peer's frames until the connection fails, handing
// each append to its group's lane. It sets no read deadline: a peer
// leading no group here may send nothing for a long time, and TCP
// keepalive finds a dead one.
func (s *appendSender) serveConn(conn net.Conn) {
	defer s.wg.Done()
	defer s.untrack(conn)
	sv := &appendServed{s: s, conn: conn, gone: make(chan struct{}), wake: make(chan struct{}, 1)}
	var lanes sync.WaitGroup
	defer func() {
		close(sv.gone)
		lanes.Wait()
	}()
	lanes.Add(1)
	go func() {
		defer lanes.Done()
		sv.writeReplies()
	}()
	byGroup := map[uint32]chan *appendReq{}
	r := bufio.NewReader(conn)
	for {
		body, err := readFrame(r, appendFrameBytesMax, errAppendFrame)
		if err != nil {
			return
		}
		reqs, err := decodeAppendReqs(body)
		if err != nil {
			return
		}
		for i := range reqs {
			ch := byGroup[reqs[i].group]
			if ch == nil {
				ch = make(chan *appendReq, appendLaneDepth)
				byGroup[reqs[i].group] = ch
				lanes.Add(1)
				go func() {
					defer lanes.Done()
					sv.lane(ch)
				}()
			}
			select {
			case ch <- &reqs[i]:
			case <-s.done:
				return
			}
		}
	}
}

// lane answers one group's appends in the order they came.
func (sv *appendServed) lane(ch <-chan *appendReq) {
	for {
		select {
		case ar := <-ch:
			sv.reply(sv.answer(ar))
		case <-sv.gone:
			return
		}
	}
}

// answer hands one append to its group's raft. A group not hosted here, or
// hosted as another incarnation than the one the append is addressed to,
// fails that append alone, as its own connection would have been refused
// (mux.go).
func (sv *appendServed) answer(ar *appendReq) appendReply {
	r := sv.s.receiver(ar.group)
	if r == nil {
		return appendReply{id: ar.id, err: fmt.Sprintf("raftnode: no replica of group %d here", ar.group)}
	}
	if inc := r.incarnationID(); inc != ar.incarnation {
		return appendReply{id: ar.id, err: fmt.Sprintf("raftnode: append of group %d addressed to incarnation %s; this replica is %s",
			ar.group, formatIncarnation(ar.incarnation), formatIncarnation(inc))}
	}
	resp, err := r.appendEntries(&ar.req, sv.gone)
	if err != nil {
		return appendReply{id: ar.id, err: err.Error()}
	}
	return appendReply{id: ar.id, resp: *resp}
}

func (sv *appendServed) reply(r appendReply) {
	sv.mu.Lock()
	sv.mu.replies = append(sv.mu.replies, r)
	sv.mu.Unlock()
	select {
	case sv.wake <- struct{}{}:
	default:
	}
}

// writeReplies sends the answers ready, each batch in one frame, until the
// connection goes; a failed write closes it, which ends the reader.
func (sv *appendServed) writeReplies() {
	for {
		select {
		case <-sv.wake:
		case <-sv.gone:
			return
		}
		runtime.Gosched() // the other answers of the same commit, as in run
		sv.mu.Lock()
		replies := sv.mu.replies
		sv.mu.replies, sv.mu.spare = sv.mu.spare, nil
		sv.mu.Unlock()
		all := replies
		for len(replies) > 0 {
			n := min(len(replies), appendsPerFrameMax)
			err := sv.conn.SetWriteDeadline(time.Now().Add(sv.s.timeout))
			if err == nil {
				sv.frame = appendAppendReplies(sv.frame, replies[:n])
				_, err = sv.conn.Write(sv.frame)
				if cap(sv.frame) > appendFrameKept {
					sv.frame = nil
				}
			}
			if err != nil {
				_ = sv.conn.Close()
				return
			}
			sv.s.served.Add(uint64(n))
			if sv.s.observe != nil {
				sv.s.observe(false, n)
			}
			replies = replies[n:]
		}
		if all != nil {
			clear(all)
			sv.mu.Lock()
			if sv.mu.spare == nil {
				sv.mu.spare = all[:0]
			}
			sv.mu.Unlock()
		}
	}
}

// appendEntries hands req to raft through the channel it serves RPCs from
// (relay.go) and returns raft's answer.
func (g *Group) appendEntries(req *raft.AppendEntriesRequest, stop <-chan struct{}) (*raft.AppendEntriesResponse, error) {
	ch, _ := respChans.Get().(chan raft.RPCResponse)
	if ch == nil {
		ch = make(chan raft.RPCResponse, 1)
	}
	select {
	case g.rpcs <- raft.RPC{Command: req, RespChan: ch}:
	case <-g.stop:
		return nil, fmt.Errorf("raftnode: group %d is stopping", g.id)
	case <-stop:
		return nil, errAppendsClosed
	}
	select {
	case r := <-ch:
		// raft answers once: the channel is empty and no one's again.
		respChans.Put(ch)
		if r.Error != nil {
			return nil, fmt.Errorf("raftnode: group %d: %w", g.id, r.Error)
		}
		resp, ok := r.Response.(*raft.AppendEntriesResponse)
		if !ok {
			return nil, fmt.Errorf("raftnode: group %d answered an append with %T", g.id, r.Response)
		}
		return resp, nil
	case <-g.stop:
		return nil, fmt.Errorf("raftnode: group %d is stopping", g.id)
	case <-stop:
		return nil, errAppendsClosed
	}
}

// respChans keeps appendEntries' answer channels: a channel goes back
// only once raft's one answer on it was received.
var respChans sync.Pool

// Timers for send's waits, one an append of each group to each peer:
// reused, as a stopped timer never fires late (Go 1.23's timers).
var sendTimers sync.Pool

func getTimer(d time.Duration) *time.Timer {
	if t, ok := sendTimers.Get().(*time.Timer); ok {
		t.Reset(d)
		return t
	}
	return time.NewTimer(d)
}

func putTimer(t *time.Timer) {
	t.Stop()
	sendTimers.Put(t)
}
