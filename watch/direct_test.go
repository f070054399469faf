// This file proves direct watchers (direct.go) on a real one-voter group:
// the feed writes each change to every attached watcher's sink itself;
// a sink whose buffer fills takes part of a batch, and its watcher's own
// goroutine writes the rest and catches up, so every watcher gets every
// change exactly once, in order, whether or not it fell behind, and one
// that stops taking bytes delays neither the feed nor the others.
package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// lineFormat encodes an event as its revision and a newline.
type lineFormat struct{}

func (lineFormat) EncodeWatchEvent(e *ledgerpb.WatchEvent) ([]byte, error) {
	return []byte(fmt.Sprintf("%d\n", e.Revision)), nil
}

// directSink is a DirectSink over a byte buffer. While full is set,
// TryWrite takes at most one byte (a socket whose buffer filled) and Write
// waits until it is cleared (a client that stopped reading).
type directSink struct {
	wake chan struct{}
	idle time.Duration // IdleInterval

	mu struct {
		sync.Mutex
		buf   bytes.Buffer
		full  bool
		open  *sync.Cond
		tries int // TryWrite calls
	}
}

func newDirectSink() *directSink {
	s := &directSink{wake: make(chan struct{}, 1), idle: time.Hour}
	s.mu.open = sync.NewCond(&s.mu)
	return s
}

func (s *directSink) Open(string) error           { return nil }
func (s *directSink) OpenShared(string) error     { return nil }
func (s *directSink) Format() Format              { return lineFormat{} }
func (s *directSink) IdleInterval() time.Duration { return s.idle }
func (s *directSink) Idle() error                 { return s.Write(s.Keepalive()) } // as an SSE sink's
func (s *directSink) Direct() bool                { return true }
func (s *directSink) Keepalive() []byte           { return []byte("k\n") }
func (s *directSink) Send(e *ledgerpb.WatchEvent) error {
	b, _ := lineFormat{}.EncodeWatchEvent(e)
	return s.Write(b)
}

func (s *directSink) SendFrames(frames []*Frame) error {
	for _, f := range frames {
		b, err := f.Encoded(lineFormat{})
		if err != nil {
			return err
		}
		if err := s.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *directSink) TryWrite(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.tries++
	if s.mu.full {
		b = b[:min(len(b), 1)]
	}
	s.mu.buf.Write(b)
	return len(b), nil
}

func (s *directSink) Write(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.mu.full {
		s.mu.open.Wait()
	}
	s.mu.buf.Write(b)
	return nil
}

func (s *directSink) Wait() error {
	<-s.wake
	return nil
}

func (s *directSink) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *directSink) setFull(full bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.full = full
	s.mu.open.Broadcast()
}

// keepalives counts the keepalives the sink got.
func (s *directSink) keepalives() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.mu.buf.String(), "k\n")
}

// revs is the revisions the sink got, keepalives left out.
func (s *directSink) revs() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []uint64
	for _, line := range strings.Split(strings.TrimSpace(s.mu.buf.String()), "\n") {
		if n, err := strconv.ParseUint(line, 10, 64); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// waitRevs waits until the sink got last.
func (s *directSink) waitRevs(t *testing.T, what string, last uint64) []uint64 {
	t.Helper()
	for deadline := time.Now().Add(fwdWait); ; time.Sleep(time.Millisecond) {
		got := s.revs()
		if len(got) > 0 && got[len(got)-1] >= last {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: got %v after %v, want up to %d", what, got, fwdWait, last)
		}
	}
}

func TestDirectWatchersGetEveryChangeOnceFullOrNot(t *testing.T) {
	n := startTestNode(t)
	hold := feedShow(t, n, "d1")
	live, slow := newDirectSink(), newDirectSink()
	watchInto(t, n.hub, "d1", live)
	watchInto(t, n.hub, "d1", slow)
	live.waitRevs(t, "live watcher's seat map", 1)
	slow.waitRevs(t, "slow watcher's seat map", 1)
	var revs []uint64
	for i := range 10 {
		revs = append(revs, hold(i+1))
	}
	live.waitRevs(t, "live watcher", revs[len(revs)-1])
	slow.waitRevs(t, "slow watcher", revs[len(revs)-1])
	slow.setFull(true) // its buffer fills: part of the next batch fits
	t.Cleanup(func() { slow.setFull(false) })
	for i := range 30 {
		revs = append(revs, hold(i+11)) // each within fwdWait, or Fatal
	}
	live.waitRevs(t, "live watcher while the other is full", revs[len(revs)-1])
	slow.setFull(false)
	slow.waitRevs(t, "slow watcher after it drains", revs[len(revs)-1])
	for name, s := range map[string]*directSink{"live": live, "slow": slow} {
		if got := s.revs()[1:]; fmt.Sprint(got) != fmt.Sprint(revs) {
			t.Errorf("%s watcher got %v, want %v: every change once, in order", name, got, revs)
		}
	}
	live.mu.Lock()
	tries := live.mu.tries
	live.mu.Unlock()
	if tries == 0 {
		t.Errorf("live watcher: no write from the feed, want the feed to write to it")
	}
}

func TestDirectWatcherKeepalivesWhileOtherShowsChange(t *testing.T) {
	n := startTestNode(t)
	feedShow(t, n, "d2")
	other := feedShow(t, n, "d3") // the same group: its entries wake d2's feed
	s := newDirectSink()
	s.idle = 100 * time.Millisecond
	watchInto(t, n.hub, "d2", s)
	s.waitRevs(t, "seat map", 1)
	start := time.Now()
	for i := 0; s.keepalives() < 2; i++ {
		if i == 190 { // the show's seats
			t.Fatalf("%d keepalives in %v of changes to another show, want 2 or more", s.keepalives(), time.Since(start))
		}
		other(i + 1)
		// Paced well under idle, so the feed never waits that long, and
		// the 190 holds span several idles however fast each one is.
		time.Sleep(5 * time.Millisecond)
	}
}

// TestDirectWatcherAheadOfItsFeedWaits: a direct watcher whose position is
// past its feed's (a relayed watcher that caught up through an upstream of
// its own can be) waits for the feed instead of trying to attach in a
// loop, and attaches once the feed reaches it, with no change missed.
func TestDirectWatcherAheadOfItsFeedWaits(t *testing.T) {
	n := startTestNode(t)
	hold := feedShow(t, n, "d4")
	s := newDirectSink()
	watchInto(t, n.hub, "d4", s)
	s.waitRevs(t, "seat map", 1)
	rev := hold(1)
	s.waitRevs(t, "first hold", rev)
	n.hub.feeds.mu.Lock()
	var f *feed
	for k, x := range n.hub.feeds.mu.feeds {
		if k.show == "d4" {
			f = x
		}
	}
	n.hub.feeds.mu.Unlock()
	if f == nil {
		t.Fatal("no feed of d4")
	}
	f.mu.Lock()
	at, misses0 := f.mu.pos, f.mu.attachMisses
	f.mu.Unlock()
	ahead := newDirectSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.serveDirect(ctx, n.hub, ahead, at+1) }()
	time.Sleep(200 * time.Millisecond)
	f.mu.Lock()
	misses := f.mu.attachMisses - misses0
	f.mu.Unlock()
	if misses > 40 { // about one per aheadPoll; a loop makes thousands
		t.Errorf("a watcher ahead of its feed tried to attach %d times in 200ms, want it to wait", misses)
	}
	hold(2) // takes the feed to the watcher's position, or past it
	next := hold(3)
	if next <= at+1 {
		t.Fatalf("hold at revision %d, not past the watcher's %d", next, at+1)
	}
	got := ahead.waitRevs(t, "the watcher that was ahead", next)
	if len(got) == 0 || got[0] <= at+1 {
		t.Errorf("the watcher that was at %d got %v, want only revisions after it", at+1, got)
	}
	cancel()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("serveDirect = %v", err)
	}
}
