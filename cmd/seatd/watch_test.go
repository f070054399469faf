// This file proves live seat maps end to end, over HTTP (Server-Sent
// Events) on three nodes: a watcher connected to the leader of the show's
// group gets the seat map, then every hold, confirm and release as one event
// each, with the change it made and strictly increasing revisions. When that
// leader is killed under a write load, the watcher resumes at another node
// with Last-Event-ID and continues without a gap or a duplicate: the seat
// states it rebuilt from the events equal a linearizable seat map at the end
// (it stays away while writes go on, so the resume must replay them).
// Every event's id line is its revision and its type says what it is.
package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// sseEvent is one Server-Sent Event as a client reads it.
type sseEvent struct {
	id, kind string
	ev       *ledgerpb.WatchEvent
}

// readSSE parses an event stream into events until it ends; comments and
// the retry field are skipped, and a block without data is no event.
func readSSE(body io.Reader, out func(sseEvent) error) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 4<<20) // a seat map is one long line
	var e sseEvent
	var data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" {
				e.ev = &ledgerpb.WatchEvent{}
				if err := protojson.Unmarshal([]byte(data), e.ev); err != nil {
					return fmt.Errorf("event %s data %.200q: %v", e.id, data, err)
				}
				if err := out(e); err != nil {
					return err
				}
			}
			e, data = sseEvent{}, ""
		case strings.HasPrefix(line, ":"), strings.HasPrefix(line, "retry: "):
		case strings.HasPrefix(line, "id: "):
			e.id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "event: "):
			e.kind = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		default:
			return fmt.Errorf("unexpected line %.200q", line)
		}
	}
	return sc.Err()
}

// watcher is an SSE client that follows one show through reconnects, as a
// browser's EventSource would, rebuilding the seat states from the events.
type watcher struct {
	t     *testing.T
	nodes []string // base URL of each node's HTTP API
	show  string

	mu struct {
		sync.Mutex
		seats    map[string]ledgerpb.SeatState
		first    uint64              // revision of the snapshot
		last     uint64              // revision of the last event applied
		changes  map[uint64][]string // revision -> "A1=HELD" in order
		servedBy []string            // node of each connection
		problems []string            // gaps, duplicates, resets, bad events
	}
	changed chan struct{} // signalled after each event (buffered 1)
	// offline holds reconnects back until the test closes it, so that
	// writes happen while the watcher is away and must be replayed.
	offline chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

// startWatcher follows show, first through nodes[first] (base URLs).
func startWatcher(t *testing.T, nodes []string, show string, first int) *watcher {
	ctx, cancel := context.WithCancel(t.Context())
	w := &watcher{t: t, nodes: nodes, show: show, changed: make(chan struct{}, 1), offline: make(chan struct{}),
		cancel: cancel, done: make(chan struct{})}
	w.mu.changes = map[uint64][]string{}
	go w.run(ctx, first)
	t.Cleanup(w.stop)
	return w
}

func (w *watcher) stop() {
	w.cancel()
	<-w.done
}

// run connects, reads until the stream ends, and reconnects to the next
// node with Last-Event-ID, until ctx ends.
func (w *watcher) run(ctx context.Context, node int) {
	defer close(w.done)
	for ctx.Err() == nil {
		err := w.follow(ctx, node)
		if ctx.Err() != nil {
			return
		}
		w.t.Logf("watch via %s ended: %v; reconnecting", w.nodes[node], err)
		node = (node + 1) % len(w.nodes)
		select {
		case <-ctx.Done():
		case <-w.offline:
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryPause):
		}
	}
}

// follow reads one connection's events.
func (w *watcher) follow(ctx context.Context, node int) error {
	req, err := http.NewRequestWithContext(ctx, "GET", w.nodes[node]+"/v1/shows/"+w.show+"/events", nil)
	if err != nil {
		return err
	}
	w.mu.Lock()
	last := w.mu.last
	w.mu.Unlock()
	if last > 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(last, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("status %d: %.300s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		w.problem("Content-Type %q, want text/event-stream", ct)
	}
	w.mu.Lock()
	w.mu.servedBy = append(w.mu.servedBy, resp.Header.Get("X-Served-By"))
	w.mu.Unlock()
	return readSSE(resp.Body, w.apply)
}

func (w *watcher) problem(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.problems = append(w.mu.problems, fmt.Sprintf(format, args...))
}

// apply checks an event against what came before and applies it.
func (w *watcher) apply(e sseEvent) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ev := e.ev
	if e.id != strconv.FormatUint(ev.Revision, 10) {
		w.mu.problems = append(w.mu.problems, fmt.Sprintf("event id %q, revision %d", e.id, ev.Revision))
	}
	switch {
	case e.kind == "snapshot" && ev.Snapshot != nil && w.mu.seats == nil:
		w.mu.seats, w.mu.first = map[string]ledgerpb.SeatState{}, ev.Revision
		for _, s := range ev.Snapshot.Seats {
			w.mu.seats[s.SeatId] = s.State
		}
	case e.kind == "changes" && ev.Snapshot == nil && w.mu.seats != nil && ev.Revision > w.mu.last:
		var cs []string
		for _, c := range ev.Changes {
			w.mu.seats[c.SeatId] = c.State
			cs = append(cs, c.SeatId+"="+c.State.String())
		}
		w.mu.changes[ev.Revision] = cs
	default:
		w.mu.problems = append(w.mu.problems, fmt.Sprintf("event %s %q (snapshot %v, reset %v) after revision %d: want a first snapshot, then changes with increasing revisions",
			e.id, e.kind, ev.Snapshot != nil, ev.Reset_, w.mu.last))
		return nil
	}
	w.mu.last = ev.Revision
	select {
	case w.changed <- struct{}{}:
	default:
	}
	return nil
}

// waitRevision waits until the watcher applied an event at or after rev.
func (w *watcher) waitRevision(rev uint64) {
	w.t.Helper()
	deadline := time.After(clusterWaitMax)
	for {
		w.mu.Lock()
		last := w.mu.last
		w.mu.Unlock()
		if last >= rev {
			return
		}
		select {
		case <-w.changed:
		case <-deadline:
			w.t.Fatalf("watcher at revision %d after %v, want %d", last, clusterWaitMax, rev)
		}
	}
}

// wantChange fails unless the event at rev made exactly these changes.
func (w *watcher) wantChange(what string, rev uint64, changes ...string) {
	w.t.Helper()
	w.mu.Lock()
	got, ok := w.mu.changes[rev]
	w.mu.Unlock()
	if !ok || !slices.Equal(got, changes) {
		w.t.Errorf("%s at revision %d: watcher saw %v (event: %v), want %v", what, rev, got, ok, changes)
	}
}

// releaseHold and confirmHold are the watch tests' only confirm and release
// calls (one place to change when they need more than the hold id).
func (c *testCluster) releaseHold(i int, show, holdID, client, request string) uint64 {
	return c.mustRelease(i, show, holdID, client, request).Revision
}

func (c *testCluster) confirmHold(i int, show, holdID, client, request string) uint64 {
	return c.mustConfirm(i, show, holdID, client, request, "pay-"+client).Revision
}

func TestWatchSSEAcrossLeaderKill(t *testing.T) {
	c := startCluster(t, true)
	const show = "watch-1"
	c.createShow(0, show)
	leader := c.leaderOf(show)
	var urls []string
	for _, a := range c.httpAddr {
		urls = append(urls, "http://"+a)
	}
	w := startWatcher(t, urls, show, leader)
	w.waitRevision(1)

	// Each write is one event with its own changes.
	others := []int{(leader + 1) % clusterNodes, (leader + 2) % clusterNodes}
	a := c.mustHold(others[0], show, "alice", "h1", 0, "A1", "A2")
	b := c.mustHold(others[1], show, "bob", "h1", 0, "B1")
	confirmed := c.confirmHold(leader, show, a.HoldId, "alice", "c1")
	released := c.releaseHold(others[0], show, b.HoldId, "bob", "r1")
	w.waitRevision(released)
	w.wantChange("Hold(A1,A2)", a.Revision, "A1=HELD", "A2=HELD")
	w.wantChange("Hold(B1)", b.Revision, "B1=HELD")
	w.wantChange("Confirm(A1,A2)", confirmed, "A1=BOOKED", "A2=BOOKED")
	w.wantChange("Release(B1)", released, "B1=FREE")

	// Kill the leader the watcher is connected to, under a write load. The
	// watcher stays away until the writes are done, then resumes with
	// Last-Event-ID at another node, which must replay what it missed.
	load := c.startWriters(show)
	time.Sleep(50 * time.Millisecond)
	c.kill(leader)
	c.waitLeaders()
	c.settleWrites(show, load.wait(), others)
	h := c.mustHold(others[1], show, "carol", "h1", 0, "C1", "C2")
	confirmed = c.confirmHold(others[0], show, h.HoldId, "carol", "c1")
	close(w.offline)
	w.waitRevision(confirmed)
	// And it follows writes live again.
	last := c.mustHold(others[0], show, "dave", "h1", 0, "C3").Revision
	w.waitRevision(last)
	w.wantChange("Confirm(C1,C2) after the kill", confirmed, "C1=BOOKED", "C2=BOOKED")

	// The rebuilt states equal a linearizable read; nothing wrote since.
	sm := c.seatMap(others[0], show, ledgerpb.Consistency_LINEARIZABLE)
	seen, servedBy := w.finish(sm)
	// Exactly the revisions at which the replicated change log has a record
	// of the show, each once.
	v, err := c.group(others[0], c.smap.GroupFor(show)).Machine().View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	recs, err := v.SeatEvents(show, w.mu.first, 1<<20)
	if err != nil {
		t.Fatalf("SeatEvents(%s, after %d): %v", show, w.mu.first, err)
	}
	var logged []uint64
	for _, r := range recs {
		logged = append(logged, r.Revision)
	}
	if !slices.Equal(seen, logged) {
		t.Errorf("watcher saw changes at revisions %v, the change log has %v", seen, logged)
	}
	if sm.Held+sm.Booked < 4+writersN*writeSeatsN {
		t.Errorf("seat map has %d held and %d booked seats, want at least %d: the writes did not all land", sm.Held, sm.Booked, 4+writersN*writeSeatsN)
	}
	if len(servedBy) < 2 || servedBy[0] != c.peers[leader].ID || servedBy[len(servedBy)-1] == c.peers[leader].ID {
		t.Errorf("watch served by %v, want first the killed leader %s, last another node", servedBy, c.peers[leader].ID)
	}
}

// finish stops the watcher, reports its problems, and compares the seat
// states it rebuilt with sm, read after the last event it waited for. It
// returns the revisions of the change events in order, and the node that
// served each connection.
func (w *watcher) finish(sm *ledgerpb.SeatMap) ([]uint64, []string) {
	w.t.Helper()
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.mu.problems {
		w.t.Errorf("watcher: %s", p)
	}
	for _, s := range sm.Seats {
		if got := w.mu.seats[s.SeatId]; got != s.State {
			w.t.Errorf("seat %s rebuilt from the events = %v, linearizable seat map at revision %d = %v", s.SeatId, got, sm.Revision, s.State)
		}
	}
	if len(w.mu.seats) != len(sm.Seats) {
		w.t.Errorf("watcher knows %d seats, the seat map has %d", len(w.mu.seats), len(sm.Seats))
	}
	var seen []uint64
	for rev := range w.mu.changes {
		seen = append(seen, rev)
	}
	slices.Sort(seen)
	w.t.Logf("watcher: %d change events up to revision %d, served by %v", len(seen), w.mu.last, w.mu.servedBy)
	return seen, slices.Clone(w.mu.servedBy)
}
