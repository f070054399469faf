package raftnode

// The raft port against anyone who can reach it. Connections that send a
// valid cluster preamble and group header and then nothing are never
// handed to raft (whose transport gives each connection 512 KiB of
// buffers), are closed after the header timeout, and leave the node's heap
// and its groups alone; connections over the Mux's caps are closed at once,
// and the port still serves a peer afterwards.

import (
	"net"
	"runtime"
	"testing"
	"time"
)

const (
	// probeIdleConns is how many idle connections the probe opens: 150 MiB
	// of raft buffers if each reached raft.
	probeIdleConns = 300
	// probeHeapGrowthMax bounds the heap they may cost.
	probeHeapGrowthMax = 16 << 20
)

func TestMuxIdleConnectionsCostNoRaftBuffers(t *testing.T) {
	tc := startTestCluster(t, nil)
	leader, li := readyLeader(t, tc)
	target := tc.nodes[(li+1)%len(tc.nodes)]
	g, err := target.Group(0)
	if err != nil {
		t.Fatal(err)
	}
	hdr := append(encodeClusterPreamble(testClusterID), encodeHeader(g.id, g.incarnation)...)
	before := liveHeap()
	start := time.Now()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for range probeIdleConns {
		c, err := net.Dial("tcp", target.mux.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		if _, err := c.Write(hdr); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(200 * time.Millisecond)
	if grew := liveHeap() - before; grew > probeHeapGrowthMax {
		t.Errorf("%d idle raft connections grew the heap by %d MiB, want at most %d MiB", probeIdleConns, grew>>20, probeHeapGrowthMax>>20)
	}
	// The group keeps its leader and quorum meanwhile.
	if err := leader.raft.VerifyLeader().Error(); err != nil {
		t.Errorf("VerifyLeader with %d idle connections open = %v, want nil", probeIdleConns, err)
	}
	for i, c := range conns {
		c.SetReadDeadline(start.Add(headerTimeout + 5*time.Second))
		if _, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("idle connection %d: Read = %v after %v, want closed by the Mux after the header timeout (%v)",
				i, err, time.Since(start).Round(time.Millisecond), headerTimeout)
		}
	}
	if err := leader.raft.VerifyLeader().Error(); err != nil {
		t.Errorf("VerifyLeader after the probe = %v, want nil", err)
	}
}

func TestMuxCapsConnections(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := NewMux(ln, testClusterID, nil)
	m.headerWait, m.pendingMax, m.openMax = time.Second, 4, 6
	served := make(chan struct{})
	go func() { defer close(served); m.Serve() }()
	t.Cleanup(func() { m.Close(); <-served })
	l := mustLayer(t, m, 1)

	// Two live connections (handed to the layer), then silent ones: four
	// may wait for their header, the rest are over a cap.
	for range 2 {
		mustDial(t, l, m)
		acceptWithin(t, l)
	}
	var silent []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		silent = append(silent, c)
	}
	time.Sleep(300 * time.Millisecond) // well within the header timeout
	closedAtOnce := 0
	for _, c := range silent {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
			closedAtOnce++
		}
	}
	if closedAtOnce != 4 {
		t.Errorf("%d of 8 silent connections were closed at once, want 4 (4 may wait for their header)", closedAtOnce)
	}
	// Once the silent ones time out, a peer gets through again.
	time.Sleep(m.headerWait)
	c := mustDial(t, l, m)
	s := acceptWithin(t, l)
	exchange(t, c, s, "ping", "pong")
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// liveHeap returns the bytes of live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}
