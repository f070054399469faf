// This file proves the shared watch feed (feed.go) on a real one-voter
// group: many local watchers of a show share one feed, which encodes each
// change once per wire format whatever the number of watchers, and every
// watcher gets every change once, in revision order, after its first
// events. A watcher that stops taking frames delays neither the other
// watchers nor a hold; once the ring has moved past it, it catches up from
// the change log without a gap when it takes frames again.
package watch

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// fwdWait bounds every wait of these tests.
const fwdWait = 10 * time.Second

// testNode is one real node hosting one group (a single voter), its
// router and its watch hub.
type testNode struct {
	router *shard.Router
	hub    *Hub
}

// startTestNode starts the node and waits until it leads its group.
func startTestNode(t *testing.T) *testNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	self := raftnode.Peer{ID: "n1", RaftAddr: ln.Addr().String()}
	rn, err := raftnode.Start(raftnode.Config{
		NodeID: self.ID, DataDir: filepath.Join(t.TempDir(), self.ID), RaftAddr: self.RaftAddr, Listener: ln, ClusterID: raftnode.ClusterID{1},
		Peers: []raftnode.Peer{self}, Groups: map[uint32][]string{0: {"n1"}}, Bootstrap: true,
		HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatalf("raftnode.Start: %v", err)
	}
	n := &testNode{router: shard.NewRouter(rn, shard.Map{Groups: 1})}
	n.hub = New(n.router)
	t.Cleanup(func() {
		n.hub.Close()
		n.router.Close()
		rn.Close()
	})
	for deadline := time.Now().Add(fwdWait); ; time.Sleep(10 * time.Millisecond) {
		if g, err := rn.Group(0); err == nil && g.IsLeader() {
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 does not lead its group after %v", fwdWait)
		}
	}
}

// countingFormat counts its encodings.
type countingFormat struct{ n atomic.Int64 }

func (c *countingFormat) EncodeWatchEvent(e *ledgerpb.WatchEvent) ([]byte, error) {
	c.n.Add(1)
	return []byte(fmt.Sprint(e.Revision)), nil
}

// testSink records what a watch sends; while gate is set, SendFrames waits
// for it to close (a client that stopped reading).
type testSink struct {
	format *countingFormat

	mu struct {
		sync.Mutex
		gate   chan struct{}
		revs   []uint64
		events []*ledgerpb.WatchEvent // in the order sent
		shared int                    // frames with the feed's encoding
		sends  int                    // SendFrames calls: the watch's writes
	}
	got chan struct{} // signalled after each send (buffered 1)
}

func newTestSink(f *countingFormat) *testSink {
	return &testSink{format: f, got: make(chan struct{}, 1)}
}

func (s *testSink) Open(string) error           { return nil }
func (s *testSink) OpenShared(string) error     { return nil }
func (s *testSink) Format() Format              { return s.format }
func (s *testSink) IdleInterval() time.Duration { return 0 }
func (s *testSink) Idle() error                 { return nil }
func (s *testSink) Send(e *ledgerpb.WatchEvent) error {
	return s.SendFrames([]*Frame{{Event: e}})
}

func (s *testSink) SendFrames(frames []*Frame) error {
	s.mu.Lock()
	gate := s.mu.gate
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.mu.Lock()
	s.mu.sends++
	for _, f := range frames {
		s.mu.revs = append(s.mu.revs, f.Event.Revision)
		s.mu.events = append(s.mu.events, f.Event)
		if len(f.enc) > 0 {
			s.mu.shared++
		}
	}
	s.mu.Unlock()
	select {
	case s.got <- struct{}{}:
	default:
	}
	return nil
}

func (s *testSink) last() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.mu.revs) == 0 {
		return 0
	}
	return s.mu.revs[len(s.mu.revs)-1]
}

// waitRev waits until the sink sent rev.
func (s *testSink) waitRev(t *testing.T, what string, rev uint64) {
	t.Helper()
	deadline := time.After(fwdWait)
	for s.last() < rev {
		select {
		case <-s.got:
		case <-deadline:
			t.Fatalf("%s: last revision %d after %v, want %d", what, s.last(), fwdWait, rev)
		}
	}
}

// feedShow creates show on r's cluster and returns a hold func that holds
// one seat of it and returns the revision.
func feedShow(t *testing.T, n *testNode, show string) func(seat int) uint64 {
	t.Helper()
	propose := func(cmd *ledgerpb.Command) *ledgerpb.Result {
		ctx, cancel := context.WithTimeout(context.Background(), fwdWait)
		defer cancel()
		res, err := n.router.Propose(ctx, show, cmd)
		if err != nil || res.Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("Propose(%v) = %v %v, want OK", cmd.Op, res, err)
		}
		return res
	}
	propose(&ledgerpb.Command{ClientId: "admin", RequestId: "create-" + show, Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{
		TokenKey: make([]byte, 32), Show: &ledgerpb.Show{ShowId: show,
			Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}},
			Rows:       []*ledgerpb.Row{{Name: "A", Seats: 200, Category: "std"}}}}}})
	return func(seat int) uint64 {
		// A client per seat: a client may hold only so many at once.
		return propose(&ledgerpb.Command{ClientId: fmt.Sprint("c", seat), RequestId: fmt.Sprint("hold-", seat), Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{
			ShowId: show, SeatIds: []string{fmt.Sprint("A", seat)}}}}).Revision
	}
}

// watchInto runs a watch of show into sink until the test ends.
func watchInto(t *testing.T, h *Hub, show string, sink Sink) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Watch(ctx, show, 0, false, sink)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

func TestFeedEncodesEachChangeOnceForAllWatchers(t *testing.T) {
	n := startTestNode(t)
	hold := feedShow(t, n, "f1")
	format := &countingFormat{}
	const watchers, holds = 50, 20
	sinks := make([]*testSink, watchers)
	for i := range sinks {
		sinks[i] = newTestSink(format)
		watchInto(t, n.hub, "f1", sinks[i])
		sinks[i].waitRev(t, fmt.Sprint("watcher ", i, "'s seat map"), 1)
	}
	var revs []uint64
	for i := range holds {
		revs = append(revs, hold(i+1))
	}
	for i, s := range sinks {
		s.waitRev(t, fmt.Sprint("watcher ", i), revs[holds-1])
		s.mu.Lock()
		got := s.mu.revs[1:] // after the seat map
		// The seat map is encoded for the watcher alone, the changes once
		// for all: every frame arrives encoded.
		if fmt.Sprint(got) != fmt.Sprint(revs) || s.mu.shared != holds+1 {
			t.Errorf("watcher %d got revisions %v (%d encoded frames), want %v, all encoded", i, got, s.mu.shared, revs)
		}
		s.mu.Unlock()
	}
	if n := format.n.Load(); n != holds+watchers {
		t.Errorf("%d watchers of %d changes: %d encodings, want %d (one per change, and each watcher's seat map)", watchers, holds, n, holds+watchers)
	}
	n.hub.feeds.mu.Lock()
	feeds := len(n.hub.feeds.mu.feeds)
	n.hub.feeds.mu.Unlock()
	if feeds != 1 {
		t.Errorf("%d feeds for one show, want 1", feeds)
	}
}

// holdWhileStalled makes stalled stop reading, then makes n holds, each
// of which live must get at once (hold fails past fwdWait): a watcher that
// does not read delays nobody. It returns the holds' revisions and the
// function that lets stalled read again (also run at cleanup, before the
// watch's own).
func holdWhileStalled(t *testing.T, stalled, live *testSink, hold func(int) uint64, n int) (revs []uint64, reopen func()) {
	t.Helper()
	gate := make(chan struct{})
	var open sync.Once
	reopen = func() { open.Do(func() { close(gate) }) }
	t.Cleanup(reopen)
	stalled.mu.Lock()
	stalled.mu.gate = gate
	stalled.mu.Unlock()
	for i := range n {
		revs = append(revs, hold(i+1))
		live.waitRev(t, fmt.Sprint("live watcher after hold ", i+1), revs[i])
	}
	if last := stalled.last(); last >= revs[0] {
		t.Fatalf("stalled watcher got revision %d while stalled", last)
	}
	return revs, reopen
}

func TestFeedStalledWatcherDelaysNobodyAndCatchesUpFromTheLog(t *testing.T) {
	n := startTestNode(t)
	n.hub.feeds.framesMax = 4 // the ring moves past the stalled watcher
	hold := feedShow(t, n, "f2")
	format := &countingFormat{}
	stalled, live := newTestSink(format), newTestSink(format)
	watchInto(t, n.hub, "f2", live)
	live.waitRev(t, "live watcher's seat map", 1)
	watchInto(t, n.hub, "f2", stalled)
	stalled.waitRev(t, "stalled watcher's seat map", 1)
	revs, reopen := holdWhileStalled(t, stalled, live, hold, 40)
	reopen()
	stalled.waitRev(t, "stalled watcher after it reads again", revs[len(revs)-1])
	for _, s := range []*testSink{live, stalled} {
		s.mu.Lock()
		if got := s.mu.revs[1:]; fmt.Sprint(got) != fmt.Sprint(revs) {
			t.Errorf("watcher got %v, want %v: every change once, in order", got, revs)
		}
		s.mu.Unlock()
	}
}
