// This file proves the relay feed's own-upstream path (relay.go,
// ownUpstream) on two real nodes, where n1 hosts the show's group and n2
// hosts nothing, so n2's watchers share one relay feed with a small ring:
// a watcher that resumes from a revision the ring has trimmed gets every
// change after it exactly once, in order, and then joins the ring (its own
// upstream closes); a watcher that stops reading while the ring moves past
// it, shared or direct, delays nobody and then catches up through an
// upstream of its own without a gap; a resume from before the change
// log's floor gets a reset seat map, then exactly the changes after it;
// a watcher catching up through its own upstream gets what arrived while
// it wrote in its next write, not one write per change;
// a new watcher, once the feed's seat map left the ring, gets a seat map
// read upstream for it, which the next new watcher shares; a resume from
// a quiet show's last change, before the feed's first seat map, when the
// upstream (of an older version) does not name that change, gets
// keepalives while it waits upstream, then the next change once; and when
// it does name it, a reconnect storm of many watchers resuming from it
// after the relay restarts joins the ring: n1 serves one upstream, and
// each watcher gets the next change once.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// relayCluster is n1, the only voter of the only group, which serves
// Watch over gRPC from its hub, and n2, which hosts no replica and relays.
// Every leader clock is clock.
type relayCluster struct {
	n1, n2 *testNode
	g      *raftnode.Group // n1's replica
	clock  atomic.Int64    // Unix ms
	up     *upstreamServer
}

// upstreamServer is n1's Booking service, Watch only: as the gateway
// serves it, and counting the watches it serves now and has served.
type upstreamServer struct {
	ledgerpb.UnimplementedBookingServer
	hub    *Hub
	open   atomic.Int64
	served atomic.Int64
	// legacy: seat maps go out without last_change_revision, as a node of
	// an older version sends them.
	legacy atomic.Bool
	wg     sync.WaitGroup // the Watch handlers: the node closes after them
}

func (s *upstreamServer) Watch(req *ledgerpb.WatchRequest, stream grpc.ServerStreamingServer[ledgerpb.WatchEvent]) error {
	s.wg.Add(1)
	defer s.wg.Done()
	s.open.Add(1)
	defer s.open.Add(-1)
	s.served.Add(1)
	err := s.hub.Watch(stream.Context(), req.ShowId, req.FromRevision, Forwarded(stream.Context()), upstreamSink{stream, s.legacy.Load()})
	switch {
	case errors.Is(err, shard.ErrShowNotFound):
		return status.Error(codes.NotFound, err.Error())
	case errors.Is(err, raftnode.ErrUnavailable):
		return status.Error(codes.Unavailable, err.Error())
	}
	return err
}

// upstreamSink sends a watch over a gRPC stream, one event at a time.
type upstreamSink struct {
	stream grpc.ServerStreamingServer[ledgerpb.WatchEvent]
	legacy bool
}

func (u upstreamSink) Open(servedBy string) error { return u.stream.SendHeader(OpenHeader(servedBy)) }
func (u upstreamSink) Send(e *ledgerpb.WatchEvent) error {
	if u.legacy && e.LastChangeRevision != 0 {
		e = proto.CloneOf(e) // shared with the feed's other watchers
		e.LastChangeRevision = 0
	}
	return u.stream.Send(e)
}

func startRelayCluster(t *testing.T) *relayCluster {
	t.Helper()
	rc := &relayCluster{}
	rc.clock.Store(time.Now().UnixMilli())
	dir := t.TempDir()
	var raftLns []net.Listener
	var peers []raftnode.Peer
	grpcLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		raftLns = append(raftLns, ln)
		p := raftnode.Peer{ID: fmt.Sprint("n", i+1), RaftAddr: ln.Addr().String()}
		if i == 0 {
			p.GRPCAddr = grpcLn.Addr().String()
		}
		peers = append(peers, p)
	}
	var nodes []*testNode
	var rns []*raftnode.Node
	for i, p := range peers {
		rn, err := raftnode.Start(raftnode.Config{
			NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, Listener: raftLns[i], ClusterID: raftnode.ClusterID{1},
			Peers: peers, Groups: map[uint32][]string{0: {"n1"}}, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			ExpireInterval: 20 * time.Millisecond, PruneCheckInterval: 20 * time.Millisecond,
			Now:    func() time.Time { return time.UnixMilli(rc.clock.Load()) },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("raftnode.Start(%s): %v", p.ID, err)
		}
		n := &testNode{router: shard.NewRouter(rn, shard.Map{Groups: 1})}
		n.hub = New(n.router)
		nodes, rns = append(nodes, n), append(rns, rn)
	}
	rc.n1, rc.n2 = nodes[0], nodes[1]
	rc.up = &upstreamServer{hub: rc.n1.hub}
	gs := grpc.NewServer()
	ledgerpb.RegisterBookingServer(gs, rc.up)
	go gs.Serve(grpcLn)
	t.Cleanup(func() {
		rc.n2.hub.Close() // its relay feeds' upstreams end first
		gs.Stop()         // cancels the handlers, and may return before they do
		rc.up.wg.Wait()
		rc.n1.hub.Close()
		for i, n := range nodes {
			n.router.Close()
			rns[i].Close()
		}
	})
	for deadline := time.Now().Add(fwdWait); ; time.Sleep(10 * time.Millisecond) {
		if g, err := rns[0].Group(0); err == nil && g.IsLeader() {
			rc.g = g
			return rc
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 does not lead its group after %v", fwdWait)
		}
	}
}

// watchFrom runs a watch of show from a revision into sink until the test
// ends.
func watchFrom(t *testing.T, h *Hub, show string, from uint64, sink Sink) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.Watch(ctx, show, from, false, sink)
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// ringLo returns where n2's relay feed of show starts: it holds every
// change after lo.
func (rc *relayCluster) ringLo(t *testing.T, show string) uint64 {
	t.Helper()
	rc.n2.hub.feeds.mu.Lock()
	f := rc.n2.hub.feeds.mu.feeds[feedKey{nil, show}]
	rc.n2.hub.feeds.mu.Unlock()
	if f == nil {
		t.Fatalf("n2 has no relay feed of %s", show)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.lo
}

// waitUpstreams waits until n1 serves want watches.
func (rc *relayCluster) waitUpstreams(t *testing.T, want int64) {
	t.Helper()
	for deadline := time.Now().Add(fwdWait); rc.up.open.Load() != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("n1 serves %d watches, want %d", rc.up.open.Load(), want)
		}
	}
}

// logRevs returns the revisions of show's change records after rev in n1's
// change log: what a gap-free watcher from rev must get.
func (rc *relayCluster) logRevs(t *testing.T, show string, after uint64) []uint64 {
	t.Helper()
	v, err := rc.g.Machine().View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	recs, err := v.SeatEvents(show, after, 1000)
	if err != nil {
		t.Fatalf("SeatEvents(%s, %d): %v", show, after, err)
	}
	var revs []uint64
	for _, r := range recs {
		revs = append(revs, r.Revision)
	}
	return revs
}

// wantRevs fails unless sink got exactly want, from its i-th event on.
func wantRevs(t *testing.T, what string, s *testSink, i int, want []uint64) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if got := s.mu.revs[min(i, len(s.mu.revs)):]; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s got revisions %v, want %v: every change once, in order", what, got, want)
	}
	for _, e := range s.mu.events[min(i, len(s.mu.events)):] {
		if e.Snapshot != nil {
			t.Errorf("%s got a seat map at revision %d (reset %v) among its changes, want changes only", what, e.Revision, e.Reset_)
		}
	}
}

// trimmedRelay starts a relay cluster whose relay ring keeps only a few
// changes, opens the relay feed of show r1 with a live watcher at n2 and
// makes 20 changes, which the live watcher got: revs[2] is before the ring.
func trimmedRelay(t *testing.T) (rc *relayCluster, hold func(int) uint64, format *countingFormat, live *testSink, revs []uint64) {
	t.Helper()
	rc = startRelayCluster(t)
	rc.n2.hub.feeds.framesMax = 4 // the ring trims after a few changes
	hold = feedShow(t, rc.n1, "r1")
	format = &countingFormat{}
	live = newTestSink(format)
	watchFrom(t, rc.n2.hub, "r1", 0, live) // opens the relay feed
	live.waitRev(t, "live watcher's seat map", 1)
	for i := range 20 {
		revs = append(revs, hold(i+1))
	}
	live.waitRev(t, "live watcher", revs[len(revs)-1])
	if lo := rc.ringLo(t, "r1"); lo <= revs[2] {
		t.Fatalf("relay ring starts at %d, want past the resume revision %d", lo, revs[2])
	}
	return rc, hold, format, live, revs
}

func TestRelayResumeFromBeforeTheRingGetsEveryChangeOnce(t *testing.T) {
	rc, hold, format, live, revs := trimmedRelay(t)
	from := revs[2]
	rc.waitUpstreams(t, 1)

	resumed := newTestSink(format)
	watchFrom(t, rc.n2.hub, "r1", from, resumed)
	// Changes go on while it catches up through its own upstream and
	// hands over to the ring.
	for i := range 20 {
		revs = append(revs, hold(i+21))
	}
	live.waitRev(t, "live watcher", revs[len(revs)-1])
	resumed.waitRev(t, "resumed watcher", revs[len(revs)-1])
	wantRevs(t, "live watcher after its seat map", live, 1, revs)
	wantRevs(t, fmt.Sprint("watcher resumed from ", from), resumed, 0, revs[3:])
	// Once in the ring its own upstream closed: n1 serves the relay alone.
	rc.waitUpstreams(t, 1)
	last := hold(41)
	resumed.waitRev(t, "resumed watcher from the ring", last)
	wantRevs(t, "resumed watcher from the ring", resumed, 0, append(revs[3:], last))
}

func TestRelayOwnUpstreamCatchUpIsOneWrite(t *testing.T) {
	rc, _, format, _, revs := trimmedRelay(t)
	from := revs[2]

	// Its first write waits, as on a slow socket, while the rest of what
	// it missed arrives from its upstream.
	resumed := newTestSink(format)
	gate := make(chan struct{})
	resumed.mu.gate = gate
	watchFrom(t, rc.n2.hub, "r1", from, resumed)
	rc.waitUpstreams(t, 2)
	time.Sleep(200 * time.Millisecond) // for the upstream to send the rest
	resumed.mu.Lock()
	resumed.mu.gate = nil
	resumed.mu.Unlock()
	close(gate)
	resumed.waitRev(t, "resumed watcher", revs[len(revs)-1])
	wantRevs(t, fmt.Sprint("watcher resumed from ", from), resumed, 0, revs[3:])
	resumed.mu.Lock()
	defer resumed.mu.Unlock()
	if resumed.mu.sends > 2 {
		t.Errorf("the watcher resumed from %d took %d writes for %d missed changes, want at most 2: the one under way and one for the rest", from, resumed.mu.sends, len(revs)-3)
	}
}

func TestRelayStalledWatcherDelaysNobodyAndCatchesUpUpstream(t *testing.T) {
	rc := startRelayCluster(t)
	rc.n2.hub.feeds.framesMax = 4
	hold := feedShow(t, rc.n1, "r2")
	format := &countingFormat{}
	stalled, live := newTestSink(format), newTestSink(format)
	watchFrom(t, rc.n2.hub, "r2", 0, live)
	live.waitRev(t, "live watcher's seat map", 1)
	watchFrom(t, rc.n2.hub, "r2", 0, stalled)
	stalled.waitRev(t, "stalled watcher's seat map", 1)
	revs, reopen := holdWhileStalled(t, stalled, live, hold, 40)
	if lo := rc.ringLo(t, "r2"); lo <= revs[0] {
		t.Fatalf("relay ring starts at %d, want past the stalled watcher's %d", lo, revs[0])
	}
	reopen()
	stalled.waitRev(t, "stalled watcher after it reads again", revs[len(revs)-1])
	rc.waitUpstreams(t, 1) // its own upstream closed in the ring
	last := hold(41)
	revs = append(revs, last)
	live.waitRev(t, "live watcher", last)
	stalled.waitRev(t, "caught-up watcher", last)
	wantRevs(t, "live watcher after its seat map", live, 1, revs)
	wantRevs(t, "stalled watcher after its seat map", stalled, 1, revs)
}

func TestRelayFullDirectWatcherCatchesUpUpstream(t *testing.T) {
	rc := startRelayCluster(t)
	rc.n2.hub.feeds.framesMax = 4
	hold := feedShow(t, rc.n1, "r3")
	live, slow := newDirectSink(), newDirectSink()
	watchFrom(t, rc.n2.hub, "r3", 0, live)
	watchFrom(t, rc.n2.hub, "r3", 0, slow)
	live.waitRevs(t, "live watcher's seat map", 1)
	slow.waitRevs(t, "slow watcher's seat map", 1)
	var revs []uint64
	for i := range 5 {
		revs = append(revs, hold(i+1))
	}
	slow.waitRevs(t, "slow watcher", revs[len(revs)-1])
	slow.setFull(true) // its buffer fills: part of the next batch fits
	t.Cleanup(func() { slow.setFull(false) })
	for i := range 40 {
		revs = append(revs, hold(i+6))
		live.waitRevs(t, fmt.Sprint("live watcher after hold ", i+6), revs[len(revs)-1])
	}
	if lo, at := rc.ringLo(t, "r3"), revs[5]; lo <= at {
		t.Fatalf("relay ring starts at %d, want past %d, where the slow watcher filled", lo, at)
	}
	slow.setFull(false)
	slow.waitRevs(t, "slow watcher after it drains", revs[len(revs)-1])
	rc.waitUpstreams(t, 1)
	last := hold(46)
	revs = append(revs, last)
	live.waitRevs(t, "live watcher", last)
	slow.waitRevs(t, "slow watcher from the ring", last)
	for name, s := range map[string]*directSink{"live": live, "slow": slow} {
		if got := s.revs()[1:]; fmt.Sprint(got) != fmt.Sprint(revs) {
			t.Errorf("%s watcher got %v, want %v: every change once, in order", name, got, revs)
		}
	}
}

// prune ages the change records out and waits until n1's log floor
// passes after, so that a resume from after is reset; it returns the
// floor.
func (rc *relayCluster) prune(t *testing.T, after uint64) uint64 {
	t.Helper()
	rc.clock.Add(fsm.EventRetentionMaxMs + 1000)
	for deadline := time.Now().Add(fwdWait); ; time.Sleep(20 * time.Millisecond) {
		v, err := rc.g.Machine().View()
		if err != nil {
			t.Fatal(err)
		}
		floor, err := v.EventFloor()
		v.Close()
		if err != nil {
			t.Fatal(err)
		}
		if floor > after {
			return floor
		}
		if time.Now().After(deadline) {
			t.Fatalf("change log floor %d %v after the records aged out, want past %d", floor, fwdWait, after)
		}
	}
}

func TestRelayResumeFromBeforeThePrunedLogResets(t *testing.T) {
	rc := startRelayCluster(t)
	rc.n2.hub.feeds.framesMax = 4
	hold := feedShow(t, rc.n1, "r4")
	format := &countingFormat{}
	live := newTestSink(format)
	watchFrom(t, rc.n2.hub, "r4", 0, live)
	live.waitRev(t, "live watcher's seat map", 1)
	var old []uint64
	for i := range 10 {
		old = append(old, hold(i+1))
	}
	floor := rc.prune(t, old[0]) // the holds expire too: more changes
	var revs []uint64
	for i := range 10 {
		revs = append(revs, hold(i+11))
	}
	live.waitRev(t, "live watcher", revs[len(revs)-1])
	if lo := rc.ringLo(t, "r4"); lo <= old[0] {
		t.Fatalf("relay ring starts at %d and the log at %d, want the ring past the resume revision %d", lo, floor, old[0])
	}

	resumed := newTestSink(format)
	watchFrom(t, rc.n2.hub, "r4", old[0], resumed)
	resumed.waitRev(t, "resumed watcher's reset", revs[len(revs)-1])
	for i := range 10 {
		revs = append(revs, hold(i+21))
	}
	resumed.waitRev(t, "resumed watcher", revs[len(revs)-1])
	resumed.mu.Lock()
	first := resumed.mu.events[0]
	resumed.mu.Unlock()
	if first.Snapshot == nil || !first.Reset_ || first.Revision < floor || first.Revision < revs[9] ||
		seatOf(first.Snapshot, "A20") != ledgerpb.SeatState_HELD {
		t.Fatalf("watcher resumed from %d before the floor %d: first event at %d snapshot %v reset %v, want a reset seat map with A20 HELD",
			old[0], floor, first.Revision, first.Snapshot != nil, first.Reset_)
	}
	wantRevs(t, "watcher after its reset", resumed, 1, rc.logRevs(t, "r4", first.Revision))
	rc.waitUpstreams(t, 1)
}

// seatOf returns a seat's state in a seat map.
func seatOf(sm *ledgerpb.SeatMap, seat string) ledgerpb.SeatState {
	for _, s := range sm.Seats {
		if s.SeatId == seat {
			return s.State
		}
	}
	return ledgerpb.SeatState_SEAT_STATE_UNSPECIFIED
}

func TestRelayNewWatcherPastTheBaseGetsAFreshSeatMap(t *testing.T) {
	rc := startRelayCluster(t)
	rc.n2.hub.feeds.framesMax = 4
	hold := feedShow(t, rc.n1, "r5")
	format := &countingFormat{}
	live := newTestSink(format)
	watchFrom(t, rc.n2.hub, "r5", 0, live)
	live.waitRev(t, "live watcher's seat map", 1)
	live.mu.Lock()
	base := live.mu.revs[0]
	live.mu.Unlock()
	var revs []uint64
	for i := range 20 {
		revs = append(revs, hold(i+1))
	}
	live.waitRev(t, "live watcher", revs[len(revs)-1])
	if lo := rc.ringLo(t, "r5"); lo <= base {
		t.Fatalf("relay ring starts at %d, want past its first seat map's %d", lo, base)
	}

	// The feed's first seat map left the ring: a new watcher's is read
	// upstream for it, and becomes the base of the next.
	var fresh uint64
	for i, what := range []string{"watcher after the base left the ring", "next new watcher"} {
		s := newTestSink(format)
		watchFrom(t, rc.n2.hub, "r5", 0, s)
		s.waitRev(t, what+"'s seat map", revs[len(revs)-1])
		s.mu.Lock()
		first := s.mu.events[0]
		s.mu.Unlock()
		held := uint32(0) // the holds the seat map must show
		for _, r := range revs {
			if r <= first.Revision {
				held++
			}
		}
		if first.Snapshot == nil || first.Reset_ || first.Revision < revs[19] || first.Snapshot.Free != 200-held {
			t.Fatalf("%s: first event at %d snapshot %v reset %v, want a seat map at %d or later with %d seats free", what, first.Revision,
				first.Snapshot != nil, first.Reset_, revs[19], 200-held)
		}
		if i == 0 {
			fresh = first.Revision
		} else if first.Revision != fresh {
			t.Errorf("%s: seat map at %d, want the base the watcher before read upstream, at %d", what, first.Revision, fresh)
		}
		more := hold(21 + i)
		revs = append(revs, more)
		s.waitRev(t, what, more)
		wantRevs(t, what+" after its seat map", s, 1, rc.logRevs(t, "r5", first.Revision))
	}
	live.waitRev(t, "live watcher", revs[len(revs)-1])
	rc.waitUpstreams(t, 1)
	wantRevs(t, "live watcher after its seat map", live, 1, revs)
}

func TestRelayResumeBeforeTheFeedsSeatMapOnAQuietShow(t *testing.T) {
	rc := startRelayCluster(t)
	rc.up.legacy.Store(true) // its seat map does not name r6's last change
	hold := feedShow(t, rc.n1, "r6")
	other := feedShow(t, rc.n1, "o6") // the same group: its entries pass r6 by
	last := hold(1)
	for i := range 5 {
		other(i + 101) // clients apart from r6's (the helper names them by seat)
	}
	live := newTestSink(&countingFormat{})
	watchFrom(t, rc.n2.hub, "r6", 0, live) // the feed starts from a later seat map
	live.waitRev(t, "live watcher's seat map", last+1)
	if lo := rc.ringLo(t, "r6"); lo <= last {
		t.Fatalf("relay ring starts at %d, want past the show's last change at %d", lo, last)
	}

	// A client resumes from the show's last change, which the ring does
	// not reach back to; nothing changes for a while. Its stream is open
	// and idle: it gets keepalives, as every idle stream does.
	resumed := newDirectSink()
	resumed.idle = 50 * time.Millisecond
	watchFrom(t, rc.n2.hub, "r6", last, resumed)
	for deadline := time.Now().Add(fwdWait); resumed.keepalives() < 2; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("watcher resumed from %d at a quiet show: %d keepalives in %v, want 2 or more (idle interval %v)",
				last, resumed.keepalives(), fwdWait, resumed.idle)
		}
	}
	next := hold(2)
	if got := resumed.waitRevs(t, "resumed watcher", next); fmt.Sprint(got) != fmt.Sprint([]uint64{next}) {
		t.Errorf("watcher resumed from %d got %v, want [%d]: the change after it, once", last, got, next)
	}
	rc.waitUpstreams(t, 1)
}

func TestRelayReconnectStormOnAQuietShowSharesOneUpstream(t *testing.T) {
	const shared, direct = 40, 40
	rc := startRelayCluster(t)
	hold := feedShow(t, rc.n1, "r7")
	other := feedShow(t, rc.n1, "o7") // the same group: its entries pass r7 by
	last := hold(1)

	// n2 relays r7 for a while; its seat map names r7's last change. Then
	// its watchers go (n2 restarts, say): the relay feed stops.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	first := newTestSink(&countingFormat{})
	go func() {
		defer close(done)
		rc.n2.hub.Watch(ctx, "r7", 0, false, first)
	}()
	first.waitRev(t, "first watcher's seat map", last)
	first.mu.Lock()
	e := first.mu.events[0]
	first.mu.Unlock()
	if e.Snapshot == nil || e.LastChangeRevision != last {
		t.Fatalf("first watcher via n2: event at %d snapshot %v last change %d, want a seat map naming r7's last change %d",
			e.Revision, e.Snapshot != nil, e.LastChangeRevision, last)
	}
	cancel()
	<-done
	rc.waitUpstreams(t, 0)
	for i := range 5 {
		other(i + 101) // the group moves on: the next seat map is past last
	}

	// Every watcher reconnects at once, resuming from r7's last change,
	// which is before the restarted relay feed's seat map.
	before := rc.up.served.Load()
	format := &countingFormat{}
	var sinks []*testSink
	var directs []*directSink
	for i := range shared + direct {
		if i < shared {
			sinks = append(sinks, newTestSink(format))
			watchFrom(t, rc.n2.hub, "r7", last, sinks[i])
			continue
		}
		d := newDirectSink()
		d.idle = 50 * time.Millisecond
		directs = append(directs, d)
		watchFrom(t, rc.n2.hub, "r7", last, d)
	}
	// Nothing changes for a while: the direct watchers get keepalives.
	for i, d := range directs {
		for deadline := time.Now().Add(fwdWait); d.keepalives() < 2; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("direct watcher %d resumed from %d at a quiet show: %d keepalives in %v, want 2 or more", i, last, d.keepalives(), fwdWait)
			}
		}
	}
	if lo := rc.ringLo(t, "r7"); lo != last {
		t.Errorf("restarted relay ring starts at %d, want r7's last change %d, which its seat map names", lo, last)
	}
	next := hold(2)
	for i, s := range sinks {
		s.waitRev(t, fmt.Sprint("shared watcher ", i), next)
		wantRevs(t, fmt.Sprint("shared watcher ", i, " resumed from ", last), s, 0, []uint64{next})
	}
	for i, d := range directs {
		if got := d.waitRevs(t, fmt.Sprint("direct watcher ", i), next); fmt.Sprint(got) != fmt.Sprint([]uint64{next}) {
			t.Errorf("direct watcher %d resumed from %d got %v, want [%d]: the change after it, once", i, last, got, next)
		}
	}
	if got := rc.up.served.Load() - before; got != 1 {
		t.Errorf("n1 served %d watches for %d watchers resuming at n2 from r7's last change, want 1: the relay's upstream", got, shared+direct)
	}
	rc.waitUpstreams(t, 1)
}
