// This file proves Watch at the gateway and router, over real gRPC and HTTP
// on two nodes where only n1 hosts the group: the first event is the seat
// map, then one event per seat-changing write with its changes and
// revision; a resume from a revision sends only what followed it; a node
// without a replica relays the watch of one that has it, and a forwarded
// watch is never forwarded again; a revision older than the retained change
// log gets a reset seat map (gRPC and SSE); the SSE framing (id, event,
// data, keepalive comments, Last-Event-ID over ?from_revision=); and the
// limits and errors: a bad show id (400), an unknown show (404), the
// node's watcher limit (429 TOO_MANY_WATCHERS, Retry-After and a message),
// a drain that ends open streams and refuses new ones (503), and how
// watchError maps each ending (a forwarded node's status passes through
// unchanged).
package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// watchTimeout bounds every wait of these tests.
const watchTimeout = 10 * time.Second

// watchNode is one node of the test: raft, router, Booking server, gRPC.
type watchNode struct {
	id     string
	raft   *raftnode.Node
	router *shard.Router
	srv    *Server
	client ledgerpb.BookingClient
	http   *httptest.Server
}

// watchCluster is n1, which hosts the only group (one voter), and n2, which
// hosts nothing. Every node's leader clock is clock.
type watchCluster struct {
	t      *testing.T
	nodes  []*watchNode
	clock  atomic.Int64 // Unix ms
	tokens sync.Map     // hold id -> hold token
}

func startWatchCluster(t *testing.T) *watchCluster {
	t.Helper()
	wc := &watchCluster{t: t}
	wc.clock.Store(time.Now().UnixMilli())
	dir := t.TempDir()
	var raftLns, grpcLns []net.Listener
	var peers []raftnode.Peer
	for i := range 2 {
		raftLns = append(raftLns, listen(t))
		grpcLns = append(grpcLns, listen(t))
		peers = append(peers, raftnode.Peer{ID: fmt.Sprintf("n%d", i+1), RaftAddr: raftLns[i].Addr().String(), GRPCAddr: grpcLns[i].Addr().String()})
	}
	for i, p := range peers {
		rn, err := raftnode.Start(raftnode.Config{
			NodeID: p.ID, DataDir: filepath.Join(dir, p.ID), RaftAddr: p.RaftAddr, Listener: raftLns[i], ClusterID: raftnode.ClusterID{1},
			Peers: peers, Groups: map[uint32][]string{0: {"n1"}}, Bootstrap: true,
			HeartbeatTimeout: 200 * time.Millisecond, ElectionTimeout: 200 * time.Millisecond,
			LeaderLeaseTimeout: 100 * time.Millisecond, CommitTimeout: 5 * time.Millisecond,
			ExpireInterval: 20 * time.Millisecond, PruneCheckInterval: 20 * time.Millisecond,
			Now:    func() time.Time { return time.UnixMilli(wc.clock.Load()) },
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		})
		if err != nil {
			t.Fatalf("raftnode.Start(%s): %v", p.ID, err)
		}
		router := shard.NewRouter(rn, shard.Map{Groups: 1})
		srv := NewServer(router)
		gs := NewGRPCServer(srv, router)
		go gs.Serve(grpcLns[i])
		h, err := NewHTTPHandler(context.Background(), srv, router, HTTPConfig{})
		if err != nil {
			t.Fatal(err)
		}
		conn, err := grpc.NewClient(p.GRPCAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		n := &watchNode{id: p.ID, raft: rn, router: router, srv: srv, client: ledgerpb.NewBookingClient(conn), http: httptest.NewServer(h)}
		wc.nodes = append(wc.nodes, n)
		t.Cleanup(func() {
			srv.DrainWatches()
			n.http.Close()
			conn.Close()
			gs.Stop()
			router.Close()
			rn.Close()
		})
	}
	return wc
}

func listen(t testing.TB) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// call retries a call while the group elects its leader.
func call[T any](t testing.TB, what string, f func(ctx context.Context) (T, error)) T {
	t.Helper()
	deadline := time.Now().Add(watchTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), watchTimeout)
		res, err := f(ctx)
		cancel()
		if err == nil {
			return res
		}
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			t.Fatalf("%s = %v, want OK", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (wc *watchCluster) createShow(id string) {
	show := &ledgerpb.Show{ShowId: id, Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}},
		Rows: []*ledgerpb.Row{{Name: "A", Seats: 10, Category: "std"}}}
	call(wc.t, "CreateShow("+id+")", func(ctx context.Context) (*ledgerpb.CreateShowResponse, error) {
		return wc.nodes[0].srv.CreateShow(ctx, &ledgerpb.CreateShowRequest{Show: show})
	})
}

func (wc *watchCluster) hold(show, client string, seats ...string) *ledgerpb.HoldResponse {
	r := call(wc.t, "Hold("+strings.Join(seats, ",")+")", func(ctx context.Context) (*ledgerpb.HoldResponse, error) {
		return wc.nodes[0].srv.Hold(ctx, &ledgerpb.HoldRequest{ShowId: show, SeatIds: seats, ClientId: client, RequestId: "hold"})
	})
	wc.tokens.Store(r.HoldId, r.HoldToken)
	return r
}

func (wc *watchCluster) token(holdID string) string {
	t, _ := wc.tokens.Load(holdID)
	s, _ := t.(string)
	return s
}

// confirm and release are the tests' only confirm and release calls (one
// place to change when they need more than the hold id). They return the
// revision.
func (wc *watchCluster) confirm(show, client, holdID string) uint64 {
	return call(wc.t, "Confirm("+holdID+")", func(ctx context.Context) (*ledgerpb.ConfirmResponse, error) {
		return wc.nodes[0].srv.Confirm(ctx, &ledgerpb.ConfirmRequest{ShowId: show, HoldId: holdID, PaymentRef: "p", ClientId: client, RequestId: "confirm", HoldToken: wc.token(holdID)})
	}).Revision
}

func (wc *watchCluster) release(show, client, holdID string) uint64 {
	return call(wc.t, "Release("+holdID+")", func(ctx context.Context) (*ledgerpb.ReleaseResponse, error) {
		return wc.nodes[0].srv.Release(ctx, &ledgerpb.ReleaseRequest{ShowId: show, HoldId: holdID, ClientId: client, RequestId: "release", HoldToken: wc.token(holdID)})
	}).Revision
}

// grpcWatch opens a watch through node i; the stream ends with the test.
func (wc *watchCluster) grpcWatch(i int, show string, from uint64) grpc.ServerStreamingClient[ledgerpb.WatchEvent] {
	wc.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wc.t.Cleanup(cancel)
	s, err := wc.nodes[i].client.Watch(ctx, &ledgerpb.WatchRequest{ShowId: show, FromRevision: from})
	if err != nil {
		wc.t.Fatalf("Watch(%s, %d) via %s: %v", show, from, wc.nodes[i].id, err)
	}
	return s
}

// recv reads the next event within watchTimeout.
func recv(t *testing.T, s grpc.ServerStreamingClient[ledgerpb.WatchEvent]) *ledgerpb.WatchEvent {
	t.Helper()
	type got struct {
		e   *ledgerpb.WatchEvent
		err error
	}
	ch := make(chan got, 1)
	go func() { e, err := s.Recv(); ch <- got{e, err} }()
	select {
	case g := <-ch:
		if g.err != nil {
			t.Fatalf("Watch: Recv = %v, want an event", g.err)
		}
		return g.e
	case <-time.After(watchTimeout):
		t.Fatalf("Watch: no event within %v", watchTimeout)
		return nil
	}
}

// changes renders an event's changes: "A1=HELD,A2=HELD".
func changes(e *ledgerpb.WatchEvent) string {
	var cs []string
	for _, c := range e.Changes {
		cs = append(cs, c.SeatId+"="+c.State.String())
	}
	return strings.Join(cs, ",")
}

// wantChanges fails unless e is a changes event at rev with want.
func wantChanges(t *testing.T, what string, e *ledgerpb.WatchEvent, rev uint64, want string) {
	t.Helper()
	if e.Snapshot != nil || e.Revision != rev || changes(e) != want {
		t.Errorf("%s: event at revision %d (snapshot %v) with changes %q, want changes %q at revision %d", what, e.Revision, e.Snapshot != nil, changes(e), want, rev)
	}
}

// seatState returns a seat's state in a seat map.
func seatState(sm *ledgerpb.SeatMap, seat string) ledgerpb.SeatState {
	for _, s := range sm.Seats {
		if s.SeatId == seat {
			return s.State
		}
	}
	return ledgerpb.SeatState_SEAT_STATE_UNSPECIFIED
}

func TestWatchStreamsChangesAndResumes(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("w1")
	for i, n := range wc.nodes { // n1 serves from its replica, n2 relays it
		s := wc.grpcWatch(i, "w1", 0)
		first := recv(t, s)
		free := uint32(10 - 2*i) // each round books two seats
		if first.Snapshot == nil || first.Reset_ || first.Revision == 0 || first.Snapshot.Free != free || first.Snapshot.Revision != first.Revision {
			t.Fatalf("Watch(w1, 0) via %s: first event snapshot %v reset %v revision %d, want a seat map of %d free seats at its revision", n.id, first.Snapshot != nil, first.Reset_, first.Revision, free)
		}
		if md, _ := s.Header(); len(md.Get("x-seatledger-served-by")) != 1 || md.Get("x-seatledger-served-by")[0] != "n1" {
			t.Errorf("Watch via %s: served by %v, want n1 (the only replica)", n.id, md.Get("x-seatledger-served-by"))
		}
		client := "c" + n.id
		a := wc.hold("w1", client, fmt.Sprintf("A%d", 2*i+1), fmt.Sprintf("A%d", 2*i+2))
		b := wc.hold("w1", client+"b", fmt.Sprintf("A%d", 5+i))
		conf := wc.confirm("w1", client, a.HoldId)
		rel := wc.release("w1", client+"b", b.HoldId)
		wantChanges(t, "Hold via "+n.id, recv(t, s), a.Revision, fmt.Sprintf("A%d=HELD,A%d=HELD", 2*i+1, 2*i+2))
		wantChanges(t, "second Hold via "+n.id, recv(t, s), b.Revision, fmt.Sprintf("A%d=HELD", 5+i))
		wantChanges(t, "Confirm via "+n.id, recv(t, s), conf, fmt.Sprintf("A%d=BOOKED,A%d=BOOKED", 2*i+1, 2*i+2))
		wantChanges(t, "Release via "+n.id, recv(t, s), rel, fmt.Sprintf("A%d=FREE", 5+i))

		// Resuming after the first hold sends what followed it, no more.
		r := wc.grpcWatch(i, "w1", a.Revision)
		wantChanges(t, "resumed after the hold via "+n.id, recv(t, r), b.Revision, fmt.Sprintf("A%d=HELD", 5+i))
		wantChanges(t, "resumed, next via "+n.id, recv(t, r), conf, fmt.Sprintf("A%d=BOOKED,A%d=BOOKED", 2*i+1, 2*i+2))
		wantChanges(t, "resumed, last via "+n.id, recv(t, r), rel, fmt.Sprintf("A%d=FREE", 5+i))
	}
}

func TestWatchForwardedWatchIsNotForwardedAgain(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("w1")
	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "x-seatledger-forwarded", "n1"), watchTimeout)
	defer cancel()
	s, err := wc.nodes[1].client.Watch(ctx, &ledgerpb.WatchRequest{ShowId: "w1"})
	if err == nil {
		_, err = s.Recv()
	}
	if status.Code(err) != codes.Unavailable {
		t.Errorf("forwarded Watch at n2, which hosts no replica = %v, want Unavailable (no second forward)", err)
	}
	s = wc.grpcWatch(1, "nope", 0)
	if _, err := s.Recv(); status.Code(err) != codes.NotFound {
		t.Errorf("Watch(unknown show) via n2 = %v, want NotFound from n1", err)
	}
}

// prune ages every change record out and waits for the leader's driver to
// prune them; it returns the floor.
func (wc *watchCluster) prune() uint64 {
	wc.t.Helper()
	g, err := wc.nodes[0].raft.Group(0)
	if err != nil {
		wc.t.Fatal(err)
	}
	last := g.Machine().Applied()
	wc.clock.Add(fsm.EventRetentionMaxMs + 1000)
	deadline := time.Now().Add(watchTimeout)
	for {
		v, err := g.Machine().View()
		if err != nil {
			wc.t.Fatal(err)
		}
		floor, err := v.EventFloor()
		v.Close()
		if err != nil {
			wc.t.Fatal(err)
		}
		if floor > 0 && floor <= last {
			if recs, err := readAll(g, "w1", floor); err == nil && len(recs) == 0 {
				return floor
			}
		}
		if time.Now().After(deadline) {
			wc.t.Fatalf("change log floor %d %v after the records aged out", floor, watchTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func readAll(g *raftnode.Group, show string, after uint64) ([]fsm.SeatEvent, error) {
	v, err := g.Machine().View()
	if err != nil {
		return nil, err
	}
	defer v.Close()
	return v.SeatEvents(show, after, 1000)
}

func TestWatchTooOldRevisionResets(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("w1")
	h := wc.hold("w1", "c1", "A1")
	wc.confirm("w1", "c1", h.HoldId)
	floor := wc.prune()

	for i, n := range wc.nodes {
		e := recv(t, wc.grpcWatch(i, "w1", h.Revision-1))
		if e.Snapshot == nil || !e.Reset_ || e.Revision < floor || seatState(e.Snapshot, "A1") != ledgerpb.SeatState_BOOKED {
			t.Errorf("Watch(w1, %d) below the floor %d via %s: snapshot %v reset %v revision %d, want a reset seat map with A1 BOOKED", h.Revision-1, floor, n.id, e.Snapshot != nil, e.Reset_, e.Revision)
		}
	}
	// At the floor nothing is missing: no reset, just what comes next.
	s := wc.grpcWatch(0, "w1", floor)
	next := wc.hold("w1", "c2", "A2")
	wantChanges(t, "Watch from the floor", recv(t, s), next.Revision, "A2=HELD")

	// Over SSE the reset is its own event type.
	sse := wc.openSSE(0, "w1", map[string]string{"Last-Event-ID": "1"}, "")
	e := sse.next(t)
	if e.kind != "reset" || !e.ev.Reset_ || e.ev.Snapshot == nil || seatState(e.ev.Snapshot, "A2") != ledgerpb.SeatState_HELD {
		t.Errorf("SSE with Last-Event-ID 1 below the floor: event %q reset %v, want a reset seat map with A2 HELD", e.kind, e.ev.Reset_)
	}
}

// sseClient reads one SSE response block by block.
type sseClient struct {
	resp   *http.Response
	blocks chan []string
}

// sseBlock is an event as read: its field lines, and the decoded data.
type sseBlock struct {
	lines []string
	id    string
	kind  string
	ev    *ledgerpb.WatchEvent
}

// openSSE starts GET /v1/shows/{show}/events at node i with headers and a
// raw query; it fails the test unless the answer is an event stream.
func (wc *watchCluster) openSSE(i int, show string, header map[string]string, query string) *sseClient {
	wc.t.Helper()
	resp := wc.getEvents(i, show, header, query)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		body, _ := io.ReadAll(resp.Body)
		wc.t.Fatalf("GET events = %d %q %s, want 200 text/event-stream", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	c := &sseClient{resp: resp, blocks: make(chan []string, 64)}
	go func() {
		defer close(c.blocks)
		br := bufio.NewReader(resp.Body)
		var block []string
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			line = strings.TrimSuffix(line, "\n")
			if line != "" {
				block = append(block, line)
				continue
			}
			c.blocks <- block
			block = nil
		}
	}()
	return c
}

func (wc *watchCluster) getEvents(i int, show string, header map[string]string, query string) *http.Response {
	wc.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	wc.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "GET", wc.nodes[i].http.URL+"/v1/shows/"+show+"/events"+query, nil)
	if err != nil {
		wc.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		wc.t.Fatalf("GET events: %v", err)
	}
	wc.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// block returns the next block of lines; ok is false at the stream's end.
func (c *sseClient) block(t *testing.T) ([]string, bool) {
	t.Helper()
	select {
	case b, ok := <-c.blocks:
		return b, ok
	case <-time.After(watchTimeout):
		t.Fatalf("SSE: no block within %v", watchTimeout)
		return nil, false
	}
}

// next returns the next event, skipping comments and the retry field.
func (c *sseClient) next(t *testing.T) sseBlock {
	t.Helper()
	for {
		lines, ok := c.block(t)
		if !ok {
			t.Fatal("SSE: the stream ended, want an event")
		}
		b := sseBlock{lines: lines}
		var data string
		for _, l := range lines {
			switch {
			case strings.HasPrefix(l, "id: "):
				b.id = strings.TrimPrefix(l, "id: ")
			case strings.HasPrefix(l, "event: "):
				b.kind = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = strings.TrimPrefix(l, "data: ")
			}
		}
		if data == "" {
			continue
		}
		b.ev = &ledgerpb.WatchEvent{}
		if err := protojson.Unmarshal([]byte(data), b.ev); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		if !strings.Contains(data, `"show_id"`) {
			t.Errorf("SSE data %.100s: want proto field names (show_id)", data)
		}
		if b.id != fmt.Sprint(b.ev.Revision) {
			t.Errorf("SSE event id %q, data revision %d: want equal", b.id, b.ev.Revision)
		}
		return b
	}
}

func TestWatchSSEFraming(t *testing.T) {
	wc := startWatchCluster(t)
	wc.nodes[0].srv.watchKeepalive.Store(int64(30 * time.Millisecond))
	wc.createShow("w1")
	c := wc.openSSE(0, "w1", nil, "")
	if b, _ := c.block(t); len(b) != 1 || b[0] != "retry: 1000" {
		t.Errorf("SSE first block %q, want [retry: 1000]", b)
	}
	snap := c.next(t)
	if snap.kind != "snapshot" || snap.ev.Snapshot == nil || snap.ev.Reset_ {
		t.Errorf("SSE first event %q (snapshot %v), want snapshot", snap.kind, snap.ev.Snapshot != nil)
	}
	// Nothing happens: keepalive comments keep the stream alive.
	if b, _ := c.block(t); len(b) != 1 || b[0] != ": keepalive" {
		t.Errorf("SSE idle block %q, want [: keepalive]", b)
	}
	h := wc.hold("w1", "c1", "A3")
	if e := c.next(t); e.kind != "changes" || e.ev.Revision != h.Revision || changes(e.ev) != "A3=HELD" {
		t.Errorf("SSE after Hold(A3): event %q at %d with %q, want changes A3=HELD at %d", e.kind, e.ev.Revision, changes(e.ev), h.Revision)
	}
	rel := wc.release("w1", "c1", h.HoldId)

	// Resume: Last-Event-ID wins over ?from_revision=, which serves alone too.
	for _, tc := range []struct {
		name   string
		header map[string]string
		query  string
	}{
		{"Last-Event-ID", map[string]string{"Last-Event-ID": fmt.Sprint(h.Revision)}, "?from_revision=1"},
		{"from_revision", nil, fmt.Sprintf("?from_revision=%d", h.Revision)},
	} {
		e := wc.openSSE(0, "w1", tc.header, tc.query).next(t)
		if e.kind != "changes" || e.ev.Revision != rel || changes(e.ev) != "A3=FREE" {
			t.Errorf("SSE resumed by %s after %d: event %q at %d with %q, want changes A3=FREE at %d", tc.name, h.Revision, e.kind, e.ev.Revision, changes(e.ev), rel)
		}
	}
}

func TestWatchErrorsAndLimits(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("w1")
	n1 := wc.nodes[0]
	grpcErr := func(show string) error {
		s := wc.grpcWatch(0, show, 0)
		_, err := s.Recv()
		return err
	}
	httpErr := func(what, show string, header map[string]string, query string, code int, reason string) {
		t.Helper()
		resp := wc.getEvents(0, show, header, query)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != code || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"reason":"`+reason+`"`) &&
			!strings.Contains(string(body), `"reason": "`+reason+`"`) {
			t.Errorf("GET events %s = %d %q %s, want %d application/json with reason %s", what, resp.StatusCode, resp.Header.Get("Content-Type"), body, code, reason)
		}
	}
	if err := grpcErr("b@d"); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Watch(b@d) = %v, want InvalidArgument", err)
	}
	if err := grpcErr("nope"); status.Code(err) != codes.NotFound {
		t.Errorf("Watch(nope) = %v, want NotFound", err)
	}
	httpErr("of a bad show id", "b@d", nil, "", http.StatusBadRequest, "INVALID_ARGUMENT")
	httpErr("of an unknown show", "nope", nil, "", http.StatusNotFound, "SHOW_NOT_FOUND")
	httpErr("with a bad Last-Event-ID", "w1", map[string]string{"Last-Event-ID": "x"}, "", http.StatusBadRequest, "INVALID_ARGUMENT")

	// One watcher allowed: the second is refused, over both APIs. (An HTTP
	// error is answered before its handler releases the slot: wait.)
	for deadline := time.Now().Add(watchTimeout); n1.srv.watches.count() > 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches still admitted after their errors", n1.srv.watches.count())
		}
	}
	n1.srv.watchersMax.Store(1)
	open := wc.grpcWatch(0, "w1", 0)
	recv(t, open)
	if err := grpcErr("w1"); status.Code(err) != codes.ResourceExhausted || !strings.Contains(fmt.Sprint(status.Convert(err).Details()), "TOO_MANY_WATCHERS") {
		t.Errorf("second Watch with a limit of 1 = %v, want ResourceExhausted TOO_MANY_WATCHERS", err)
	}
	httpErr("over the watcher limit", "w1", nil, "", http.StatusTooManyRequests, "TOO_MANY_WATCHERS")
	// The refusal says when to retry, and why, in words (docs/API.md).
	resp := wc.getEvents(0, "w1", nil, "")
	body, _ := io.ReadAll(resp.Body)
	if ra := resp.Header.Get("Retry-After"); ra != "1" || !strings.Contains(string(body), "this node serves as many watches as it may") {
		t.Errorf("GET events over the watcher limit: Retry-After %q, body %s; want Retry-After 1 and the reason in words", ra, body)
	}

	// A drain ends open streams, gRPC and SSE, and refuses new ones.
	n1.srv.watchersMax.Store(10)
	sse := wc.openSSE(0, "w1", nil, "")
	sse.next(t)
	n1.srv.DrainWatches()
	if _, err := open.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("open Watch after DrainWatches: Recv = %v, want Unavailable", err)
	}
	for {
		if _, ok := sse.block(t); !ok {
			break // the SSE stream ended
		}
	}
	if err := grpcErr("w1"); status.Code(err) != codes.Unavailable {
		t.Errorf("Watch after DrainWatches = %v, want Unavailable", err)
	}
	httpErr("after DrainWatches", "w1", nil, "", http.StatusServiceUnavailable, "UNAVAILABLE")
}

func TestWatchErrorTable(t *testing.T) {
	drained, cancel := context.WithCancelCause(context.Background())
	cancel(errDraining)
	remote := fmt.Errorf("shard: watch at n1: %w", newStatus("HOLD_CONFIRMED", "from another node"))
	tests := []struct {
		ctx    context.Context
		err    error
		reason string
		code   codes.Code
		http   int
	}{
		{context.Background(), errTooManyWatchers, "TOO_MANY_WATCHERS", codes.ResourceExhausted, http.StatusTooManyRequests},
		{context.Background(), errDraining, "UNAVAILABLE", codes.Unavailable, http.StatusServiceUnavailable},
		{drained, context.Canceled, "UNAVAILABLE", codes.Unavailable, http.StatusServiceUnavailable},
		{context.Background(), shard.ErrShowNotFound, "SHOW_NOT_FOUND", codes.NotFound, http.StatusNotFound},
		{context.Background(), fmt.Errorf("%w: behind", raftnode.ErrUnavailable), "UNAVAILABLE", codes.Unavailable, http.StatusServiceUnavailable},
		{context.Background(), remote, "HOLD_CONFIRMED", codes.FailedPrecondition, http.StatusConflict},
	}
	for _, tt := range tests {
		s := status.Convert(watchError(tt.ctx, tt.err))
		if reasonOf(s) != tt.reason || s.Code() != tt.code || httpStatus(s) != tt.http {
			t.Errorf("watchError(%v) = %s %v HTTP %d, want %s %v HTTP %d", tt.err, reasonOf(s), s.Code(), httpStatus(s), tt.reason, tt.code, tt.http)
		}
	}
	if err := watchError(context.Background(), nil); err != nil {
		t.Errorf("watchError(nil) = %v, want nil", err)
	}
}
