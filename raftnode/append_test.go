package raftnode

// The append sender (append.go) over real Muxes on loopback: appends of
// several groups are answered each by its own group, a group waiting on
// its raft never holds up another group's answer, a group the peer does
// not host (or hosts as another incarnation) fails alone, a lost
// connection fails the waiting callers at once, a timeout drops the
// connection and the next append dials anew; and the frames' encoding
// round-trips every field raft sets.

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// testAppendReceiver answers appends the way raft does, with LastLog the
// last entry's index (or lastLog if none). If block is set, it signals
// entered and waits on block (or stop).
type testAppendReceiver struct {
	inc     uint64
	lastLog uint64
	entered chan struct{}
	block   chan struct{}
	mu      sync.Mutex
	got     []*raft.AppendEntriesRequest
}

func (r *testAppendReceiver) incarnationID() uint64 { return r.inc }

func (r *testAppendReceiver) appendEntries(req *raft.AppendEntriesRequest, stop <-chan struct{}) (*raft.AppendEntriesResponse, error) {
	if r.block != nil {
		r.entered <- struct{}{}
		select {
		case <-r.block:
		case <-stop:
			return nil, errAppendsClosed
		}
	}
	r.mu.Lock()
	r.got = append(r.got, req)
	r.mu.Unlock()
	last := r.lastLog
	if n := len(req.Entries); n > 0 {
		last = req.Entries[n-1].Index
	}
	return &raft.AppendEntriesResponse{Term: req.Term, LastLog: last, Success: true}, nil
}

// testAppends starts an append sender on m whose local replicas are
// receivers, closed when the test ends.
func testAppends(t *testing.T, m *Mux, timeout time.Duration, receivers map[uint32]*testAppendReceiver) *appendSender {
	t.Helper()
	s := newAppendSender(mustLayer(t, m, appendGroupID), timeout, func(g uint32) appendReceiver {
		if r, ok := receivers[g]; ok {
			return r
		}
		return nil
	}, nil)
	t.Cleanup(s.close)
	return s
}

func testAppend(group uint32, first uint64, entries int) *pendingAppend {
	req := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("n1"), Addr: []byte("a1")}, Term: 7,
		PrevLogEntry: first - 1, PrevLogTerm: 7, LeaderCommitIndex: first - 1}
	for i := range entries {
		req.Entries = append(req.Entries, &raft.Log{Index: first + uint64(i), Term: 7, Type: raft.LogCommand,
			Data: bytes.Repeat([]byte{byte(group)}, 100+i), AppendedAt: time.Unix(1700000000, int64(i))})
	}
	return &pendingAppend{group: group, req: req, size: appendBytesOf(req), done: make(chan error, 1)}
}

type appendResult struct {
	a   *pendingAppend
	err error
}

func TestAppendsAnsweredOutOfOrder(t *testing.T) {
	testAppendsAnsweredOutOfOrder(t, nil, nil)
}

func TestAppendsAnsweredOutOfOrderOverTLS(t *testing.T) {
	pki := newTestPKI(t)
	testAppendsAnsweredOutOfOrder(t, pki.muxTLS(t, "n1", true), pki.muxTLS(t, "n2", true))
}

func testAppendsAnsweredOutOfOrder(t *testing.T, tlsA, tlsB *MuxTLS) {
	ma, mb := serveTestMux(t, headerTimeout, tlsA), serveTestMux(t, headerTimeout, tlsB)
	stuck := &testAppendReceiver{entered: make(chan struct{}, 1), block: make(chan struct{})}
	receivers := map[uint32]*testAppendReceiver{1: stuck, 2: {}, 3: {}}
	a, b := testAppends(t, ma, beatTestTimeout, nil), testAppends(t, mb, beatTestTimeout, receivers)
	addr := mb.Addr().String()
	out := make(chan appendResult, 3)
	first := testAppend(1, 10, 3)
	go func() { out <- appendResult{first, a.send(addr, first, nil)} }()
	<-stuck.entered
	for g := uint32(2); g <= 3; g++ {
		ap := testAppend(g, 20*uint64(g), int(g))
		go func() { out <- appendResult{ap, a.send(addr, ap, nil)} }()
	}
	for range 2 {
		r := <-out
		if r.err != nil || r.a.group == 1 {
			t.Fatalf("append of group %d = %v while group 1 waits on its raft; want groups 2 and 3 answered first", r.a.group, r.err)
		}
		if want := r.a.req.Entries[len(r.a.req.Entries)-1].Index; r.a.resp.LastLog != want || !r.a.resp.Success || r.a.resp.Term != 7 {
			t.Errorf("group %d got %+v, want LastLog %d, Success, Term 7", r.a.group, r.a.resp, want)
		}
	}
	close(stuck.block)
	if r := <-out; r.err != nil || r.a.resp.LastLog != 12 {
		t.Fatalf("append of group 1 = %v (%+v), want nil and LastLog 12", r.err, r.a.resp)
	}
	// Each receiver got its own append, every field intact.
	for g, r := range receivers {
		r.mu.Lock()
		if len(r.got) != 1 {
			t.Fatalf("group %d received %d appends, want 1", g, len(r.got))
		}
		got := r.got[0]
		r.mu.Unlock()
		want := testAppend(g, got.PrevLogEntry+1, len(got.Entries)).req
		if !appendReqEqual(got, want) || len(got.Entries) == 0 {
			t.Errorf("group %d received %+v, want %+v", g, got, want)
		}
	}
	// The peer counts an answer once its write returns, which may be after
	// the sender has read it.
	deadline := time.Now().Add(5 * time.Second)
	for b.served.Load() < 3 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := b.served.Load(); n != 3 {
		t.Errorf("peer answered %d appends, want 3", n)
	}
}

// A group the peer does not host, or hosts as another incarnation, fails
// its append alone.
func TestAppendUnknownGroupFailsAlone(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a := testAppends(t, ma, beatTestTimeout, nil)
	testAppends(t, mb, beatTestTimeout, map[uint32]*testAppendReceiver{1: {inc: 0x1f}, 2: {inc: 0x2f}})
	addr := mb.Addr().String()
	for _, ap := range []*pendingAppend{testAppend(99, 1, 1), testAppend(2, 1, 1)} { // group 2 addressed to incarnation 0
		if err := a.send(addr, ap, nil); !errors.Is(err, errAppendRefused) {
			t.Fatalf("append of group %d (unhosted, or another incarnation) = %v, want %v", ap.group, err, errAppendRefused)
		}
	}
	known := testAppend(1, 5, 2)
	known.incarnation = 0x1f
	if err := a.send(addr, known, nil); err != nil || known.resp.LastLog != 6 {
		t.Fatalf("append of group 1 = %v (%+v), want nil and LastLog 6", err, known.resp)
	}
}

func TestAppendLostConnectionFailsCallersAtOnce(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	a := testAppends(t, ma, beatTestTimeout, nil)
	stuck := &testAppendReceiver{entered: make(chan struct{}, 1), block: make(chan struct{})}
	receivers := map[uint32]*testAppendReceiver{1: stuck}
	b := newAppendSender(mustLayer(t, mb, appendGroupID), beatTestTimeout, func(g uint32) appendReceiver { return receivers[g] }, nil)
	addr := mb.Addr().String()
	out := make(chan error, 1)
	go func() { out <- a.send(addr, testAppend(1, 1, 1), nil) }()
	<-stuck.entered
	// The peer shuts down with the append unanswered: its connections
	// close.
	b.close()
	select {
	case err := <-out:
		if err == nil {
			t.Error("append to a peer that closed = nil, want an error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("caller still waiting 5s after the connection closed")
	}
	if err := a.send(addr, testAppend(1, 2, 1), nil); err == nil {
		t.Error("append to a closed peer = nil, want an error")
	}
}

// A timeout drops the connection (as raft's transport does); the late
// answer goes nowhere, and the next append dials anew.
func TestAppendTimeoutDropsConnection(t *testing.T) {
	ma, mb := newTestMux(t, headerTimeout), newTestMux(t, headerTimeout)
	const timeout = 300 * time.Millisecond
	a := testAppends(t, ma, timeout, nil)
	stuck := &testAppendReceiver{entered: make(chan struct{}, 2), block: make(chan struct{})}
	b := testAppends(t, mb, beatTestTimeout, map[uint32]*testAppendReceiver{1: stuck, 2: {}})
	addr := mb.Addr().String()
	start := time.Now()
	err := a.send(addr, testAppend(1, 1, 1), nil)
	if err == nil || time.Since(start) < timeout {
		t.Fatalf("append to a stuck replica = %v after %v, want an error after %v", err, time.Since(start), timeout)
	}
	close(stuck.block)
	next := testAppend(2, 1, 1)
	if err := a.send(addr, next, nil); err != nil || next.resp.LastLog != 1 {
		t.Fatalf("append after the timeout = %v (%+v), want nil and LastLog 1", err, next.resp)
	}
	// The peer closes the timed-out connection once its stuck handler
	// returns and its answer fails to write: after close(stuck.block),
	// racing the second append, so wait for it.
	conns := 0
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		b.mu.Lock()
		conns = len(b.mu.conns)
		b.mu.Unlock()
		if conns == 1 || time.Now().After(deadline) {
			break
		}
	}
	if conns != 1 {
		t.Errorf("peer holds %d connections 5 s on, want 1: the timed-out one closed", conns)
	}
}

func appendReqEqual(a, b *raft.AppendEntriesRequest) bool {
	if !bytes.Equal(a.RPCHeader.ID, b.RPCHeader.ID) || !bytes.Equal(a.RPCHeader.Addr, b.RPCHeader.Addr) ||
		a.RPCHeader.ProtocolVersion != b.RPCHeader.ProtocolVersion || a.Term != b.Term || !bytes.Equal(a.Leader, b.Leader) ||
		a.PrevLogEntry != b.PrevLogEntry || a.PrevLogTerm != b.PrevLogTerm || a.LeaderCommitIndex != b.LeaderCommitIndex ||
		len(a.Entries) != len(b.Entries) {
		return false
	}
	for i, e := range a.Entries {
		f := b.Entries[i]
		if e.Index != f.Index || e.Term != f.Term || e.Type != f.Type || !bytes.Equal(e.Data, f.Data) ||
			!bytes.Equal(e.Extensions, f.Extensions) || !e.AppendedAt.Equal(f.AppendedAt) {
			return false
		}
	}
	return true
}

func TestAppendFrameRoundTrip(t *testing.T) {
	full := testAppend(3, 41, 3).req
	full.Leader = []byte("old-leader")
	full.Entries[1].Extensions = []byte{1, 2, 3}
	full.Entries[1].AppendedAt = time.Time{}
	full.Entries[2].Type = raft.LogConfiguration
	full.Entries[2].Data = nil
	reqs := []appendReq{
		{id: 1<<64 - 1, group: 1<<32 - 1, incarnation: 0xfeed, req: *full},
		{id: 0, group: 0, req: raft.AppendEntriesRequest{Term: 1}},
	}
	frame := encodeAppendReqs(reqs)
	got, err := decodeAppendReqs(frame[4:])
	if err != nil || len(got) != len(reqs) {
		t.Fatalf("decode = %d requests, %v; want %d", len(got), err, len(reqs))
	}
	for i := range reqs {
		if got[i].id != reqs[i].id || got[i].group != reqs[i].group || got[i].incarnation != reqs[i].incarnation ||
			!appendReqEqual(&got[i].req, &reqs[i].req) {
			t.Errorf("request %d = %+v, want %+v", i, got[i], reqs[i])
		}
	}
	replies := []appendReply{
		{id: 9, resp: raft.AppendEntriesResponse{RPCHeader: raft.RPCHeader{ID: []byte("n2")}, Term: 7, LastLog: 44, Success: true, NoRetryBackoff: true}},
		{id: 10, err: "raftnode: no replica of group 5 here"},
	}
	frame = encodeAppendReplies(replies)
	gotReplies, err := decodeAppendReplies(frame[4:])
	if err != nil || len(gotReplies) != 2 || gotReplies[0].id != 9 || gotReplies[0].resp.LastLog != 44 ||
		!gotReplies[0].resp.Success || !gotReplies[0].resp.NoRetryBackoff || gotReplies[1].err != replies[1].err {
		t.Fatalf("replies = %+v, %v; want %+v", gotReplies, err, replies)
	}
	// Every truncation is refused, never a panic.
	full.Entries[0].Data = bytes.Repeat([]byte{7}, 1000)
	frame = encodeAppendReqs(reqs[:1])
	for n := 0; n < len(frame)-4; n++ {
		if _, err := decodeAppendReqs(frame[4 : 4+n]); !errors.Is(err, errAppendFrame) {
			t.Fatalf("decode of %d of %d bytes = %v, want %v", n, len(frame)-4, err, errAppendFrame)
		}
	}
}

// FuzzAppendFrames: decoding arbitrary bytes never panics, and whatever
// decodes re-encodes to a frame that decodes the same.
func FuzzAppendFrames(f *testing.F) {
	f.Add(encodeAppendReqs([]appendReq{{id: 1, group: 2, incarnation: 3, req: *testAppend(2, 5, 2).req}})[4:])
	f.Add(encodeAppendReplies([]appendReply{{id: 1, err: "x"}, {id: 2, resp: raft.AppendEntriesResponse{Term: 3, Success: true}}})[4:])
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, p []byte) {
		if reqs, err := decodeAppendReqs(p); err == nil {
			again, err := decodeAppendReqs(encodeAppendReqs(reqs)[4:])
			if err != nil || len(again) != len(reqs) {
				t.Fatalf("re-decode = %d, %v; want %d", len(again), err, len(reqs))
			}
			for i := range reqs {
				if again[i].id != reqs[i].id || !appendReqEqual(&again[i].req, &reqs[i].req) {
					t.Fatalf("request %d changed in a round trip", i)
				}
			}
		}
		if replies, err := decodeAppendReplies(p); err == nil {
			again, err := decodeAppendReplies(encodeAppendReplies(replies)[4:])
			if err != nil || len(again) != len(replies) {
				t.Fatalf("re-decode replies = %d, %v; want %d", len(again), err, len(replies))
			}
		}
	})
}

// In a cluster, raft's appends to followers travel in frames, and the
// followers apply what the leader does.
func TestClusterAppendsTravelInFrames(t *testing.T) {
	tc := startTestCluster(t, nil)
	g, li := tc.leader()
	mustPropose(t, g, testShow())
	for i := range 20 {
		mustPropose(t, g, holdCmd(fmt.Sprintf("c%d", i), "r", 0, fmt.Sprintf("A%d", i+1)))
	}
	for i, n := range tc.nodes {
		if i == li {
			continue
		}
		fg, _ := n.Group(0)
		waitApplied(t, fg, g.Machine().Applied(), 10*time.Second)
		if served := n.appends.served.Load(); served == 0 {
			t.Errorf("follower %d answered no append through frames", i)
		}
	}
	if sent := tc.nodes[li].appends.sent.Load(); sent < 21 {
		t.Errorf("leader sent %d appends through frames, want at least one per proposal (21)", sent)
	}
}

// The Mux group ids of heartbeat and append frames are no raft group's,
// and a group id must fit the node log's keys.
func TestConfigRefusesFrameGroupIDs(t *testing.T) {
	for _, id := range []uint32{beatGroupID, appendGroupID} {
		c := Config{NodeID: "n1", DataDir: "d", RaftAddr: "a", ClusterID: testClusterID,
			Peers: []Peer{{ID: "n1", RaftAddr: "a"}}, Groups: map[uint32][]string{id: {"n1"}}}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("Validate(group %d) = %v, want a reserved-id error", id, err)
		}
	}
	big := Config{NodeID: "n1", DataDir: "d", RaftAddr: "a", ClusterID: testClusterID,
		Peers: []Peer{{ID: "n1", RaftAddr: "a"}}, Groups: map[uint32][]string{maxGroupID + 1: {"n1"}}}
	if err := big.Validate(); err == nil || !strings.Contains(err.Error(), "node log") {
		t.Errorf("Validate(group %d) = %v, want a too-large-id error", maxGroupID+1, err)
	}
	ok := Config{NodeID: "n1", DataDir: "d", RaftAddr: "a", ClusterID: testClusterID,
		Peers: []Peer{{ID: "n1", RaftAddr: "a"}}, Groups: map[uint32][]string{0: {"n1"}, maxGroupID: {"n1"}}}
	if err := ok.Validate(); err != nil {
		t.Errorf("Validate(group 0) = %v, want nil", err)
	}
}
