package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// watchers is issue 21's live seat map load: --clients SSE clients follow
// one show at the first --watch-nodes nodes, round robin (as EventSource
// does, resuming with Last-Event-ID), while one writer holds a seat, then
// releases it, with watchWriterPause between calls. It reports watchers
// connected, changes per second, delivery (the writer's answer to the
// change's arrival at a watcher) p50/p99/max, missed changes, the watchers'
// nodes' CPU per delivered event, their RSS per watcher, and the writer's
// hold latency. Past watchProcessMax watchers the rest are read by child
// seatbench processes (a process's descriptor limit may be below the
// watchers' count), which report their figures at the end.
type watchers struct {
	show  string
	addrs []string // the watchers' nodes, host:port of their HTTP API
	pids  []int    // their processes (own cluster only)

	rssBefore float64 // MiB, before the watchers connected
	conns     []*sseConn
	children  []*watchChild
	// poll reads the watchers' connections (nil: each its own goroutine:
	// watchpoll_linux.go).
	poll *pollSet
	// stop ends the watchers (check calls it), done when all returned.
	stop context.CancelFunc
	done sync.WaitGroup

	answered  sync.Map // revision -> Unix ns of the writer's answer
	revs      []uint64 // the writer's revisions, in order (writer only)
	delivery  histogram
	delivered atomic.Uint64
	cpu       float64 // node CPU seconds during run
	rssAfter  float64
	// pending: arrivals before the answer reached a child (child only).
	pending struct {
		sync.Mutex
		at map[uint64][]int64
	}
}

const (
	// watchWriterPause is the writer's pause between its calls.
	watchWriterPause = 50 * time.Millisecond
	// watchDrain is how long deliveries may still arrive after the writer
	// stops.
	watchDrain = 2 * time.Second
	// watchDialers bounds concurrent connects in setup.
	watchDialers = 64
	// watchProcessMax bounds the watchers one seatbench process reads, to
	// stay below a descriptor limit of 20,000 (a container's hard limit).
	watchProcessMax = 12000
)

// sseConn is one watcher: one connection, read on one goroutine.
type sseConn struct {
	addr    string        // its node's HTTP address
	first   atomic.Uint64 // revision of its seat map
	last    atomic.Uint64 // last revision it saw
	changes atomic.Uint64 // change events after first, in order
	resets  atomic.Uint64
	redials atomic.Uint64
}

func (wl *watchers) mainCall() string { return "hold" }

func (wl *watchers) setup(ctx context.Context, e *env) error {
	if e.tls != nil || (e.cluster == nil && !e.cfg.http) {
		return fmt.Errorf("the watchers workload speaks plain HTTP: drop --tls, and give --endpoints with --http")
	}
	wl.show = e.showID("watch", 0)
	if err := e.createShows(ctx, []string{wl.show}, e.cfg.seats); err != nil {
		return err
	}
	return wl.connect(ctx, e, e.cfg.clients)
}

// connect connects n watchers of wl.show to the first --watch-nodes nodes,
// the first watchProcessMax in this process and the rest in children.
func (wl *watchers) connect(ctx context.Context, e *env, n int) error {
	wl.addrs = e.cfg.watchAddrs(e)
	if e.cluster != nil {
		for _, node := range e.cluster.Nodes()[:len(wl.addrs)] {
			wl.pids = append(wl.pids, node.PID())
			wl.rssBefore += procRSSMiB(node.PID())
		}
	}
	own := min(n, watchProcessMax)
	for off := own; off < n; off += watchProcessMax {
		c, err := startWatchChild(watchChildConfig{Show: wl.show, Addrs: wl.addrs, Count: min(watchProcessMax, n-off), Offset: off})
		if err != nil {
			wl.close()
			return err
		}
		wl.children = append(wl.children, c)
	}
	if err := wl.dialAll(ctx, own, 0); err != nil {
		wl.close()
		return err
	}
	for _, c := range wl.children {
		if err := c.connected(); err != nil {
			wl.close()
			return err
		}
	}
	fmt.Fprintf(e.out, "%d watchers connected to %s\n", n, strings.Join(wl.addrs, ", "))
	return nil
}

// dialAll connects n watchers, watcher i to addrs[(offset+i) % len].
func (wl *watchers) dialAll(ctx context.Context, n, offset int) error {
	// The watchers outlive setup's context: close stops them.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	wl.stop = stop
	poll, err := newPollSet(wctx, &wl.done)
	if err != nil {
		return err
	}
	wl.poll = poll
	wl.conns = make([]*sseConn, n)
	sem := make(chan struct{}, watchDialers)
	for i := range wl.conns {
		c := &sseConn{addr: wl.addrs[(offset+i)%len(wl.addrs)]}
		wl.conns[i] = c
		opened := make(chan error, 1)
		sem <- struct{}{}
		wl.done.Add(1)
		go func() {
			defer wl.done.Done()
			wl.follow(wctx, c, opened)
		}()
		select {
		case err := <-opened:
			<-sem
			if err != nil {
				return fmt.Errorf("watcher %d: %w", offset+i, err)
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// close stops the watchers and waits for them.
func (wl *watchers) close() {
	if wl.stop != nil {
		wl.stop()
	}
	wl.done.Wait()
}

// watchAddrs is the HTTP addresses of the first --watch-nodes nodes.
func (c *config) watchAddrs(e *env) []string {
	if e.cluster != nil {
		var out []string
		for _, n := range e.cluster.Nodes()[:min(c.watchNodes, len(e.cluster.Nodes()))] {
			out = append(out, n.HTTPAddr)
		}
		return out
	}
	return c.endpoints[:min(c.watchNodes, len(c.endpoints))] // validate requires --http with --endpoints
}

// follow keeps c connected until ctx ends; opened gets the first
// connection's outcome.
func (wl *watchers) follow(ctx context.Context, c *sseConn, opened chan<- error) {
	for first := true; ctx.Err() == nil; first = false {
		err := wl.stream(ctx, c, opened)
		if first && err != nil && c.first.Load() == 0 {
			opened <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.redials.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // EventSource's retry
		}
	}
}

// stream reads one connection: its events' ids and kinds only
// (sseParser), so the load tool spends little of the machine it shares
// with the node.
func (wl *watchers) stream(ctx context.Context, c *sseConn, opened chan<- error) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req := "GET /v1/shows/" + wl.show + "/events HTTP/1.1\r\nHost: " + c.addr + "\r\nAccept: text/event-stream\r\n"
	if last := c.last.Load(); last > 0 {
		req += "Last-Event-ID: " + strconv.FormatUint(last, 10) + "\r\n"
	}
	if _, err := conn.Write([]byte(req + "\r\n")); err != nil {
		return err
	}
	br := bufio.NewReaderSize(conn, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET events: %s", resp.Status)
	}
	if resp.ContentLength >= 0 || len(resp.TransferEncoding) > 0 {
		// Not the connection's own bytes to its end (a node serves an
		// event stream over plain HTTP/1.1 so): net/http's body reads it.
		return wl.readStream(c, resp.Body, opened)
	}
	buffered, _ := br.Peek(br.Buffered())
	return wl.readEvents(c, conn, br, buffered, opened)
}

// readStream reads c's events from r until it fails, on the caller's
// goroutine.
func (wl *watchers) readStream(c *sseConn, r io.Reader, opened chan<- error) error {
	var p sseParser
	var now int64
	event := func(kind string, id uint64) { wl.event(c, kind, id, now, opened) }
	buf := make([]byte, 16<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			now = time.Now().UnixNano()
			p.feed(buf[:n], event)
		}
		if err != nil {
			return err
		}
	}
}

// event counts one event of c, which arrived at now (Unix ns).
func (wl *watchers) event(c *sseConn, kind string, rev uint64, now int64, opened chan<- error) {
	switch kind {
	case sseKindSnapshot:
		if c.first.CompareAndSwap(0, rev) {
			opened <- nil
		}
	case sseKindReset:
		c.resets.Add(1)
	case sseKindChanges:
		if rev > c.last.Load() {
			c.changes.Add(1)
		}
		if at, ok := wl.answered.Load(rev); ok {
			wl.delivery.record(time.Duration(max(0, now-at.(int64))))
		} else if !wl.hold(rev, now) {
			wl.delivery.record(0) // it arrived before the writer's answer
		}
		wl.delivered.Add(1)
	}
	if rev > c.last.Load() {
		c.last.Store(rev)
	}
}

func (wl *watchers) run(ctx context.Context, e *env) time.Duration {
	cpu0 := wl.nodesCPU()
	elapsed := e.runWorkers(ctx, 1, e.cfg.duration, func(ctx context.Context, w *worker) {
		for !w.stopped() && ctx.Err() == nil {
			if !wl.holdRelease(ctx, e, w) {
				time.Sleep(watchWriterPause)
			}
		}
	})
	time.Sleep(watchDrain)
	wl.cpu = wl.nodesCPU() - cpu0
	for _, pid := range wl.pids {
		wl.rssAfter += procRSSMiB(pid)
	}
	return elapsed
}

// nodesCPU is the watchers' nodes' CPU seconds so far.
func (wl *watchers) nodesCPU() (cpu float64) {
	for _, pid := range wl.pids {
		cpu += procCPU(pid)
	}
	return cpu
}

// holdRelease holds seat A1, pauses, releases it, pauses; it records the
// time of each answer by revision.
func (wl *watchers) holdRelease(ctx context.Context, e *env, w *worker) bool {
	req := &ledgerpb.HoldRequest{ShowId: wl.show, SeatIds: []string{"A1"}, ClientId: w.client, RequestId: w.requestID()}
	var h *ledgerpb.HoldResponse
	if err := e.stats.call("hold").run(ctx, func(ctx context.Context) (err error) { h, err = w.api.Hold(ctx, req); return err }); err != nil {
		return false
	}
	wl.answer(h.Revision)
	time.Sleep(watchWriterPause)
	rreq := &ledgerpb.ReleaseRequest{ShowId: wl.show, HoldId: h.HoldId, HoldToken: h.HoldToken, ClientId: w.client, RequestId: w.requestID()}
	var r *ledgerpb.ReleaseResponse
	if err := e.stats.call("release").run(ctx, func(ctx context.Context) (err error) { r, err = w.api.Release(ctx, rreq); return err }); err != nil {
		return false
	}
	wl.answer(r.Revision)
	time.Sleep(watchWriterPause)
	return true
}

func (wl *watchers) answer(rev uint64) {
	at := time.Now().UnixNano()
	wl.answered.Store(rev, at)
	wl.revs = append(wl.revs, rev)
	for _, c := range wl.children {
		c.answer(rev, at)
	}
}

func (wl *watchers) check(ctx context.Context, e *env) {
	r := wl.results()
	snap := wl.delivery.snapshot()
	elapsed := e.cfg.duration.Seconds()
	e.extra["watchers_connected"] = r.Connected
	e.extra["changes_per_s"] = fmt.Sprintf("%.1f", float64(len(wl.revs))/elapsed)
	e.extra["delivered_events"] = r.Delivered
	e.extra["delivery_ms"] = map[string]string{"p50": ms(snap.quantile(0.5)), "p99": ms(snap.quantile(0.99)), "max": ms(time.Duration(snap.max) * time.Microsecond)}
	e.extra["missed_changes"] = r.Missed
	e.extra["resets"], e.extra["reconnects"] = r.Resets, r.Redials
	if r.Delivered > 0 && len(wl.pids) > 0 {
		e.extra["node_cpu_us_per_delivered_event"] = fmt.Sprintf("%.2f", wl.cpu/float64(r.Delivered)*1e6)
	}
	if len(wl.pids) > 0 && r.Connected > 0 {
		e.extra["node_rss_mib_before_after"] = fmt.Sprintf("%.0f / %.0f", wl.rssBefore, wl.rssAfter)
		e.extra["node_rss_kib_per_watcher"] = fmt.Sprintf("%.1f", (wl.rssAfter-wl.rssBefore)*1024/float64(r.Connected))
	}
	want := uint64(len(wl.conns))
	for _, c := range wl.children {
		want += uint64(c.cfg.Count)
	}
	e.addCheck("watchers connected", r.Connected == want, "%d of %d", r.Connected, want)
	e.addCheck("no missed changes", r.Missed == 0, "%d missed, %d resets, %d reconnects", r.Missed, r.Resets, r.Redials)
}

// watchResult is what a process's watchers saw.
type watchResult struct {
	Connected, Missed, Resets, Redials, Delivered uint64
	// Delivery is the histogram's non-empty buckets (child to parent).
	Delivery map[int]uint64 `json:",omitempty"`
	MaxUs    int64          `json:",omitempty"`
}

// results stops this process's watchers and the children's, and sums
// their figures; the children's delivery joins wl.delivery.
func (wl *watchers) results() watchResult {
	wl.close()
	r := wl.ownResults()
	for _, c := range wl.children {
		cr, err := c.finish()
		if err != nil {
			fmt.Fprintf(os.Stderr, "seatbench: watcher process: %v\n", err)
			continue
		}
		r.Connected += cr.Connected
		r.Missed += cr.Missed
		r.Resets += cr.Resets
		r.Redials += cr.Redials
		r.Delivered += cr.Delivered
		for i, n := range cr.Delivery {
			wl.delivery.counts[i].Add(n)
		}
		wl.delivery.recordMax(cr.MaxUs)
	}
	return r
}

// ownResults sums this process's watchers.
func (wl *watchers) ownResults() watchResult {
	var r watchResult
	for _, c := range wl.conns {
		first := c.first.Load()
		if first > 0 {
			r.Connected++
		}
		// Every writer revision after the watcher's seat map is a change
		// it must have seen once.
		i, _ := slices.BinarySearch(wl.revs, first+1)
		if want := uint64(len(wl.revs) - i); c.changes.Load() < want {
			r.Missed += want - c.changes.Load()
		}
		r.Resets += c.resets.Load()
		r.Redials += c.redials.Load()
	}
	r.Delivered = wl.delivered.Load()
	return r
}
