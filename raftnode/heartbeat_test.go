package raftnode

// The heartbeat coalescer (heartbeat.go) over real Muxes on loopback, plain and
// TLS: heartbeats of several groups travel in one frame, each caller gets
// its own group's answer, a group the peer does not host fails alone, a
// periodic heartbeat waits for the tick unless an urgent one flushes it, a
// lost connection fails the waiting callers at once rather than after the
// frame timeout, frames to a peer are strictly sequential, and a peer
// that is not serving frames yet fails a heartbeat without a lasting mark.

import (
	"bufio"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// beatTestTimeout is the frame timeout in these tests: long, so that a
// prompt failure cannot be the timeout's.
const beatTestTimeout = 30 * time.Second

// testReceiver answers heartbeats the way raft does, with LastLog set to
// its lastLog so a test sees whose answer a caller got. If block is set,
// heartbeat signals entered and waits on block.
type testReceiver struct {
	inc     uint64
	lastLog uint64
	entered chan struct{}
	block   chan struct{}
}

func (r *testReceiver) heartbeat(req *raft.AppendEntriesRequest) (*raft.AppendEntriesResponse, error) {
	if r.block != nil {
		r.entered <- struct{}{}
		<-r.block
	}
	return &raft.AppendEntriesResponse{Term: req.Term, LastLog: r.lastLog, Success: true}, nil
}

func (r *testReceiver) incarnationID() uint64 { return r.inc }

func (r *testReceiver) noteCommit(*raft.AppendEntriesRequest, knownCommit) {}

// newTestBeats starts a coalescer on m, closed when the test ends.
func newTestBeats(t *testing.T, m *Mux, tick time.Duration) *beatCoalescer {
	t.Helper()
	c := newBeatCoalescer(mustLayer(t, m, beatGroupID), tick, beatTestTimeout)
	t.Cleanup(c.close)
	return c
}

func testBeat(group uint32) *pendingBeat {
	return &pendingBeat{
		group: group,
		req:   &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("n1"), Addr: []byte("a1")}, Term: 7},
		done:  make(chan error, 1),
	}
}

type beatResult struct {
	group uint32
	beat  *pendingBeat
	err   error
}

// sendBeats sends one heartbeat per group from c to addr, all periodic, and
// waits until they are queued.
func sendBeats(t *testing.T, c *beatCoalescer, addr string, groups []uint32, out chan<- beatResult) {
	t.Helper()
	for _, g := range groups {
		b := testBeat(g)
		go func() { out <- beatResult{g, b, c.send(addr, b, false, nil)} }()
	}
	deadline := time.Now().Add(muxTestWait)
	for {
		p, err := c.peer(addr)
		if err != nil {
			t.Fatal(err)
		}
		p.mu.Lock()
		n := len(p.mu.queue)
		p.mu.Unlock()
		if n == len(groups) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d heartbeats queued", n, len(groups))
		}
		time.Sleep(time.Millisecond)
	}
}

func TestBeatsShareOneFrame(t *testing.T) {
	testBeatsShareOneFrame(t, nil, nil)
}

func TestBeatsShareOneFrameOverTLS(t *testing.T) {
	pki := newTestPKI(t)
	testBeatsShareOneFrame(t, pki.muxTLS(t, "n1", true), pki.muxTLS(t, "n2", true))
}

func testBeatsShareOneFrame(t *testing.T, tlsA, tlsB *MuxTLS) {
	ma, mb := serveTestMux(t, headerTimeout, tlsA), serveTestMux(t, headerTimeout, tlsB)
	// A tick of an hour: only the urgent heartbeat can send the others.
	a, b := newTestBeats(t, ma, time.Hour), newTestBeats(t, mb, time.Hour)
	for g := uint32(1); g <= 4; g++ {
		b.register(g, &testReceiver{lastLog: 100 + uint64(g)})
	}
	addr := mb.Addr().String()
	out := make(chan beatResult, 4)
	sendBeats(t, a, addr, []uint32{1, 2, 3}, out)
	select {
	case r := <-out:
		t.Fatalf("periodic heartbeat of group %d returned (%v) before the tick or an urgent one", r.group, r.err)
	case <-time.After(50 * time.Millisecond):
	}
	urgent := testBeat(4)
	go func() { out <- beatResult{4, urgent, a.send(addr, urgent, true, nil)} }()
	for range 4 {
		r := <-out
		if r.err != nil {
			t.Fatalf("heartbeat of group %d = %v, want nil", r.group, r.err)
		}
		if want := 100 + uint64(r.group); r.beat.resp.LastLog != want || !r.beat.resp.Success || r.beat.resp.Term != 7 {
			t.Errorf("group %d got %+v, want LastLog %d, Success, Term 7", r.group, r.beat.resp, want)
		}
	}
	if n := b.frames.Load(); n != 1 {
		t.Errorf("peer answered %d frames, want 1 for 4 heartbeats", n)
	}
}

// A group the peer does not host, or hosts as another incarnation (a
// replica removed and added again: incarnation.go), fails its heartbeat
// alone; the frame's other heartbeats are answered.
func TestBeatsUnknownGroupFailsAlone(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a, b := newTestBeats(t, ma, time.Hour), newTestBeats(t, mb, time.Hour)
	b.register(1, &testReceiver{lastLog: 5, inc: 0x1f})
	b.register(2, &testReceiver{lastLog: 6, inc: 0x2f})
	addr := mb.Addr().String()
	out := make(chan beatResult, 2)
	sendBeats(t, a, addr, []uint32{99, 2}, out) // group 2 addressed to incarnation 0
	known := testBeat(1)
	known.incarnation = 0x1f
	if err := a.send(addr, known, true, nil); err != nil || known.resp.LastLog != 5 {
		t.Fatalf("heartbeat of group 1 = %v (%+v), want nil and LastLog 5", err, known.resp)
	}
	for range 2 {
		if r := <-out; !errors.Is(r.err, errBeatRefused) {
			t.Fatalf("heartbeat of group %d (unhosted, or another incarnation) = %v, want %v", r.group, r.err, errBeatRefused)
		}
	}
	if n := b.frames.Load(); n != 1 {
		t.Errorf("peer answered %d frames, want 1", n)
	}
}

func TestBeatsLostConnectionFailsCallersAtOnce(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a := newTestBeats(t, ma, time.Hour)
	b := newBeatCoalescer(mustLayer(t, mb, beatGroupID), time.Hour, beatTestTimeout)
	stuck := &testReceiver{entered: make(chan struct{}, 1), block: make(chan struct{})}
	b.register(1, stuck)
	b.register(2, &testReceiver{})
	addr := mb.Addr().String()
	out := make(chan beatResult, 2)
	sendBeats(t, a, addr, []uint32{2}, out)
	first := testBeat(1)
	go func() { out <- beatResult{1, first, a.send(addr, first, true, nil)} }()
	<-stuck.entered
	// The peer shuts down with the frame unanswered: its connections close.
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		b.close()
	}()
	start := time.Now()
	for range 2 {
		select {
		case r := <-out:
			if r.err == nil {
				t.Errorf("heartbeat of group %d = nil, want an error", r.group)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("callers still waiting %v after the connection closed", time.Since(start))
		}
	}
	close(stuck.block)
	<-closed
	// The next heartbeat dials again and finds no one.
	if err := a.send(addr, testBeat(2), true, nil); err == nil {
		t.Errorf("heartbeat to a closed peer = nil, want an error")
	}
}

// A follower dates the commit indexes of a frame by the previous frame's
// arrival (heartbeat_serve.go), which holds only if the sender writes no
// frame before the previous one is answered and reads its commit indexes
// after that answer, urgent heartbeats included. The test is the peer
// here, reading frames off the wire.
func TestBeatFramesAreSequential(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a := newTestBeats(t, ma, time.Hour)
	layer := mustLayer(t, mb, beatGroupID)
	addr := mb.Addr().String()
	var answered atomic.Int32 // frames the peer has answered
	beat := func(frame int32) *pendingBeat {
		b := testBeat(1)
		b.commit = func() uint64 {
			if got := answered.Load(); got != frame-1 {
				t.Errorf("frame %d read its commit index with %d frames answered, want %d", frame, got, frame-1)
			}
			return 5
		}
		return b
	}
	out := make(chan error, 4)
	first := beat(1)
	go func() { out <- a.send(addr, first, true, nil) }()
	conn, err := layer.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	r := bufio.NewReader(conn)
	readFrame := func(want int) {
		t.Helper()
		body, err := readBeatFrame(r)
		if err != nil {
			t.Fatal(err)
		}
		reqs, err := decodeBeatReqs(body)
		if err != nil || len(reqs) != want {
			t.Fatalf("frame of %d heartbeats (%v), want %d", len(reqs), err, want)
		}
	}
	answer := func(n int) {
		t.Helper()
		answered.Add(1)
		if _, err := conn.Write(encodeBeatReplies(make([]beatReply, n))); err != nil {
			t.Fatal(err)
		}
	}
	readFrame(1)
	// Urgent heartbeats while the first frame is unanswered: none goes out.
	for range 3 {
		b := beat(2)
		go func() { out <- a.send(addr, b, true, nil) }()
	}
	a.hurry()
	p, err := a.peer(addr)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(muxTestWait); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		n := len(p.mu.queue)
		p.mu.Unlock()
		if n == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 3 urgent heartbeats queued", n)
		}
	}
	if err := conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Peek(1); err == nil {
		t.Fatal("the sender wrote a frame before the previous one was answered")
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	answer(1)
	readFrame(3)
	answer(3)
	for range 4 {
		if err := <-out; err != nil {
			t.Errorf("heartbeat = %v, want nil", err)
		}
	}
}

func TestBeatsPeriodicGoAtTheTick(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a, b := newTestBeats(t, ma, 20*time.Millisecond), newTestBeats(t, mb, 20*time.Millisecond)
	b.register(1, &testReceiver{lastLog: 1})
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.send(mb.Addr().String(), testBeat(1), false, nil); err != nil {
				t.Errorf("periodic heartbeat = %v, want nil", err)
			}
		}()
	}
	wg.Wait()
	if n := b.frames.Load(); n < 1 || n > 5 {
		t.Errorf("peer answered %d frames for 5 heartbeats", n)
	}
}

func TestBeatFramesRoundTrip(t *testing.T) {
	reqs := []beatReq{
		{group: 3, req: raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ProtocolVersion: 3, ID: []byte("n1"), Addr: []byte("h:1")}, Term: 9, Leader: []byte("h:1")}, commit: 42},
		{group: beatGroupID - 1, req: raft.AppendEntriesRequest{Term: 1 << 60}},
	}
	body := encodeBeatReqs(reqs)[4:]
	got, err := decodeBeatReqs(body)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(reqs) {
		t.Fatalf("decodeBeatReqs = %v, %v; want %v", got, err, reqs)
	}
	replies := []beatReply{{err: "no"}, {resp: raft.AppendEntriesResponse{Term: 9, LastLog: 77, Success: true, NoRetryBackoff: true}}}
	gotR, err := decodeBeatReplies(encodeBeatReplies(replies)[4:])
	if err != nil || fmt.Sprint(gotR) != fmt.Sprint(replies) {
		t.Fatalf("decodeBeatReplies = %v, %v; want %v", gotR, err, replies)
	}
	if _, err := decodeBeatReqs(body[:len(body)-1]); err == nil {
		t.Errorf("decodeBeatReqs(truncated) = nil error")
	}
}

// FuzzBeatFrames: decoders never panic, and what they accept survives a
// re-encoding (uvarints may have been spelled longer than needed, so the
// bytes may differ; the values may not).
func FuzzBeatFrames(f *testing.F) {
	f.Add(encodeBeatReqs([]beatReq{{group: 1, req: raft.AppendEntriesRequest{Term: 2, Leader: []byte("x")}, commit: 3}})[4:])
	f.Add(encodeBeatReplies([]beatReply{{err: "e"}})[4:])
	f.Fuzz(func(t *testing.T, p []byte) {
		if reqs, err := decodeBeatReqs(p); err == nil {
			again, err := decodeBeatReqs(encodeBeatReqs(reqs)[4:])
			if err != nil || fmt.Sprint(again) != fmt.Sprint(reqs) {
				t.Errorf("requests %v re-decode to %v, %v", reqs, again, err)
			}
		}
		if replies, err := decodeBeatReplies(p); err == nil {
			again, err := decodeBeatReplies(encodeBeatReplies(replies)[4:])
			if err != nil || fmt.Sprint(again) != fmt.Sprint(replies) {
				t.Errorf("replies %v re-decode to %v, %v", replies, again, err)
			}
		}
	})
}

// A peer whose Mux closes the heartbeat connection unanswered (it is
// starting or stopping: no layer for frames yet) fails that heartbeat like
// any lost connection, and leaves no mark: once the peer serves frames, the
// next heartbeat goes in a frame on a fresh connection.
func TestBeatsPeerNotServingYetFailsThenFrames(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a := newTestBeats(t, ma, time.Hour)
	addr := mb.Addr().String()
	if err := a.send(addr, testBeat(1), true, nil); err == nil {
		t.Fatal("heartbeat to a peer without a heartbeat layer succeeded")
	}
	b := newTestBeats(t, mb, time.Hour)
	b.register(1, &testReceiver{lastLog: 5})
	beat := testBeat(1)
	if err := a.send(addr, beat, true, nil); err != nil || beat.resp.LastLog != 5 {
		t.Fatalf("heartbeat once the peer serves frames = %v (%+v), want nil and LastLog 5", err, beat.resp)
	}
	if n := b.frames.Load(); n != 1 {
		t.Errorf("peer answered %d frames, want 1", n)
	}
}

// Raft must not pipeline a group's appends: hashicorp/raft's pipeline can
// wedge replication to a follower and Shutdown (AppendEntriesPipeline's
// comment). Refusing it makes raft replicate with plain AppendEntries.
func TestGroupTransportRefusesPipelines(t *testing.T) {
	tr := newBeatTransport(progressTransport{}, nil, nil, 1, time.Millisecond, nil, nil)
	p, err := tr.AppendEntriesPipeline("n2", "127.0.0.1:1")
	if p != nil || !errors.Is(err, raft.ErrPipelineReplicationNotSupported) {
		t.Fatalf("AppendEntriesPipeline = %v, %v; want nil, raft.ErrPipelineReplicationNotSupported", p, err)
	}
}

// EncodePeer remembers the last address it encoded (raft encodes its own
// in every RPC's header) and encodes another one afresh.
func TestGroupTransportEncodePeerRemembers(t *testing.T) {
	tr := newBeatTransport(progressTransport{NetworkTransport: &raft.NetworkTransport{}}, nil, nil, 1, time.Millisecond, nil, nil)
	a := tr.EncodePeer("n1", "127.0.0.1:7001")
	b := tr.EncodePeer("n1", "127.0.0.1:7001")
	if string(a) != "127.0.0.1:7001" || &a[0] != &b[0] {
		t.Fatalf("EncodePeer = %q then %q (same array %t); want the same encoding, remembered", a, b, &a[0] == &b[0])
	}
	if cap(a) != len(a) {
		t.Errorf("the remembered encoding has room past its end (cap %d, len %d): an append would write into it", cap(a), len(a))
	}
	if c := tr.EncodePeer("n2", "127.0.0.1:7002"); string(c) != "127.0.0.1:7002" {
		t.Fatalf("EncodePeer(another) = %q", c)
	}
}
