package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// watchers is issue 21's live seat map load: --clients SSE clients follow
// one show at the first node (as EventSource does, resuming with
// Last-Event-ID), while one writer holds a seat, then releases it, with
// watchWriterPause between calls. It reports watchers connected, changes
// per second, delivery (the writer's answer to the change's arrival at a
// watcher) p50/p99/max, missed changes, the watchers' node's CPU per
// delivered event, its RSS per watcher, and the writer's hold latency.
type watchers struct {
	show string
	addr string // the watchers' node, host:port of its HTTP API
	pid  int    // its process (own cluster only)

	rssBefore float64 // MiB, before the watchers connected
	conns     []*sseConn
	// stop ends the watchers (check calls it), done when all returned.
	stop context.CancelFunc
	done sync.WaitGroup

	answered  sync.Map // revision -> Unix ns of the writer's answer
	revs      []uint64 // the writer's revisions, in order (writer only)
	delivery  histogram
	delivered atomic.Uint64
	cpu       float64 // node CPU seconds during run
	rssAfter  float64
}

const (
	// watchWriterPause is the writer's pause between its calls.
	watchWriterPause = 50 * time.Millisecond
	// watchDrain is how long deliveries may still arrive after the writer
	// stops.
	watchDrain = 2 * time.Second
	// watchDialers bounds concurrent connects in setup.
	watchDialers = 64
)

// sseConn is one watcher: one connection, read on one goroutine.
type sseConn struct {
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
	wl.addr = e.cfg.endpoints0HTTP(e)
	if e.cluster != nil {
		wl.pid = e.cluster.Nodes()[0].PID()
		wl.rssBefore = procRSSMiB(wl.pid)
	}
	// The watchers outlive setup's context: check stops them.
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	wl.stop = stop
	wl.conns = make([]*sseConn, e.cfg.clients)
	sem := make(chan struct{}, watchDialers)
	for i := range wl.conns {
		c := &sseConn{}
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
				wl.close()
				return fmt.Errorf("watcher %d: %w", i, err)
			}
		case <-ctx.Done():
			wl.close()
			return ctx.Err()
		}
	}
	fmt.Fprintf(e.out, "%d watchers connected to %s\n", len(wl.conns), wl.addr)
	return nil
}

// close stops the watchers and waits for them.
func (wl *watchers) close() {
	wl.stop()
	wl.done.Wait()
}

// endpoints0HTTP is the first node's HTTP address.
func (c *config) endpoints0HTTP(e *env) string {
	if e.cluster != nil {
		return e.cluster.Nodes()[0].HTTPAddr
	}
	return c.endpoints[0] // validate requires --http with --endpoints
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

// stream reads one connection: parsing only id and event lines, so the
// load tool spends little of the machine it shares with the node.
func (wl *watchers) stream(ctx context.Context, c *sseConn, opened chan<- error) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", wl.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	req := "GET /v1/shows/" + wl.show + "/events HTTP/1.1\r\nHost: " + wl.addr + "\r\nAccept: text/event-stream\r\n"
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
	body := bufio.NewReaderSize(resp.Body, 4096)
	var id uint64
	var kind string
	for {
		line, err := body.ReadSlice('\n')
		for err == bufio.ErrBufferFull { // a long data line: not needed
			_, err = body.ReadSlice('\n')
			line = []byte("data\n")
		}
		if err != nil {
			return err
		}
		switch s := string(line[:len(line)-1]); {
		case strings.HasPrefix(s, "id: "):
			id, _ = strconv.ParseUint(s[4:], 10, 64)
		case strings.HasPrefix(s, "event: "):
			kind = s[7:]
		case s == "" && kind != "":
			wl.event(c, kind, id, opened)
			kind = ""
		}
	}
}

// event counts one event of c.
func (wl *watchers) event(c *sseConn, kind string, rev uint64, opened chan<- error) {
	switch kind {
	case "snapshot":
		if c.first.CompareAndSwap(0, rev) {
			opened <- nil
		}
	case "reset":
		c.resets.Add(1)
	case "changes":
		if rev > c.last.Load() {
			c.changes.Add(1)
		}
		now := time.Now().UnixNano()
		if at, ok := wl.answered.Load(rev); ok {
			wl.delivery.record(time.Duration(max(0, now-at.(int64))))
		} else {
			wl.delivery.record(0) // it arrived before the writer's answer
		}
		wl.delivered.Add(1)
	}
	if rev > c.last.Load() {
		c.last.Store(rev)
	}
}

func (wl *watchers) run(ctx context.Context, e *env) time.Duration {
	cpu0 := procCPU(wl.pid)
	elapsed := e.runWorkers(ctx, 1, e.cfg.duration, func(ctx context.Context, w *worker) {
		for !w.stopped() && ctx.Err() == nil {
			if !wl.holdRelease(ctx, e, w) {
				time.Sleep(watchWriterPause)
			}
		}
	})
	time.Sleep(watchDrain)
	wl.cpu = procCPU(wl.pid) - cpu0
	wl.rssAfter = procRSSMiB(wl.pid)
	return elapsed
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
	wl.answered.Store(rev, time.Now().UnixNano())
	wl.revs = append(wl.revs, rev)
}

func (wl *watchers) check(ctx context.Context, e *env) {
	wl.close()
	var connected, missed, resets, redials uint64
	for _, c := range wl.conns {
		first := c.first.Load()
		if first > 0 {
			connected++
		}
		// Every writer revision after the watcher's seat map is a change
		// it must have seen once.
		i, _ := slices.BinarySearch(wl.revs, first+1)
		if want := uint64(len(wl.revs) - i); c.changes.Load() < want {
			missed += want - c.changes.Load()
		}
		resets += c.resets.Load()
		redials += c.redials.Load()
	}
	snap := wl.delivery.snapshot()
	elapsed := e.cfg.duration.Seconds()
	e.extra["watchers_connected"] = connected
	e.extra["changes_per_s"] = fmt.Sprintf("%.1f", float64(len(wl.revs))/elapsed)
	e.extra["delivered_events"] = wl.delivered.Load()
	e.extra["delivery_ms"] = map[string]string{"p50": ms(snap.quantile(0.5)), "p99": ms(snap.quantile(0.99)), "max": ms(time.Duration(snap.max) * time.Microsecond)}
	e.extra["missed_changes"] = missed
	e.extra["resets"], e.extra["reconnects"] = resets, redials
	if n := wl.delivered.Load(); n > 0 && wl.pid != 0 {
		e.extra["node_cpu_us_per_delivered_event"] = fmt.Sprintf("%.2f", wl.cpu/float64(n)*1e6)
	}
	if wl.pid != 0 && connected > 0 {
		e.extra["node_rss_mib_before_after"] = fmt.Sprintf("%.0f / %.0f", wl.rssBefore, wl.rssAfter)
		e.extra["node_rss_kib_per_watcher"] = fmt.Sprintf("%.1f", (wl.rssAfter-wl.rssBefore)*1024/float64(connected))
	}
	e.addCheck("watchers connected", connected == uint64(len(wl.conns)), "%d of %d", connected, len(wl.conns))
	e.addCheck("no missed changes", missed == 0, "%d missed, %d resets, %d reconnects", missed, resets, redials)
}
