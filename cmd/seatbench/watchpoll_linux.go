//go:build linux

package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// On Linux a few poll loops read every watcher's socket, instead of a
// goroutine each: a goroutine per watcher was woken, read, read again to
// find the socket empty and parked, for every fan-out round, and the
// scheduler's part and the extra reads took the cores the nodes need (a
// stampede with 9,000 watchers counts the load tool's reading against the
// ledger). A loop reads each ready socket once (level-triggered: what a
// read leaves is reported again), parses it at once (sseParser), and when
// it has read every ready socket it sleeps a moment, so that a round's
// bytes gather in the sockets rather than wake it socket by socket. That
// moment (watchPollGather) is added to the delivery it measures, never
// taken from it. The watcher's goroutine waits for its connection to end,
// then redials as before.

const (
	// watchPollLoops is the number of poll loops of one process: the
	// machine's two cores.
	watchPollLoops = 2
	// watchPollEvents bounds the ready sockets one wait returns.
	watchPollEvents = 256
	// watchPollReadBytes is a loop's read buffer: a round's batch for
	// one watcher in one read.
	watchPollReadBytes = 64 << 10
	// watchPollGather is how long a loop that read every ready socket
	// lets more become ready before it looks again.
	watchPollGather = time.Millisecond
	// watchPollStopCheck is how often a waiting loop looks whether its
	// watchers are stopped.
	watchPollStopCheck = 100 * time.Millisecond
)

// pollSet is a process's poll loops.
type pollSet struct {
	loops []*pollLoop
	mu    sync.Mutex // guards next
	next  int
}

// pollLoop reads the sockets it was given until its context ends.
type pollLoop struct {
	epfd int
	mu   struct {
		sync.Mutex
		conns   map[int]*polled // by descriptor
		stopped bool
	}
}

// polled is one watcher's connection in a loop, which owns its
// descriptor and parser.
type polled struct {
	fd     int
	c      *sseConn
	p      sseParser
	now    int64 // the arrival of the piece being parsed (Unix ns)
	event  func(kind string, id uint64)
	closed bool
	done   chan error // the connection ended (buffered 1)
}

// newPollSet starts a process's poll loops; they stop when ctx ends, and
// wg waits for them.
func newPollSet(ctx context.Context, wg *sync.WaitGroup) (*pollSet, error) {
	s := &pollSet{}
	for range watchPollLoops {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			for _, l := range s.loops {
				syscall.Close(l.epfd)
			}
			return nil, fmt.Errorf("epoll: %w", err)
		}
		l := &pollLoop{epfd: epfd}
		l.mu.conns = map[int]*polled{}
		s.loops = append(s.loops, l)
	}
	for _, l := range s.loops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.run(ctx)
		}()
	}
	return s, nil
}

// readEvents reads c's events from conn (after the bytes br holds,
// buffered) in a poll loop, and returns when the connection ends.
func (wl *watchers) readEvents(c *sseConn, conn net.Conn, br *bufio.Reader, buffered []byte, opened chan<- error) error {
	if wl.poll == nil {
		return wl.readStream(c, br, opened)
	}
	fd, err := dupSocket(conn)
	if err != nil {
		return wl.readStream(c, br, opened)
	}
	conn.Close() // the duplicate keeps the connection: the loop's now
	pc := &polled{fd: fd, c: c, done: make(chan error, 1)}
	pc.event = func(kind string, id uint64) { wl.event(c, kind, id, pc.now, opened) }
	pc.now = time.Now().UnixNano()
	pc.p.feed(buffered, pc.event)
	if err := wl.poll.add(pc); err != nil {
		syscall.Close(fd)
		return err
	}
	return <-pc.done
}

// dupSocket returns a descriptor of conn's socket of the caller's own
// (close-on-exec, non-blocking like conn's).
func dupSocket(conn net.Conn) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.ErrUnsupported
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd := -1
	var errno syscall.Errno
	if err := raw.Control(func(fd uintptr) {
		r, _, e := syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_DUPFD_CLOEXEC, 0)
		nfd, errno = int(r), e
	}); err != nil {
		return -1, err
	}
	if errno != 0 {
		return -1, errno
	}
	if err := syscall.SetNonblock(nfd, true); err != nil {
		syscall.Close(nfd)
		return -1, err
	}
	return nfd, nil
}

// add gives pc to the next loop.
func (s *pollSet) add(pc *polled) error {
	s.mu.Lock()
	l := s.loops[s.next%len(s.loops)]
	s.next++
	s.mu.Unlock()
	return l.add(pc)
}

func (l *pollLoop) add(pc *polled) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.stopped {
		return context.Canceled
	}
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(pc.fd)}
	if err := syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_ADD, pc.fd, &ev); err != nil {
		return fmt.Errorf("epoll add: %w", err)
	}
	l.mu.conns[pc.fd] = pc
	return nil
}

// run reads the ready sockets until ctx ends, then closes those left.
func (l *pollLoop) run(ctx context.Context) {
	events := make([]syscall.EpollEvent, watchPollEvents)
	ready := make([]*polled, 0, watchPollEvents)
	buf := make([]byte, watchPollReadBytes)
	err := ctx.Err()
	for err == nil {
		n, werr := syscall.EpollWait(l.epfd, events, int(watchPollStopCheck.Milliseconds()))
		if werr != nil && !errors.Is(werr, syscall.EINTR) {
			err = fmt.Errorf("epoll wait: %w", werr)
			break
		}
		l.mu.Lock()
		ready = ready[:0]
		for _, ev := range events[:max(n, 0)] {
			if pc := l.mu.conns[int(ev.Fd)]; pc != nil {
				ready = append(ready, pc)
			}
		}
		l.mu.Unlock()
		for _, pc := range ready {
			l.read(pc, buf)
		}
		clear(ready)
		if n < len(events) {
			// Drained: let the next sockets' bytes gather rather than be
			// woken for each.
			time.Sleep(watchPollGather)
		}
		err = ctx.Err()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.stopped = true
	for _, pc := range l.mu.conns {
		l.closeLocked(pc, err)
	}
	syscall.Close(l.epfd)
}

// read reads what pc's socket holds, once, and parses it; an end of the
// stream or a failed read ends the connection.
func (l *pollLoop) read(pc *polled, buf []byte) {
	if pc.closed {
		return // ended by an earlier event of this wait
	}
	n, err := syscall.Read(pc.fd, buf)
	if n > 0 {
		pc.now = time.Now().UnixNano()
		pc.p.feed(buf[:n], pc.event)
		return
	}
	if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
		return
	}
	if err == nil {
		err = errors.New("event stream closed by the node")
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLocked(pc, err)
}

func (l *pollLoop) closeLocked(pc *polled, err error) {
	if pc.closed {
		return
	}
	pc.closed = true
	delete(l.mu.conns, pc.fd)
	syscall.EpollCtl(l.epfd, syscall.EPOLL_CTL_DEL, pc.fd, nil)
	syscall.Close(pc.fd)
	pc.done <- err
}
