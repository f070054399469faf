package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Relayed watches: a node without a replica of a show's group follows the
// show through one upstream watch (a relay feed), whatever the number of
// its watchers of it, and fans the upstream's events out through the same
// ring and direct writes as a feed of its own replica (feed.go, direct.go).
//
// The upstream starts from a seat map (the feed's base) and then streams
// every change after it, so the ring holds every change of the show after
// its lo, as a local feed's does. The seat map also names the show's last
// change before it (WatchEvent.last_change_revision): nothing of the show
// changed between the two, so the ring starts there, and a watcher
// resuming from the show's last change (an EventSource reconnecting to a
// quiet show, thousands at once after a node restarts) joins the ring
// instead of opening an upstream of its own. A watcher starts from the
// base when it is recent, or from the ring when it resumes from a revision
// the ring covers. Anything else (a resume from before the ring, or after
// the last change the feed has seen, or a base that fell too far behind)
// is what a relayed watch was before: a stream of the watcher's own from a
// node with a replica, which the hub follows only until the watcher
// reaches the ring, then closes. So a watcher sees exactly what a watch
// served by that node would send: the changes after its revision, or a
// reset seat map where that node's log no longer reaches back, never a
// gap. (The last change is a record that node's log held when it read
// the seat map, so a resume from it was not one to reset; later, like any
// revision the ring covers, it is served from the ring, which holds every
// change after it, even once that node's log no longer does.)

// relayBaseLagMax bounds how many changes a new watcher gets after the
// base seat map; past it, the watcher's seat map is read upstream for it
// alone, and becomes the feed's new base.
const relayBaseLagMax = 64

// relayState is what only a relay feed has (feed.relay).
type relayState struct {
	group uint32 // the show's group
	// opened is closed once the upstream opened, or the feed failed.
	opened chan struct{}
	// Guarded by the feed's mu.
	isOpen   bool
	servedBy string // the node whose replica serves the upstream
	base     *Frame // the latest seat map seen, never a reset; nil until open
}

// watchRelayed serves a watch of a show this node has no replica of from
// the show's relay feed, on the caller's goroutine.
func (h *Hub) watchRelayed(ctx context.Context, group uint32, show string, from uint64, sink Sink) error {
	shared, ok := sink.(SharedSink)
	if !ok {
		shared = eventSink{sink}
	}
	f, err := h.feeds.joinRelay(h, group, show, shared.Format())
	if err != nil {
		return err
	}
	defer h.feeds.leave(f)
	servedBy, err := f.waitOpen(ctx)
	if err != nil {
		return err
	}
	first, pos, ok := f.relayStart(from)
	if ok {
		if err := shared.OpenShared(servedBy); err != nil {
			return err
		}
		if len(first) > 0 {
			if err := shared.SendFrames(first); err != nil {
				return err
			}
		}
	} else if pos, err = f.ownUpstream(ctx, h, shared, from, false); err != nil {
		return err
	}
	return f.serve(ctx, h, shared, pos)
}

// joinRelay returns the relay feed of show, started if needed (or if the
// one there failed), with format added.
func (s *feedSet) joinRelay(h *Hub, group uint32, show string, format Format) (*feed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, fmt.Errorf("%w: the watch hub is closed", raftnode.ErrUnavailable)
	}
	if s.mu.feeds == nil {
		s.mu.feeds, s.mu.watchers = map[feedKey]*feed{}, map[*feed]int{}
	}
	k := feedKey{nil, show}
	f := s.mu.feeds[k]
	if f == nil || f.failed() {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{show: show, stop: cancel, framesMax: s.ringMax(),
			relay: &relayState{group: group, opened: make(chan struct{})}}
		f.mu.wake = make(chan struct{})
		s.mu.feeds[k] = f
		s.start(ctx, h, k, f)
	}
	s.mu.watchers[f]++
	f.addFormat(format)
	return f, nil
}

func (f *feed) failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.err != nil
}

// waitOpen waits until the feed's upstream opened and returns the node
// that serves it, or the feed's error.
func (f *feed) waitOpen(ctx context.Context) (string, error) {
	select {
	case <-f.relay.opened:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.err != nil {
		return "", f.mu.err
	}
	return f.relay.servedBy, nil
}

// relayStart returns a new watcher's first frames and its position when
// the feed can serve it: from 0, the base seat map if few changes followed
// it; otherwise from a revision the ring covers and the feed has reached.
func (f *feed) relayStart(from uint64) (first []*Frame, pos uint64, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if from > 0 {
		return nil, from, from >= f.mu.lo && from <= f.mu.pos
	}
	b := f.relay.base
	if b == nil || b.Event.Revision < f.mu.lo {
		return nil, 0, false
	}
	all := f.mu.frames
	i := sort.Search(len(all), func(i int) bool { return all[i].Event.Revision > b.Event.Revision })
	if len(all)-i > relayBaseLagMax {
		return nil, 0, false
	}
	return []*Frame{b}, b.Event.Revision, true
}

// covers reports whether a watcher at pos can go on from the ring, or
// the feed failed (then the watcher ends with the feed's error).
func (f *feed) covers(pos uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.err != nil || pos >= f.mu.lo
}

// offerBase makes a seat map read upstream the feed's base if it is newer
// than the base and the ring holds every change after it. A reset is
// stored as a plain seat map: the base is a new watcher's first event.
func (f *feed) offerBase(e *ledgerpb.WatchEvent) {
	f.mu.Lock()
	b := f.relay.base
	fresh := f.mu.err == nil && e.Revision >= f.mu.lo && (b == nil || e.Revision > b.Event.Revision)
	f.mu.Unlock()
	if !fresh {
		return
	}
	if e.Reset_ {
		e = proto.CloneOf(e)
		e.Reset_ = false
	}
	fr := f.encode([]*ledgerpb.WatchEvent{e})[0]
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.relay.base; b == nil || e.Revision > b.Event.Revision {
		f.relay.base = fr
	}
}

// ownUpstream serves a watcher of a relay feed that the ring cannot serve
// from pos (from 0: its seat map) through an upstream watch of its own, as
// every relayed watch was served before relay feeds, until the watcher
// reaches the ring; it returns the watcher's position then. opened tells
// whether the watcher's stream is open already.
//
// The upstream may send nothing for long: a resume from past the last
// change the feed has seen, or from a quiet show's last change when the
// upstream did not name it (a node of an older version), waits for the
// show's next change. Its events come through a goroutine of their own
// meanwhile, so that the watcher gets its keepalives (Idle) as on any idle
// stream, and a client that left is found out by the failed write.
func (f *feed) ownUpstream(ctx context.Context, h *Hub, sink SharedSink, pos uint64, opened bool) (uint64, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel() // closes the upstream once the watcher reaches the ring
	stream, servedBy, err := h.openUpstream(sctx, f.relay.group, f.show, pos)
	if err != nil {
		return pos, err
	}
	if !opened {
		if err := sink.OpenShared(servedBy); err != nil {
			return pos, err
		}
	}
	// Buffered: what arrives while the watcher writes goes out in its next
	// write, all of it, as a catch-up from the ring or the log does.
	events, errc := make(chan *ledgerpb.WatchEvent, watchReadMax), make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc <- receive(sctx, stream, events)
	}()
	defer func() { cancel(); <-done }()
	var tick <-chan time.Time
	var timer *time.Timer
	idle := sink.IdleInterval()
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		tick = timer.C
	}
	// The upstream reached pos before it opened: the ring serves the rest.
	for pos == 0 || !f.covers(pos) {
		select {
		case e := <-events:
			batch := drain(events, []*ledgerpb.WatchEvent{e})
			for _, e := range batch {
				if e.Snapshot != nil {
					f.offerBase(e)
				}
			}
			if err := sink.SendFrames(framesOf(batch, sink.Format())); err != nil {
				return pos, err
			}
			pos = batch[len(batch)-1].Revision
		case err := <-errc:
			return pos, remoteWatchErr(ctx, servedBy, err)
		case <-tick:
			if err := sink.Idle(); err != nil {
				return pos, err
			}
		}
		if timer != nil {
			timer.Reset(idle) // an event or a keepalive went out
		}
	}
	return pos, nil
}

// followRelay is a relay feed's loop: it opens the upstream watch from
// a seat map, then publishes and fans out its events, as follow does a
// replica's changes.
func (f *feed) followRelay(ctx context.Context, h *Hub) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, servedBy, err := h.openUpstream(ctx, f.relay.group, f.show, 0)
	if err != nil {
		return err
	}
	first, err := stream.Recv()
	if err != nil {
		return remoteWatchErr(ctx, servedBy, err)
	}
	f.openRelay(first, servedBy)
	f.lastWrite = time.Now() // keepalives are due an idle interval from now
	events := make(chan *ledgerpb.WatchEvent, watchReadMax)
	errc := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc <- receive(ctx, stream, events)
	}()
	defer func() { cancel(); <-done }()
	pos := first.Revision
	for {
		batch, err := f.nextEvents(ctx, events, errc)
		if err != nil {
			return remoteWatchErr(ctx, servedBy, err)
		}
		if err := f.pace(ctx, func() int { return seatChanges(batch) }); err != nil {
			return err
		}
		batch = drain(events, batch)
		for _, e := range batch {
			if e.Reset_ {
				f.offerBase(e)
			}
		}
		next := batch[len(batch)-1].Revision
		frames := f.encode(batch)
		f.fanOut(f.publish(frames, next), frames, pos, next)
		pos = next
	}
}

// openRelay records the upstream's first event, a seat map, as the base
// and the ring's position, and lets the watchers waiting for it in. The
// ring starts at the show's last change before the seat map when the
// upstream names it: the ring holds every change after that too, none.
func (f *feed) openRelay(first *ledgerpb.WatchEvent, servedBy string) {
	f.mu.Lock()
	f.mu.lo, f.mu.pos = first.Revision, first.Revision
	if last := first.LastChangeRevision; last > 0 && last <= first.Revision {
		f.mu.lo = last
	}
	f.relay.servedBy = servedBy
	f.mu.Unlock()
	f.offerBase(first)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relay.isOpen = true
	close(f.relay.opened)
}

// nextEvents waits for the upstream's next event, writing keepalives to
// the direct watchers when they are due.
func (f *feed) nextEvents(ctx context.Context, events <-chan *ledgerpb.WatchEvent, errc <-chan error) ([]*ledgerpb.WatchEvent, error) {
	for {
		wctx, cancel := context.WithTimeout(ctx, f.keepalive())
		select {
		case e := <-events:
			cancel()
			return []*ledgerpb.WatchEvent{e}, nil
		case err := <-errc:
			cancel()
			return nil, err
		case <-wctx.Done():
			cancel()
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
}

// drain adds to batch what else the upstream sent, up to watchReadMax.
func drain(events <-chan *ledgerpb.WatchEvent, batch []*ledgerpb.WatchEvent) []*ledgerpb.WatchEvent {
	for len(batch) < watchReadMax {
		select {
		case e := <-events:
			batch = append(batch, e)
		default:
			return batch
		}
	}
	return batch
}

// receive passes the upstream's events to events until it fails or ctx
// ends.
func receive(ctx context.Context, stream grpc.ServerStreamingClient[ledgerpb.WatchEvent], events chan<- *ledgerpb.WatchEvent) error {
	for {
		e, err := stream.Recv()
		if err != nil {
			return err
		}
		select {
		case events <- e:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// openUpstream opens the watch of show from a node that hosts group: the
// leader this node last heard of first, then every other node in turn. A
// node that cannot serve it (no replica, behind, too many watchers)
// answers before the stream opens, and the next one is asked.
func (h *Hub) openUpstream(ctx context.Context, group uint32, show string, from uint64) (grpc.ServerStreamingClient[ledgerpb.WatchEvent], string, error) {
	var last error
	for _, target := range h.watchTargets(group) {
		stream, servedBy, err := h.openAt(ctx, target, show, from)
		if err == nil || ctx.Err() != nil || !errors.Is(err, raftnode.ErrUnavailable) {
			return stream, servedBy, err
		}
		last = err
	}
	return nil, "", fmt.Errorf("%w: no node serves a watch of group %d now (last: %v)", raftnode.ErrUnavailable, group, last)
}

// openAt opens the watch on target and returns it once target started the
// stream, with the node that serves it.
func (h *Hub) openAt(ctx context.Context, target, show string, from uint64) (grpc.ServerStreamingClient[ledgerpb.WatchEvent], string, error) {
	conn, err := h.router.PeerConn(target)
	if err != nil {
		return nil, "", err
	}
	sctx := metadata.AppendToOutgoingContext(ctx, forwardedKey, h.node.ID())
	stream, err := ledgerpb.NewBookingClient(conn).Watch(sctx, &ledgerpb.WatchRequest{ShowId: show, FromRevision: from})
	if err != nil {
		return nil, "", remoteWatchErr(ctx, target, err)
	}
	md, err := stream.Header()
	if err == nil && md == nil {
		// The stream ended before it opened: its status says why.
		_, err = stream.Recv()
	}
	if err != nil {
		return nil, "", remoteWatchErr(ctx, target, err)
	}
	servedBy := target
	if v := md.Get(servedByKey); len(v) > 0 {
		servedBy = v[0]
	}
	return stream, servedBy, nil
}
