// Package netproxy is the harness's fault-injecting TCP proxy. Every link
// between two seatd nodes (one per direction and port) and between the
// clients and each node goes through a Link, so a nemesis can cut it (a
// partition), slow it down, or make it lose "packets".
//
// TCP cannot lose bytes, so loss is emulated the way a lossy network looks to
// a TCP endpoint: a lost segment stalls the stream for a retransmission
// timeout. A cut link blackholes: live connections are dropped and new ones
// are accepted but nothing crosses them until the link heals (like a dropped
// route, not like a refused port, so clients see timeouts, not fast errors).
package netproxy

import (
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"time"
)

// Limits.
const (
	// chunkBytesMax is the most one read forwards at a time.
	chunkBytesMax = 32 << 10
	// retransmitStall is how long a lost segment stalls its stream.
	retransmitStall = 200 * time.Millisecond
	// dialTimeout bounds connecting to the target.
	dialTimeout = 2 * time.Second
)

// Link forwards connections from its listener to one target.
type Link struct {
	Name string
	ln   net.Listener

	mu struct {
		sync.Mutex
		target string // "" until known: connections are then dropped
		cut    bool
		delay  time.Duration // added to every chunk
		jitter time.Duration // uniform extra delay in [0, jitter)
		loss   float64       // probability a chunk stalls for retransmitStall
		rng    *rand.Rand
		conns  map[net.Conn]struct{} // accepted and target conns, to drop on cut
		closed bool
	}
	wg sync.WaitGroup
}

// Listen opens a link on a fresh loopback port forwarding to target (which
// may be set later with SetTarget). seed makes its loss and jitter
// reproducible.
func Listen(name, target string, seed uint64) (*Link, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Link{Name: name, ln: ln}
	l.mu.target = target
	l.mu.rng = rand.New(rand.NewPCG(seed, 0x5eed))
	l.mu.conns = map[net.Conn]struct{}{}
	l.wg.Add(1)
	go l.accept()
	return l, nil
}

// SetTarget sets where the link forwards new connections.
func (l *Link) SetTarget(addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.target = addr
}

// Addr is where to dial the link.
func (l *Link) Addr() string { return l.ln.Addr().String() }

// Cut partitions the link: it drops live connections and blackholes new ones.
func (l *Link) Cut() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.cut = true
	l.dropLocked()
}

// Heal ends a cut. Blackholed connections are dropped so that their
// owners redial.
func (l *Link) Heal() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cut {
		l.mu.cut = false
		l.dropLocked()
	}
}

// IsCut reports whether the link is cut.
func (l *Link) IsCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.mu.cut
}

// SetDelay adds delay plus up to jitter to every chunk.
func (l *Link) SetDelay(delay, jitter time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.delay, l.mu.jitter = delay, jitter
}

// SetLoss makes each chunk stall for a retransmission with probability p.
func (l *Link) SetLoss(p float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.mu.loss = p
}

// Close stops the link and drops its connections.
func (l *Link) Close() error {
	l.mu.Lock()
	l.mu.closed = true
	l.dropLocked()
	l.mu.Unlock()
	err := l.ln.Close()
	l.wg.Wait()
	return err
}

func (l *Link) dropLocked() {
	for c := range l.mu.conns {
		c.Close()
	}
	clear(l.mu.conns)
}

// track registers a connection to drop on cut; false if the link closed.
func (l *Link) track(c net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.closed {
		return false
	}
	l.mu.conns[c] = struct{}{}
	return true
}

func (l *Link) untrack(c net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.mu.conns, c)
}

func (l *Link) accept() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		if !l.track(c) {
			c.Close()
			return
		}
		l.wg.Add(1)
		go l.serve(c)
	}
}

// serve forwards one connection, or blackholes it while the link is cut.
func (l *Link) serve(c net.Conn) {
	defer l.wg.Done()
	defer l.untrack(c)
	defer c.Close()
	l.mu.Lock()
	cut, target := l.mu.cut, l.mu.target
	l.mu.Unlock()
	if cut {
		io.Copy(io.Discard, c) // until heal or close drops it
		return
	}
	if target == "" {
		return
	}
	t, err := net.DialTimeout("tcp", target, dialTimeout)
	if err != nil {
		return
	}
	if !l.track(t) {
		t.Close()
		return
	}
	defer l.untrack(t)
	defer t.Close()
	done := make(chan struct{}, 2)
	go func() { l.pump(t, c); done <- struct{}{} }()
	go func() { l.pump(c, t); done <- struct{}{} }()
	<-done
	// One side ended: end both, then wait for the other pump.
	c.Close()
	t.Close()
	<-done
}

// pump copies src to dst chunk by chunk, applying delay and loss in order.
func (l *Link) pump(dst, src net.Conn) {
	buf := make([]byte, chunkBytesMax)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if wait, ok := l.chunkWait(); !ok {
				return
			} else if wait > 0 {
				time.Sleep(wait)
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if tc, ok := dst.(*net.TCPConn); ok && errors.Is(err, io.EOF) {
				tc.CloseWrite()
			}
			return
		}
	}
}

// chunkWait is how long the next chunk waits; false if the link is cut.
func (l *Link) chunkWait() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mu.cut || l.mu.closed {
		return 0, false
	}
	wait := l.mu.delay
	if l.mu.jitter > 0 {
		wait += time.Duration(l.mu.rng.Int64N(int64(l.mu.jitter)))
	}
	if l.mu.loss > 0 && l.mu.rng.Float64() < l.mu.loss {
		wait += retransmitStall
	}
	return wait, true
}
