package watch

import (
	"context"
	"runtime"
	"time"
)

// Direct watchers: a watcher that keeps up costs its feed one write per
// batch of changes and nothing else. The feed's goroutine writes each
// batch, encoded once, to the socket of every watcher attached to it,
// without waiting (DirectSink.TryWrite), so no watcher's goroutine wakes,
// takes a lock or sets a deadline for it. A socket whose buffer is full
// takes what fits; the watcher is then detached and its own goroutine
// writes the rest, waiting as long as its sink allows, and catches up
// from the ring (or the change log) as a shared watcher does, until it
// has nothing left to send and attaches again. So one that stops reading
// delays neither the feed nor the others.

// DirectSink is a SharedSink whose bytes the feed may write itself, from its
// own goroutine, while the watcher keeps up.
type DirectSink interface {
	SharedSink
	// Direct reports whether TryWrite and Write may be used: known once
	// OpenShared returned.
	Direct() bool
	// TryWrite writes a prefix of b without waiting: n < len(b) with a
	// nil error means the socket's buffer is full. An error ends the
	// watch. The feed never calls it concurrently with Write.
	TryWrite(b []byte) (n int, err error)
	// Write writes b, waiting at most as long as the sink allows a write
	// to take.
	Write(b []byte) error
	// Keepalive is what TryWrite sends to an idle stream.
	Keepalive() []byte
	// Wait parks the watcher's goroutine until Wake is called or the
	// client goes away (an error). It may return early, nil.
	Wait() error
	// Wake ends a Wait, now or, if none is under way, the next one.
	Wake()
}

// directWatcher is a DirectSink's watch, attached to its feed or not.
type directWatcher struct {
	sink   DirectSink
	format Format
	// kick is signalled (buffered 1) when the feed detaches the watcher.
	kick chan struct{}

	// Guarded by the feed's mu.
	attached bool
	index    int    // in the feed's mu.direct, while attached
	rest     []byte // what the feed could not write when it detached it
	pos      uint64 // the position after rest
	err      error  // a failed write: the watch ends with it
}

// attach makes the feed write to d from pos on, if pos is the feed's
// position; otherwise the watcher has frames to send first.
func (f *feed) attach(d *directWatcher, pos uint64) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mu.err != nil {
		return false, f.mu.err
	}
	if pos != f.mu.pos {
		f.mu.attachMisses++
		return false, nil
	}
	d.attached, d.index, d.rest, d.pos, d.err = true, len(f.mu.direct), nil, pos, nil
	f.mu.direct = append(f.mu.direct, d)
	if idle := d.sink.IdleInterval(); idle > 0 && (f.mu.idle == 0 || idle < f.mu.idle) {
		f.mu.idle = idle
	}
	return true, nil
}

// detachLocked takes d off the feed's list; kick tells its goroutine to
// write rest (if any) and go on from pos.
func (f *feed) detachLocked(d *directWatcher, rest []byte, pos uint64, err error, kick bool) {
	if !d.attached {
		return
	}
	last := f.mu.direct[len(f.mu.direct)-1]
	f.mu.direct[d.index], last.index = last, d.index
	f.mu.direct[len(f.mu.direct)-1] = nil
	f.mu.direct = f.mu.direct[:len(f.mu.direct)-1]
	d.attached, d.rest, d.pos, d.err = false, rest, pos, err
	if kick {
		select {
		case d.kick <- struct{}{}:
		default:
		}
		d.sink.Wake() // after the kick: a Wait it ends finds it
	}
}

// detachAllLocked detaches every direct watcher at pos, with err.
func (f *feed) detachAllLocked(pos uint64, err error) {
	for len(f.mu.direct) > 0 {
		f.detachLocked(f.mu.direct[len(f.mu.direct)-1], nil, pos, err, true)
	}
}

// takeDetached returns what the feed left d when it detached it.
func (f *feed) takeDetached(d *directWatcher) (rest []byte, pos uint64, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rest, pos, err = d.rest, d.pos, d.err
	d.rest = nil
	return rest, pos, err
}

// leaveDirect detaches d for good (its watch ended).
func (f *feed) leaveDirect(d *directWatcher) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detachLocked(d, nil, 0, nil, false)
}

// fanOut writes the frames just published, from position from up to pos,
// to the direct watchers that were attached when they were published (ds,
// the feed goroutine's). Each gets one write of the frames' bytes in its
// format, built once.
func (f *feed) fanOut(ds []*directWatcher, frames []*Frame, from, pos uint64) {
	if len(ds) == 0 {
		return
	}
	// The round's own CPU time sets the rest after it: its wall time
	// also counts waiting for a core on a busy machine.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start, wallStart := threadCPU(), time.Now()
	var formats []Format
	var batches [][]byte
	seats := 0
	for _, fr := range frames {
		seats += len(fr.Event.Changes)
	}
	for _, d := range ds {
		i := indexOf(formats, d.format)
		if i < 0 {
			b, err := batchOf(frames, d.format)
			if err != nil {
				// Its goroutine sends the frames, and fails on its own.
				f.mu.Lock()
				f.detachLocked(d, nil, from, nil, true)
				f.mu.Unlock()
				continue
			}
			formats, batches, i = append(formats, d.format), append(batches, b), len(formats)
		}
		f.tryWrite(d, batches[i], pos)
	}
	now := time.Now()
	f.lastWrite, f.nextRound = now, now.Add(f.rounds.rest(threadCPU()-start, wallStart, now, seats, len(frames)))
}

// keepalive writes each direct watcher its keepalive if the feed wrote
// nothing to them for their idle interval, and returns how long until the
// next is due (at most feedIdleCheckMax: a watcher may join that wants
// them sooner).
func (f *feed) keepalive() time.Duration {
	f.mu.Lock()
	idle, since := f.mu.idle, time.Since(f.lastWrite)
	if idle == 0 || since < idle {
		f.mu.Unlock()
		if idle == 0 {
			return feedIdleCheckMax
		}
		return min(idle-since, feedIdleCheckMax)
	}
	ds, pos := append(f.scratch[:0], f.mu.direct...), f.mu.pos
	f.mu.Unlock()
	f.scratch = ds
	for _, d := range ds {
		f.tryWrite(d, d.sink.Keepalive(), pos)
	}
	clear(ds)
	f.lastWrite = time.Now()
	return min(idle, feedIdleCheckMax)
}

// tryWrite writes b to d without waiting; a short write detaches d with
// the rest, a failed one with the error.
func (f *feed) tryWrite(d *directWatcher, b []byte, pos uint64) {
	n, err := d.sink.TryWrite(b)
	if err == nil && n == len(b) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var rest []byte
	if n < len(b) {
		rest = append([]byte(nil), b[max(n, 0):]...)
	}
	f.detachLocked(d, rest, pos, err, true)
}

// batchOf is frames in format, one after another.
func batchOf(frames []*Frame, format Format) ([]byte, error) {
	if len(frames) == 1 {
		return frames[0].Encoded(format)
	}
	var b []byte
	for _, fr := range frames {
		e, err := fr.Encoded(format)
		if err != nil {
			return nil, err
		}
		b = append(b, e...)
	}
	return b, nil
}

func indexOf(formats []Format, f Format) int {
	for i, have := range formats {
		if have == f {
			return i
		}
	}
	return -1
}

// serveDirect serves a direct watcher from pos: on the caller's goroutine
// it sends what the watcher lacks, then attaches it to the feed and waits
// until the feed detaches it (its socket's buffer was full, or a write
// failed) or the watch ends.
func (f *feed) serveDirect(ctx context.Context, h *Hub, sink DirectSink, pos uint64) error {
	d := &directWatcher{sink: sink, format: sink.Format(), kick: make(chan struct{}, 1)}
	defer f.leaveDirect(d)
	stop := context.AfterFunc(ctx, sink.Wake)
	defer stop()
	var poll *time.Timer
	defer func() {
		if poll != nil {
			poll.Stop()
		}
	}()
	for {
		next, wake, sent, behind, err := f.sendAfter(ctx, h, sink, pos)
		if err != nil {
			return err
		}
		pos = next
		if behind || sent {
			continue // more may have come meanwhile: attach only when caught up
		}
		if ok, err := f.attach(d, pos); err != nil || !ok {
			if err != nil {
				return err
			}
			// The feed moved on (its wake is closed: send that first), or
			// it is behind pos: a relayed watcher that caught up through
			// an upstream of its own can be ahead of the relay feed. Wait
			// for the feed to move, or poll, since it may reach pos
			// without a change of this show; never spin.
			if poll == nil {
				poll = time.NewTimer(aheadPoll)
			} else {
				poll.Reset(aheadPoll)
			}
			select {
			case <-wake:
			case <-poll.C:
			case <-ctx.Done():
				return ctx.Err()
			}
			continue
		}
		if err := waitKick(ctx, d); err != nil {
			return err
		}
		rest, at, err := f.takeDetached(d)
		if err != nil {
			return err
		}
		if len(rest) > 0 {
			if err := sink.Write(rest); err != nil {
				return err
			}
		}
		pos = at
	}
}

// aheadPoll is how often a direct watcher ahead of its feed looks again
// whether the feed reached it (serveDirect).
const aheadPoll = 20 * time.Millisecond

// waitKick parks an attached watcher's goroutine in its sink's Wait (a
// read of the connection, which also learns when the client leaves) until
// the feed detaches it or ctx ends.
func waitKick(ctx context.Context, d *directWatcher) error {
	for {
		select {
		case <-d.kick:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if err := d.sink.Wait(); err != nil {
			return err
		}
	}
}
