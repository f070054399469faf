package raftnode

// faultProxy: the TCP relays between a test cluster's nodes through which
// tests cut them apart, as a black hole (heartbeat_cut_test.go) or as a
// refusing peer (membership_drop_test.go).

import (
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// startProxiedCluster starts a test cluster whose nodes reach each other's
// raft ports only through faultProxies, one per ordered pair of nodes
// (from, to). Cleanups run last-in first-out: the proxies close before the
// nodes, or raft's own connections would wait out their 10 s timeouts.
func startProxiedCluster(t *testing.T) (*testCluster, map[[2]string]*faultProxy) {
	t.Helper()
	proxies := map[[2]string]*faultProxy{}
	tc := startTestCluster(t, func(c *Config) {
		peers := append([]Peer(nil), c.Peers...)
		for i, p := range peers {
			if p.ID == c.NodeID {
				continue
			}
			key := [2]string{c.NodeID, p.ID}
			if proxies[key] == nil {
				proxies[key] = startFaultProxy(t, p.RaftAddr)
			}
			peers[i].RaftDial = proxies[key].addr()
		}
		c.Peers = peers
	})
	t.Cleanup(func() {
		for _, p := range proxies {
			p.closeAll()
		}
	})
	return tc, proxies
}

// Modes of a faultProxy.
const (
	proxyOpen    int32 = iota // relays
	proxyHole                 // drops every byte, leaves connections open, dials nothing
	proxyRefused              // closes every connection, and new ones at once
)

// faultProxy relays TCP connections to target, or fails them as its mode
// says.
type faultProxy struct {
	ln     net.Listener
	target string
	mode   atomic.Int32
	wg     sync.WaitGroup
	mu     struct {
		sync.Mutex
		conns []net.Conn
	}
}

func startFaultProxy(t *testing.T, target string) *faultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: target}
	p.wg.Go(p.serve)
	t.Cleanup(func() {
		p.closeAll()
		p.wg.Wait()
	})
	return p
}

func (p *faultProxy) addr() string { return p.ln.Addr().String() }

// hole turns the proxy into a black hole.
func (p *faultProxy) hole() { p.mode.Store(proxyHole) }

// refuse closes every relayed connection and refuses new ones.
func (p *faultProxy) refuse() {
	p.mode.Store(proxyRefused)
	p.closeConns()
}

// heal relays again.
func (p *faultProxy) heal() { p.mode.Store(proxyOpen) }

// closeAll stops accepting and closes every connection.
func (p *faultProxy) closeAll() {
	p.ln.Close()
	p.closeConns()
}

func (p *faultProxy) closeConns() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.mu.conns {
		c.Close()
	}
	p.mu.conns = nil
}

func (p *faultProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return
		}
		var out net.Conn
		switch p.mode.Load() {
		case proxyRefused:
			in.Close()
			continue
		case proxyOpen:
			if out, err = net.Dial("tcp", p.target); err != nil {
				in.Close()
				continue
			}
		}
		p.mu.Lock()
		p.mu.conns = append(p.mu.conns, in)
		if out != nil {
			p.mu.conns = append(p.mu.conns, out)
		}
		p.mu.Unlock()
		p.wg.Go(func() { p.pump(out, in) })
		if out != nil {
			p.wg.Go(func() { p.pump(in, out) })
		}
	}
}

// pump copies src to dst (nil: nowhere) while open, and drops the bytes
// otherwise.
func (p *faultProxy) pump(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if err == nil && dst != nil && p.mode.Load() == proxyOpen {
			_, err = dst.Write(buf[:n])
		}
		if err != nil {
			src.Close()
			if dst != nil {
				dst.Close()
			}
			return
		}
	}
}
