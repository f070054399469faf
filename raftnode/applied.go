package raftnode

import (
	"context"
	"fmt"
	"sync"
)

// appliedSignal tells watchers that the FSM applied more entries, without
// polling and without a goroutine per watcher: a waiter takes the current
// channel, and the adapter closes it (and forgets it) after every apply, so
// every waiter wakes once and takes a fresh one. No channel is made while
// nobody waits, so an apply with no watchers costs a lock and a nil check.
type appliedSignal struct {
	mu struct {
		sync.Mutex
		ch     chan struct{} // nil while nobody waits
		closed bool          // the group stopped: waiters must not wait
	}
}

// wait returns a channel closed after the next apply, and whether the
// signal is closed for good.
func (s *appliedSignal) wait() (<-chan struct{}, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ch == nil {
		s.mu.ch = make(chan struct{})
		if s.mu.closed {
			close(s.mu.ch)
		}
	}
	return s.mu.ch, s.mu.closed
}

// publish wakes the current waiters; called after each apply or restore.
func (s *appliedSignal) publish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.ch != nil && !s.mu.closed {
		close(s.mu.ch)
		s.mu.ch = nil
	}
}

// close wakes every waiter for good: the group is stopping.
func (s *appliedSignal) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mu.closed {
		return
	}
	s.mu.closed = true
	if s.mu.ch != nil {
		close(s.mu.ch)
	}
}

// WaitApplied blocks until this replica's FSM has applied index, ctx ends
// (its error, wrapped) or the group stops (ErrUnavailable). A watcher calls
// it with the index after the last one it read; it wakes on every apply,
// with no polling.
func (g *Group) WaitApplied(ctx context.Context, index uint64) error {
	for {
		// The channel before the index: an apply between the two closes
		// the channel taken, so no wakeup is lost.
		ch, closed := g.applied.wait()
		if g.machine.Applied() >= index {
			return nil
		}
		if closed {
			return fmt.Errorf("%w: group %d stopped", ErrUnavailable, g.id)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("waiting for group %d to apply %d: %w", g.id, index, ctx.Err())
		}
	}
}
