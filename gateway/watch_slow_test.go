//go:build unix

// This file proves that watchers that never read cost nobody else: with
// SSE clients connected that send their request and never read a byte (a
// small receive buffer; the node's writes to them block once the sockets'
// buffers fill, about 2,000 changes here), a reading watcher still gets
// every change, in order, and every hold and release answers; each stalled
// watcher is dropped once a write to it times out, which frees its slot.
package gateway

import (
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
)

// stalledSSE opens GET events at node i from a client that never reads.
func (wc *watchCluster) stalledSSE(i int, show string) net.Conn {
	wc.t.Helper()
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 1024) })
		if err != nil {
			return err
		}
		return serr
	}}
	addr := strings.TrimPrefix(wc.nodes[i].http.URL, "http://")
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		wc.t.Fatal(err)
	}
	wc.t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET /v1/shows/%s/events HTTP/1.1\r\nHost: %s\r\n\r\n", show, addr); err != nil {
		wc.t.Fatal(err)
	}
	return conn
}

func TestWatchStalledWatchersDelayNobodyAndAreDropped(t *testing.T) {
	const stalled = 20
	wc := startWatchCluster(t)
	n1 := wc.nodes[0]
	n1.srv.watchWriteMax.Store(int64(200 * time.Millisecond))
	wc.createShow("w1")
	live := wc.openSSE(0, "w1", nil, "")
	live.next(t) // the seat map
	for range stalled {
		wc.stalledSSE(0, "w1")
	}
	waitWatches(t, n1, stalled+1)

	seats := []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8"}
	// Hold and release seats until every stalled watcher is dropped:
	// each change must reach the live watcher, in order.
	var ops int
	for ; n1.srv.watches.count() > 1; ops++ {
		if ops == 5000 {
			t.Fatalf("%d watches still open after %d changes, want the %d stalled ones dropped", n1.srv.watches.count(), ops, stalled)
		}
		client := fmt.Sprint("c", ops)       // the helpers' request ids are fixed
		h := wc.hold("w1", client, seats...) // large events fill buffers sooner
		wantLive(t, live, h.Revision, all(seats, "HELD"))
		rel := wc.release("w1", client, h.HoldId)
		wantLive(t, live, rel, all(seats, "FREE"))
	}
	t.Logf("%d stalled watchers dropped after %d hold-release pairs", stalled, ops)
	// The live watcher is still served.
	h := wc.hold("w1", "last", "A9")
	wantLive(t, live, h.Revision, "A9=HELD")
}

// all renders seats all in state as changes renders them.
func all(seats []string, state string) string {
	var cs []string
	for _, s := range seats {
		cs = append(cs, s+"="+state)
	}
	return strings.Join(cs, ",")
}

func wantLive(t *testing.T, c *sseClient, rev uint64, want string) {
	t.Helper()
	if e := c.next(t); e.kind != "changes" || e.ev.Revision != rev || changes(e.ev) != want {
		t.Fatalf("live watcher: event %q at %d with %q, want changes %s at %d", e.kind, e.ev.Revision, changes(e.ev), want, rev)
	}
}

// waitWatches waits until node n counts want open watches.
func waitWatches(t *testing.T, n *watchNode, want int) {
	t.Helper()
	for deadline := time.Now().Add(watchTimeout); n.srv.watches.count() != want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d watches open, want %d", n.srv.watches.count(), want)
		}
	}
}
