// This file proves that a node without a replica of a show's group relays
// one upstream watch per show, whatever the number of its watchers: many
// SSE and gRPC watchers at n2 cost n1 one watch, each gets the seat map and
// then every change once, in order; a later watcher, one resuming from a
// revision the relay holds and one resuming from past its last change join
// the same upstream; and the upstream ends with the last watcher. A
// resume over SSE from a quiet show's last change, which the relay's first
// seat map is past (and names), gets keepalive comments while it waits for
// the next change, then that change. Seat maps over SSE and gRPC name the
// show's last change (last_change_revision), and after the relay restarts
// on a quiet show, a storm of SSE and gRPC watchers resuming from that
// change costs n1 one upstream, and each gets the next change once.
package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestWatchRelayedWatchersShareOneUpstream(t *testing.T) {
	const sse, grpcs = 30, 10
	wc := startWatchCluster(t)
	n1, n2 := wc.nodes[0], wc.nodes[1]
	wc.createShow("r1")
	wc.createShow("other")

	var cancels []context.CancelFunc
	var streams []func() *ledgerpb.WatchEvent // next event of each watcher
	for i := range sse + grpcs {
		if i < sse {
			c := wc.openSSE(1, "r1", nil, "")
			cancels = append(cancels, func() { c.resp.Body.Close() })
			streams = append(streams, func() *ledgerpb.WatchEvent { return c.next(t).ev })
			continue
		}
		s, cancel := relayedWatch(t, n2, 0)
		cancels = append(cancels, cancel)
		streams = append(streams, func() *ledgerpb.WatchEvent { return recv(t, s) })
	}
	for i, next := range streams {
		if e := next(); e.Snapshot == nil || e.Reset_ || e.Snapshot.Free != 10 {
			t.Fatalf("watcher %d via n2: first event snapshot %v reset %v, want the seat map, 10 seats free", i, e.Snapshot != nil, e.Reset_)
		}
	}
	waitWatches(t, n2, sse+grpcs)
	if got := n1.srv.watches.count(); got != 1 {
		t.Errorf("n1 serves %d watches for n2's %d watchers of one show, want 1 upstream", got, sse+grpcs)
	}

	a := wc.hold("r1", "ca", "A1", "A2")
	rel := wc.release("r1", "ca", a.HoldId)
	for i, next := range streams {
		wantChanges(t, fmt.Sprint("watcher ", i, ", hold"), next(), a.Revision, "A1=HELD,A2=HELD")
		wantChanges(t, fmt.Sprint("watcher ", i, ", release"), next(), rel, "A1=FREE,A2=FREE")
	}

	// A new watcher gets a seat map, then whatever followed it; a resume
	// from a revision the relay holds gets what followed that revision.
	late, cancelLate := relayedWatch(t, n2, 0)
	e := recv(t, late)
	if e.Snapshot == nil || e.Reset_ {
		t.Fatalf("late watcher via n2: first event snapshot %v reset %v, want a seat map", e.Snapshot != nil, e.Reset_)
	}
	for e.Revision < rel {
		e = recv(t, late)
	}
	if e.Revision != rel {
		t.Errorf("late watcher via n2: reached revision %d, want the release's %d", e.Revision, rel)
	}
	resumed, cancelResumed := relayedWatch(t, n2, a.Revision)
	wantChanges(t, "resumed after the hold via n2", recv(t, resumed), rel, "A1=FREE,A2=FREE")
	waitWatches(t, n2, sse+grpcs+2)
	if got := n1.srv.watches.count(); got != 1 {
		t.Errorf("n1 serves %d watches after a new and a resumed watcher at n2, want 1 upstream", got)
	}

	// A resume from past the relay's last change (a seat map's revision,
	// read at n1 after entries that changed nothing of the show) is
	// checked upstream, then joins the relay: it gets the next change.
	g, err := n1.raft.Group(0)
	if err != nil {
		t.Fatal(err)
	}
	wc.hold("other", "co", "A1") // another show: no change of r1
	ahead, cancelAhead := relayedWatch(t, n2, g.Machine().Applied())
	b := wc.hold("r1", "cb", "A3")
	wantChanges(t, "resumed past the relay's last change via n2", recv(t, ahead), b.Revision, "A3=HELD")
	cancelAhead()
	waitWatches(t, n2, sse+grpcs+2)
	waitWatches(t, n1, 1) // the resume's own upstream closed once it joined

	// The upstream lasts as long as n2 has a watcher of the show.
	for _, cancel := range cancels {
		cancel()
	}
	cancelLate()
	waitWatches(t, n2, 1)
	if got := n1.srv.watches.count(); got != 1 {
		t.Errorf("n1 serves %d watches, want 1 upstream while n2 has a watcher", got)
	}
	cancelResumed()
	waitWatches(t, n2, 0)
	waitWatches(t, n1, 0)
}

// relayedWatch opens a gRPC watch of show r1 at n from a revision.
func relayedWatch(t *testing.T, n *watchNode, from uint64) (grpc.ServerStreamingClient[ledgerpb.WatchEvent], context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s, err := n.client.Watch(ctx, &ledgerpb.WatchRequest{ShowId: "r1", FromRevision: from})
	if err != nil {
		t.Fatalf("Watch(r1, %d) via %s: %v", from, n.id, err)
	}
	return s, cancel
}

func TestWatchRelayedResumeOnAQuietShowKeepsAlive(t *testing.T) {
	wc := startWatchCluster(t)
	wc.nodes[1].srv.watchKeepalive.Store(int64(30 * time.Millisecond))
	wc.createShow("r1")
	wc.createShow("other")
	a := wc.hold("r1", "ca", "A1")
	for i := range 3 {
		wc.hold("other", fmt.Sprint("co", i), fmt.Sprint("A", i+1)) // past r1's last change
	}
	first := wc.openSSE(1, "r1", nil, "") // n2's relay feed starts at a later seat map
	if e := first.next(t); e.kind != "snapshot" || e.ev.Revision <= a.Revision {
		t.Fatalf("first watcher via n2: event %q at %d, want a seat map after r1's last change at %d", e.kind, e.ev.Revision, a.Revision)
	}

	// Resumed from r1's last change, the stream waits for the next one: it
	// is open, and idle, so it gets keepalive comments meanwhile.
	resumed := wc.openSSE(1, "r1", map[string]string{"Last-Event-ID": fmt.Sprint(a.Revision)}, "")
	if b, _ := resumed.block(t); len(b) != 1 || b[0] != "retry: 1000" {
		t.Errorf("resumed SSE via n2: first block %q, want [retry: 1000]", b)
	}
	for i := range 2 {
		if b, _ := resumed.block(t); len(b) != 1 || b[0] != ": keepalive" {
			t.Fatalf("resumed SSE via n2 at a quiet show: block %d %q, want [: keepalive]", i, b)
		}
	}
	b := wc.hold("r1", "cb", "A2")
	if e := resumed.next(t); e.kind != "changes" || e.ev.Revision != b.Revision || changes(e.ev) != "A2=HELD" {
		t.Errorf("resumed SSE via n2: event %q at %d with %q, want changes A2=HELD at %d", e.kind, e.ev.Revision, changes(e.ev), b.Revision)
	}
}

func TestWatchRelayedReconnectStormSharesOneUpstream(t *testing.T) {
	const sse, grpcs = 20, 10
	wc := startWatchCluster(t)
	n1, n2 := wc.nodes[0], wc.nodes[1]
	wc.createShow("r1")
	wc.createShow("other")
	a := wc.hold("r1", "ca", "A1")

	// n2 relays r1 for a while: each wire's seat map names r1's last
	// change. Then its watchers go (n2 restarts, say): the relay stops.
	first := wc.openSSE(1, "r1", nil, "")
	if e := first.next(t); e.kind != "snapshot" || e.ev.LastChangeRevision != a.Revision || !strings.Contains(strings.Join(e.lines, "\n"), `"last_change_revision":"`) {
		t.Fatalf("SSE via n2: event %q last change %d (%.200q), want a seat map with last_change_revision %d", e.kind, e.ev.LastChangeRevision, e.lines, a.Revision)
	}
	s, cancel := relayedWatch(t, n2, 0)
	if e := recv(t, s); e.Snapshot == nil || e.LastChangeRevision != a.Revision {
		t.Fatalf("gRPC via n2: first event snapshot %v last change %d, want a seat map naming r1's last change %d", e.Snapshot != nil, e.LastChangeRevision, a.Revision)
	}
	first.resp.Body.Close()
	cancel()
	waitWatches(t, n2, 0)
	waitWatches(t, n1, 0)
	for i := range 3 {
		wc.hold("other", fmt.Sprint("co", i), fmt.Sprint("A", i+1)) // the group moves on; r1 stays quiet
	}

	// Every watcher reconnects at once, resuming from r1's last change,
	// which is before the restarted relay's seat map.
	before := admitted(n1)
	var streams []func() *ledgerpb.WatchEvent
	for i := range sse + grpcs {
		if i < sse {
			c := wc.openSSE(1, "r1", map[string]string{"Last-Event-ID": fmt.Sprint(a.Revision)}, "")
			streams = append(streams, func() *ledgerpb.WatchEvent { return c.next(t).ev })
			continue
		}
		s, _ := relayedWatch(t, n2, a.Revision)
		streams = append(streams, func() *ledgerpb.WatchEvent { return recv(t, s) })
	}
	waitWatches(t, n2, sse+grpcs)
	b := wc.hold("r1", "cb", "A2")
	for i, next := range streams {
		wantChanges(t, fmt.Sprint("watcher ", i, " resumed from r1's last change via n2"), next(), b.Revision, "A2=HELD")
	}
	if got := admitted(n1) - before; got != 1 {
		t.Errorf("n1 admitted %d watches for n2's %d watchers resuming from r1's last change, want 1 upstream", got, sse+grpcs)
	}
}

// admitted is how many watches n has admitted since it started.
func admitted(n *watchNode) uint64 {
	n.srv.watches.mu.Lock()
	defer n.srv.watches.mu.Unlock()
	return n.srv.watches.mu.next
}
