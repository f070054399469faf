package watch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Live changes fan out once per node and show (DESIGN.md §5): a feed reads
// each change of its show from this node's replica once, encodes it once per
// wire format its watchers use, and keeps the latest frames in a ring. The
// feed writes each batch to the watchers that keep up itself (direct.go);
// any other watcher takes from the ring on its own goroutine everything it
// has not sent yet, in one write. The feed never waits for a watcher, so
// one that stops reading delays nobody; one that fell out of the ring
// reads what it missed from the change log, exactly as a client resuming
// from that revision would (the changes, or a reset seat map once they are
// pruned).

// feedFramesMax bounds a feed's ring: how many changes of a show a watcher
// may lag behind and still be served from memory. The ring holds up to
// twice as many between trims.
const feedFramesMax = 1024

// feedIdleCheckMax bounds how long a feed waits for a change before it
// looks whether its direct watchers are due a keepalive.
const feedIdleCheckMax = time.Second

// Format encodes watch events into one wire format. A feed encodes each
// change once per format its watchers use; formats are told apart by
// identity, so each wire format is one value.
type Format interface {
	EncodeWatchEvent(*ledgerpb.WatchEvent) ([]byte, error)
}

// Frame is one watch event and its encodings, shared by every local watcher
// of the show: read-only once published.
type Frame struct {
	Event *ledgerpb.WatchEvent
	enc   []frameEncoding
}

type frameEncoding struct {
	format Format
	b      []byte
}

// Encoded returns the frame in format: the shared bytes when the feed
// encoded it, otherwise encoded now (a frame read for one watcher alone, or
// published before the first watcher of that format joined).
func (f *Frame) Encoded(format Format) ([]byte, error) {
	for _, e := range f.enc {
		if e.format == format {
			return e.b, nil
		}
	}
	return format.EncodeWatchEvent(f.Event)
}

// SharedSink is a Sink that takes the shared frames of a watch served
// from this node's replica. Its watch runs on one goroutine, the caller's:
// frames, keepalives (Idle) and the end all happen there (a DirectSink's
// also come from the feed's goroutine, never at the same time).
type SharedSink interface {
	Sink
	// Format is the wire format of the sink's frames.
	Format() Format
	// OpenShared is Open for a watch served from this node's replica: the
	// sink's keepalives come from Idle, so it starts nothing of its own.
	OpenShared(servedBy string) error
	// SendFrames sends frames in order, in one write where it can.
	SendFrames([]*Frame) error
	// IdleInterval is how long a watch may send nothing before Idle is
	// called (0: never).
	IdleInterval() time.Duration
	// Idle is called after IdleInterval without a frame.
	Idle() error
}

// eventSink serves a plain Sink from a feed, one event at a time.
type eventSink struct{ Sink }

func (s eventSink) Format() Format                   { return nil }
func (s eventSink) OpenShared(servedBy string) error { return s.Open(servedBy) }
func (s eventSink) IdleInterval() time.Duration      { return 0 }
func (s eventSink) Idle() error                      { return nil }
func (s eventSink) SendFrames(frames []*Frame) error { return sendEach(s, frames) }
func sendEach(s Sink, frames []*Frame) (err error) {
	for _, f := range frames {
		if err = s.Send(f.Event); err != nil {
			return err
		}
	}
	return nil
}

// feed is one show's change stream on this node, shared by its watchers.
type feed struct {
	g     *raftnode.Group // the replica read; nil for a relay feed
	show  string
	relay *relayState        // a relay feed's upstream (relay.go); nil for a replica's
	stop  context.CancelFunc // ends run; called by feedSet once no watcher is left
	// framesMax bounds the ring (feedFramesMax).
	framesMax int
	// scratch holds the direct watchers of one fan-out, lastWrite is
	// when the feed last wrote to them, nextRound is the earliest time
	// of its next fan-out and rounds what sets it (direct.go); all the
	// feed goroutine's own.
	scratch   []*directWatcher
	lastWrite time.Time
	nextRound time.Time
	rounds    roundPace

	mu struct {
		sync.Mutex
		// lo and pos: the ring holds every change record of the show with
		// a revision in (lo, pos], in revision order. Elements of frames
		// are never overwritten, so a watcher may keep a sub-slice.
		lo, pos uint64
		frames  []*Frame
		formats []Format // the formats to encode new frames in
		// wake is closed when frames are added, the ring is cleared or
		// the feed fails, then replaced: a watcher takes it with the
		// frames it read, so no wakeup falls between the two.
		wake chan struct{}
		err  error // the feed stopped: its watchers end with err
		// direct: the watchers the feed writes to itself (direct.go),
		// each at pos; idle is the shortest keepalive interval any of
		// them asked for (0: none).
		direct []*directWatcher
		idle   time.Duration
		// attachMisses counts attaches refused because the watcher was
		// not at pos (tests: a watcher ahead of its feed must not spin).
		attachMisses int
	}
}

// feedKey names a feed: a show on one replica of its group (a group
// removed and added again is another replica), or, with no replica, the
// show's relay feed.
type feedKey struct {
	g    *raftnode.Group
	show string
}

// feedSet owns a hub's feeds: one per show with local watchers.
type feedSet struct {
	// framesMax is the ring's size (0: feedFramesMax); set before the
	// first watch.
	framesMax int
	wg        sync.WaitGroup // the feeds' run goroutines

	mu struct {
		sync.Mutex
		feeds    map[feedKey]*feed
		watchers map[*feed]int
		closed   bool
	}
}

// join returns the feed of show on g, started if needed, with format added.
func (s *feedSet) join(h *Hub, g *raftnode.Group, show string, format Format) (*feed, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return nil, fmt.Errorf("%w: the watch hub is closed", raftnode.ErrUnavailable)
	}
	if s.mu.feeds == nil {
		s.mu.feeds, s.mu.watchers = map[feedKey]*feed{}, map[*feed]int{}
	}
	k := feedKey{g, show}
	f := s.mu.feeds[k]
	if f == nil {
		ctx, cancel := context.WithCancel(context.Background())
		f = &feed{g: g, show: show, stop: cancel, framesMax: s.ringMax()}
		applied := g.Machine().Applied()
		f.mu.lo, f.mu.pos, f.mu.wake = applied, applied, make(chan struct{})
		s.mu.feeds[k] = f
		s.start(ctx, h, k, f)
	}
	s.mu.watchers[f]++
	f.addFormat(format)
	return f, nil
}

func (s *feedSet) ringMax() int { return cmp.Or(s.framesMax, feedFramesMax) }

// start runs a new feed f until ctx ends or it fails.
func (s *feedSet) start(ctx context.Context, h *Hub, k feedKey, f *feed) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f.run(ctx, h)
		s.forget(k, f)
	}()
}

// leave ends a watcher's use of f; the last one stops it.
func (s *feedSet) leave(f *feed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.watchers[f]--; s.mu.watchers[f] > 0 {
		return
	}
	delete(s.mu.watchers, f)
	s.forgetLocked(feedKey{f.g, f.show}, f)
	f.stop()
}

// forget drops a feed that stopped, unless it was replaced already.
func (s *feedSet) forget(k feedKey, f *feed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.forgetLocked(k, f)
}

func (s *feedSet) forgetLocked(k feedKey, f *feed) {
	if s.mu.feeds[k] == f {
		delete(s.mu.feeds, k)
	}
}

// close stops every feed (their watchers end with ErrUnavailable) and
// waits for them.
func (s *feedSet) close() {
	s.mu.Lock()
	s.mu.closed = true
	for _, f := range s.mu.feeds {
		f.stop()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

func (f *feed) addFormat(format Format) {
	if format == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, have := range f.mu.formats {
		if have == format {
			return
		}
	}
	f.mu.formats = append(f.mu.formats, format)
}

// run reads the show's changes until ctx ends or a read fails, then fails
// the feed so that its watchers end (and resume, at another node if need
// be).
func (f *feed) run(ctx context.Context, h *Hub) {
	follow := f.follow
	if f.relay != nil {
		follow = f.followRelay
	}
	err := follow(ctx, h)
	if ctx.Err() != nil {
		err = fmt.Errorf("%w: the watch feed of show %s stopped", raftnode.ErrUnavailable, f.show)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.err = err
	f.detachAllLocked(f.mu.pos, err)
	close(f.mu.wake)
	if f.relay != nil && !f.relay.isOpen {
		f.relay.isOpen = true
		close(f.relay.opened) // its waiting watchers end with err
	}
}

// follow is the feed's loop: as watchLocal's was, but once for all watchers.
func (f *feed) follow(ctx context.Context, h *Hub) error {
	m := f.g.Machine()
	f.mu.Lock()
	pos := f.mu.pos
	f.mu.Unlock()
	f.lastWrite = time.Now()
	for {
		// pos is the index up to which the log has been read: wait for
		// the next entry, whether or not it touches the show.
		if err := f.waitApplied(ctx, pos+1); err != nil {
			return err
		}
		// Most entries are other shows': skip them without a snapshot.
		// The index first (see fsm.Machine.ShowChangedAfter).
		applied := m.Applied()
		if !m.ShowChangedAfter(f.show, pos) {
			pos = applied
			f.advance(pos) // no watcher needs waking for it
			continue
		}
		if err := f.pace(ctx, func() int { return f.pending(pos) }); err != nil {
			return err
		}
		v, err := m.View()
		if err != nil {
			return err
		}
		events, next, err := h.changeEvents(v, f.show, pos)
		v.Close()
		switch {
		case errors.Is(err, fsm.ErrEventsPruned):
			// A snapshot from the leader skipped records: every watcher
			// still before next reads from the log and gets its reset.
			f.clear(next)
		case err != nil:
			return err
		default:
			frames := f.encode(events)
			f.fanOut(f.publish(frames, next), frames, pos, next)
		}
		pos = next
	}
}

// pending returns the seat changes of the show after pos (as many as one
// read takes), for pace.
func (f *feed) pending(pos uint64) (seats int) {
	v, err := f.g.Machine().View()
	if err != nil {
		return 0
	}
	defer v.Close()
	recs, err := v.SeatEvents(f.show, pos, watchReadMax)
	if err != nil {
		return 0 // the round reads the error
	}
	for _, r := range recs {
		seats += len(r.Changes)
	}
	return seats
}

// waitApplied waits until the group applied index, writing keepalives to
// the direct watchers when they are due, also while the group applies
// entries of other shows only.
func (f *feed) waitApplied(ctx context.Context, index uint64) error {
	for {
		wait := f.keepalive()
		wctx, cancel := context.WithTimeout(ctx, wait)
		err := f.g.WaitApplied(wctx, index)
		cancel()
		if err == nil || ctx.Err() != nil || wctx.Err() == nil {
			return err
		}
	}
}

// encode makes the frames of events in every format watchers use.
func (f *feed) encode(events []*ledgerpb.WatchEvent) []*Frame {
	f.mu.Lock()
	formats := f.mu.formats // only appended to: this prefix stays as is
	f.mu.Unlock()
	frames := make([]*Frame, len(events))
	for i, e := range events {
		fr := &Frame{Event: e, enc: make([]frameEncoding, 0, len(formats))}
		for _, format := range formats {
			// A format that fails leaves the frame to be encoded (and
			// fail) on each watcher's goroutine, which ends that watch.
			if b, err := format.EncodeWatchEvent(e); err == nil {
				fr.enc = append(fr.enc, frameEncoding{format, b})
			}
		}
		frames[i] = fr
	}
	return frames
}

// advance moves pos without frames.
func (f *feed) advance(pos uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.pos = pos
}

// publish adds frames (after the ring's) up to pos and wakes the watchers;
// it returns the direct watchers to write the frames to (in f.scratch).
func (f *feed) publish(frames []*Frame, pos uint64) []*directWatcher {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.frames = append(f.mu.frames, frames...)
	if n := len(f.mu.frames); n > 2*f.framesMax {
		// A new array: watchers may still hold sub-slices of the old.
		f.mu.lo = f.mu.frames[n-f.framesMax-1].Event.Revision
		f.mu.frames = append([]*Frame(nil), f.mu.frames[n-f.framesMax:]...)
	}
	f.mu.pos = pos
	f.wakeLocked()
	clear(f.scratch)
	f.scratch = append(f.scratch[:0], f.mu.direct...)
	return f.scratch
}

// clear empties the ring: the log between lo and pos may have gaps. The
// direct watchers read what they missed from the log, as the others do.
func (f *feed) clear(pos uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detachAllLocked(f.mu.pos, nil)
	f.mu.frames, f.mu.lo, f.mu.pos = nil, pos, pos
	f.wakeLocked()
}

func (f *feed) wakeLocked() {
	close(f.mu.wake)
	f.mu.wake = make(chan struct{})
}

// after returns the frames after pos and the index they reach; behind
// reports that pos fell out of the ring (the watcher reads from the log).
func (f *feed) after(pos uint64) (frames []*Frame, next uint64, wake <-chan struct{}, behind bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.err != nil {
		return nil, 0, nil, false, f.mu.err
	}
	if pos < f.mu.lo {
		return nil, 0, nil, true, nil
	}
	all := f.mu.frames
	i := sort.Search(len(all), func(i int) bool { return all[i].Event.Revision > pos })
	return all[i:len(all):len(all)], max(pos, f.mu.pos), f.mu.wake, false, nil
}

// serve sends a watcher at pos everything the feed reads after it, on the
// caller's goroutine, until ctx ends or a send or the feed fails.
func (f *feed) serve(ctx context.Context, h *Hub, sink SharedSink, pos uint64) error {
	if d, ok := sink.(DirectSink); ok && d.Direct() {
		return f.serveDirect(ctx, h, d, pos)
	}
	var tick <-chan time.Time
	idle := sink.IdleInterval()
	var timer *time.Timer
	if idle > 0 {
		timer = time.NewTimer(idle)
		defer timer.Stop()
		tick = timer.C
	}
	for {
		next, wake, sent, behind, err := f.sendAfter(ctx, h, sink, pos)
		if err != nil {
			return err
		}
		pos = next
		if behind {
			continue
		}
		if sent && timer != nil {
			timer.Reset(idle)
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		case <-tick:
			if err := sink.Idle(); err != nil {
				return err
			}
			timer.Reset(idle)
		}
	}
}

// sendAfter sends sink what the feed has after pos: from the ring, or, when
// pos fell out of it (behind), from the log as a resume does (a relay
// feed's watcher: from an upstream of its own until it reaches the ring).
// It returns the position reached, whether it sent anything, and, from the
// ring, the channel that wakes a watcher waiting for more.
func (f *feed) sendAfter(ctx context.Context, h *Hub, sink SharedSink, pos uint64) (next uint64, wake <-chan struct{}, sent, behind bool, err error) {
	frames, next, wake, behind, err := f.after(pos)
	if err != nil {
		return pos, nil, false, false, err
	}
	if behind && f.relay != nil {
		next, err = f.ownUpstream(ctx, h, sink, pos, true)
		return next, nil, err == nil, true, err
	}
	if behind {
		if frames, next, err = f.readBehind(h, pos, sink.Format()); err != nil {
			return pos, nil, false, true, err
		}
	}
	if len(frames) == 0 {
		return next, wake, false, behind, nil
	}
	if err := sink.SendFrames(frames); err != nil {
		return pos, nil, false, behind, err
	}
	return next, wake, true, behind, nil
}

// readBehind reads the changes after pos from the log for a watcher that
// fell out of the ring, as frames in format (deep: off its stack).
func (f *feed) readBehind(h *Hub, pos uint64, format Format) (frames []*Frame, next uint64, err error) {
	deep(func() {
		var events []*ledgerpb.WatchEvent
		if events, next, err = h.readChanges(f.g, f.show, pos); err == nil {
			frames = framesOf(events, format)
		}
	})
	return frames, next, err
}

// framesOf wraps events read for one watcher (not shared), encoded in
// format if it is not nil. A failed encoding is left for the watcher's
// sink to fail on.
func framesOf(events []*ledgerpb.WatchEvent, format Format) []*Frame {
	frames := make([]*Frame, len(events))
	for i, e := range events {
		frames[i] = &Frame{Event: e}
		if format == nil {
			continue
		}
		if b, err := format.EncodeWatchEvent(e); err == nil {
			frames[i].enc = []frameEncoding{{format, b}}
		}
	}
	return frames
}
