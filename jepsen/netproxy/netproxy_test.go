// This file proves the proxy's faults on real loopback TCP: bytes cross a
// healthy link, a cut drops live connections and blackholes new ones until
// heal, and delay slows every chunk.
package netproxy

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

// roundTrip sends a line and waits up to d for the echo.
func roundTrip(addr string, d time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, d)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(d))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err
}

func TestLinkCutHealDelay(t *testing.T) {
	l, err := Listen("test", echoServer(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := roundTrip(l.Addr(), 2*time.Second); err != nil {
		t.Fatalf("round trip over a healthy link: %v", err)
	}

	live, err := net.Dial("tcp", l.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	l.Cut()
	live.SetDeadline(time.Now().Add(2 * time.Second))
	live.Write([]byte("x\n"))
	if _, err := bufio.NewReader(live).ReadString('\n'); err == nil {
		t.Error("a live connection still echoed after Cut")
	}
	if err := roundTrip(l.Addr(), 300*time.Millisecond); err == nil {
		t.Error("a new connection echoed over a cut link, want a blackhole")
	}
	l.Heal()
	if err := roundTrip(l.Addr(), 2*time.Second); err != nil {
		t.Fatalf("round trip after Heal: %v", err)
	}

	l.SetDelay(150*time.Millisecond, 0)
	start := time.Now()
	if err := roundTrip(l.Addr(), 3*time.Second); err != nil {
		t.Fatalf("round trip with delay: %v", err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("round trip with 150ms delay each way took %v, want at least 300ms", took)
	}
}
