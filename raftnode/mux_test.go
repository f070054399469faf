// Tests in this file prove that one Mux listener carries many raft groups:
// connections reach the layer their header names, bad or silent clients are
// closed and counted without stalling the accept loop, a full accept queue
// waits instead of dropping, two real 3-node hashicorp/raft clusters
// replicate over three shared Muxes, and Close is idempotent. mux_tls_test.go
// proves the same over TLS.
package raftnode

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// muxTestWait bounds every wait in these tests so a bug fails the test
// instead of hanging it; it is not a speed target.
const muxTestWait = 10 * time.Second

// newTestMux starts a Mux on 127.0.0.1:0 whose header timeout is headerWait,
// and closes it (waiting for Serve) when the test ends.
func newTestMux(t *testing.T, headerWait time.Duration) *Mux {
	t.Helper()
	return serveTestMux(t, headerWait, nil)
}

// testClusterID is the cluster of the tests' Muxes and nodes.
var testClusterID = ClusterID{0x5e, 0xa7, 1}

// testHeader is what a layer of testClusterID's writes to reach group's
// replica of incarnation 0.
func testHeader(group uint32) []byte {
	return append(encodeClusterPreamble(testClusterID), encodeHeader(group, 0)...)
}

// serveTestMux is newTestMux with TLS when mt is not nil.
func serveTestMux(t *testing.T, headerWait time.Duration, mt *MuxTLS) *Mux {
	t.Helper()
	return serveClusterMux(t, headerWait, mt, testClusterID)
}

// serveClusterMux is serveTestMux for a Mux of cluster.
func serveClusterMux(t *testing.T, headerWait time.Duration, mt *MuxTLS, cluster ClusterID) *Mux {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen = %v, want nil", err)
	}
	m := NewMux(ln, cluster, nil)
	if mt != nil {
		if m, err = NewTLSMux(ln, cluster, nil, *mt); err != nil {
			t.Fatalf("NewTLSMux = %v, want nil", err)
		}
	}
	m.headerWait = headerWait
	served := make(chan struct{})
	go func() {
		defer close(served)
		m.Serve()
	}()
	t.Cleanup(func() {
		if err := m.Close(); err != nil {
			t.Errorf("Mux.Close = %v, want nil", err)
		}
		select {
		case <-served:
		case <-time.After(muxTestWait):
			t.Errorf("Serve did not return after Close")
		}
	})
	return m
}

func mustLayer(t *testing.T, m *Mux, group uint32) raft.StreamLayer {
	t.Helper()
	l, err := m.layer(group)
	if err != nil {
		t.Fatalf("layer(%d) = %v, want nil", group, err)
	}
	return l
}

// acceptWithin runs Accept in a goroutine so a missing connection fails the
// test; the goroutine ends when the layer closes at cleanup.
func acceptWithin(t *testing.T, l net.Listener) net.Conn {
	t.Helper()
	type result struct {
		conn net.Conn
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		conn, err := l.Accept()
		ch <- result{conn, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("Accept = %v, want a connection", r.err)
		}
		t.Cleanup(func() { _ = r.conn.Close() })
		expectRead(t, r.conn, testRPCStart)
		return r.conn
	case <-time.After(muxTestWait):
		t.Fatalf("Accept did not return within %v", muxTestWait)
		return nil
	}
}

// testRPCStart stands for the first byte of a raft RPC: the Mux hands a
// connection to its layer only once it arrives. mustDial writes it and
// acceptWithin reads it.
const testRPCStart = "R"

func mustDial(t *testing.T, l raft.StreamLayer, m *Mux) net.Conn {
	t.Helper()
	conn, err := l.Dial(raft.ServerAddress(m.Addr().String()), time.Second)
	if err != nil {
		t.Fatalf("Dial(%s) = %v, want nil", m.Addr(), err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	if _, err := io.WriteString(conn, testRPCStart); err != nil {
		t.Fatalf("Write(first RPC byte) = %v, want nil", err)
	}
	return conn
}

// exchange sends want from a to b and reply from b to a.
func exchange(t *testing.T, a, b net.Conn, want, reply string) {
	t.Helper()
	if _, err := a.Write([]byte(want)); err != nil {
		t.Fatalf("Write(%q) = %v, want nil", want, err)
	}
	expectRead(t, b, want)
	if _, err := b.Write([]byte(reply)); err != nil {
		t.Fatalf("Write(%q) = %v, want nil", reply, err)
	}
	expectRead(t, a, reply)
}

func expectRead(t *testing.T, conn net.Conn, want string) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(muxTestWait))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatalf("Read = %v, want %q", err, want)
	}
	if string(got) != want {
		t.Fatalf("Read = %q, want %q", got, want)
	}
}

// expectClosedByPeer waits for the Mux to close conn: the read ends with EOF
// or a reset, never with our own deadline.
func expectClosedByPeer(t *testing.T, name string, conn net.Conn) {
	t.Helper()
	_ = conn.SetReadDeadline(time.Now().Add(muxTestWait))
	n, err := conn.Read(make([]byte, 1))
	var ne net.Error
	if err == nil || (errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("%s: Read = (%d, %v), want the mux to close the connection", name, n, err)
	}
}

func TestMuxRoutesTwoGroups(t *testing.T) {
	m := newTestMux(t, headerTimeout)
	l1, l2 := mustLayer(t, m, 1), mustLayer(t, m, 2)

	// Dial group 2 first so a router that ignored the header and used
	// arrival order would hand it to the wrong layer.
	c2 := mustDial(t, l2, m)
	c1 := mustDial(t, l1, m)
	s1 := acceptWithin(t, l1)
	s2 := acceptWithin(t, l2)

	exchange(t, c1, s1, "to group 1", "from group 1")
	exchange(t, c2, s2, "to group 2", "from group 2")
	if got := m.Rejected(); got != 0 {
		t.Errorf("Rejected() = %d, want 0", got)
	}
}

func TestMuxRejectsBadClients(t *testing.T) {
	const wait = 100 * time.Millisecond
	m := newTestMux(t, wait)
	l := mustLayer(t, m, 1)

	goodGroup := testHeader(1)
	preamble := len(goodGroup) - muxHeaderBytes
	wrongMagic := slices.Concat(goodGroup[:preamble], []byte("SLR2"), goodGroup[preamble+muxMagicLen:])
	noPreamble := goodGroup[preamble:]
	otherCluster := slices.Concat(encodeClusterPreamble(ClusterID{7}), goodGroup[preamble:])
	// Magic and group without the incarnation, as no raft header is.
	noIncarnation := slices.Concat(goodGroup[:preamble], []byte("SLR1"), goodGroup[preamble+muxMagicLen:preamble+muxPrefixBytes])
	cases := []struct {
		name string
		send []byte
	}{
		{"http request", []byte("GET / HTTP/1.1\r\n\r\n")},
		{"wrong magic", wrongMagic},
		{"unknown group", testHeader(99)},
		{"no cluster preamble", noPreamble},
		{"another cluster", otherCluster},
		{"short header", slices.Concat(goodGroup[:preamble], []byte(muxMagic))},
		{"header without incarnation", noIncarnation},
		{"header cut in the incarnation", goodGroup[:len(goodGroup)-3]},
		{"silent client", nil},
	}
	for i, tc := range cases {
		conn, err := net.Dial("tcp", m.Addr().String())
		if err != nil {
			t.Fatalf("%s: net.Dial = %v, want nil", tc.name, err)
		}
		if _, err := conn.Write(tc.send); err != nil {
			t.Fatalf("%s: Write = %v, want nil", tc.name, err)
		}
		expectClosedByPeer(t, tc.name, conn)
		_ = conn.Close()
		// reject counts before it closes, so the count is already visible.
		if got, want := m.Rejected(), uint64(i+1); got != want {
			t.Fatalf("%s: Rejected() = %d, want %d", tc.name, got, want)
		}
	}

	if got := m.Foreign(); got != 1 {
		t.Errorf("Foreign() = %d, want 1 (the other cluster's header)", got)
	}
	// The mux still serves, and none of the rejected connections reached
	// the layer: the first connection Accept returns is the good one.
	c := mustDial(t, l, m)
	s := acceptWithin(t, l)
	exchange(t, c, s, "still serving", "yes")
}

func TestMuxSilentClientDoesNotBlockAccept(t *testing.T) {
	// A header wait far longer than the test: only Close can end the
	// silent client's router.
	m := newTestMux(t, time.Hour)
	l := mustLayer(t, m, 1)

	silent, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatalf("net.Dial = %v, want nil", err)
	}
	defer silent.Close()

	c := mustDial(t, l, m)
	s := acceptWithin(t, l)
	exchange(t, c, s, "past the silent one", "ok")

	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v, want nil", err)
		}
	case <-time.After(muxTestWait):
		t.Fatalf("Close did not return while a client was silent")
	}
	expectClosedByPeer(t, "silent client after Close", silent)
	if got := m.Rejected(); got != 0 {
		t.Errorf("Rejected() = %d, want 0: shutdown is not a rejection", got)
	}
}

func TestMuxFullQueueWaitsInsteadOfDropping(t *testing.T) {
	m := newTestMux(t, headerTimeout)
	l := mustLayer(t, m, 1)

	// More connections than the queue holds, none accepted yet; each sends
	// its index after the header so Accept's side can account for all.
	const total = acceptQueueMax + 3
	for i := range total {
		c := mustDial(t, l, m)
		var idx [4]byte
		binary.BigEndian.PutUint32(idx[:], uint32(i))
		if _, err := c.Write(idx[:]); err != nil {
			t.Fatalf("Write(index %d) = %v, want nil", i, err)
		}
	}
	seen := make(map[uint32]bool)
	for range total {
		s := acceptWithin(t, l)
		_ = s.SetReadDeadline(time.Now().Add(muxTestWait))
		var idx [4]byte
		if _, err := io.ReadFull(s, idx[:]); err != nil {
			t.Fatalf("Read(index) = %v, want nil", err)
		}
		seen[binary.BigEndian.Uint32(idx[:])] = true
	}
	if len(seen) != total {
		t.Fatalf("accepted %d distinct connections, want %d", len(seen), total)
	}

	// Fill the queue again and leave routers waiting; Close must still
	// return and close every waiting connection.
	var waiting []net.Conn
	for range acceptQueueMax + 3 {
		waiting = append(waiting, mustDial(t, l, m))
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	for i, c := range waiting {
		expectClosedByPeer(t, fmt.Sprintf("waiting connection %d", i), c)
	}
}

func TestMuxLayerCloseUnregistersOnlyItsGroup(t *testing.T) {
	m := newTestMux(t, headerTimeout)
	l1, l2 := mustLayer(t, m, 1), mustLayer(t, m, 2)
	if err := l1.Close(); err != nil {
		t.Fatalf("layer Close = %v, want nil", err)
	}
	if _, err := l1.Accept(); !errors.Is(err, ErrLayerClosed) {
		t.Fatalf("Accept after layer Close = %v, want ErrLayerClosed", err)
	}

	// Group 1 is now unknown to the mux: a dial to it is rejected.
	hdr := testHeader(1)
	raw, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatalf("net.Dial = %v, want nil", err)
	}
	defer raw.Close()
	if _, err := raw.Write(hdr); err != nil {
		t.Fatalf("Write(header) = %v, want nil", err)
	}
	expectClosedByPeer(t, "group 1 after its layer closed", raw)
	if got := m.Rejected(); got != 1 {
		t.Fatalf("Rejected() = %d, want 1", got)
	}

	// The listener and group 2 are untouched, and group 1 may register again.
	c := mustDial(t, l2, m)
	s := acceptWithin(t, l2)
	exchange(t, c, s, "group 2 lives", "yes")
	l1again := mustLayer(t, m, 1)
	c = mustDial(t, l1again, m)
	s = acceptWithin(t, l1again)
	exchange(t, c, s, "group 1 again", "yes")
}

func TestMuxCloseAndRegistration(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("net.Listen = %v, want nil", err)
	}
	m := NewMux(ln, testClusterID, nil)
	served := make(chan struct{})
	go func() {
		defer close(served)
		m.Serve()
	}()

	l := mustLayer(t, m, 7)
	if _, err := m.layer(7); !errors.Is(err, ErrGroupRegistered) {
		t.Fatalf("layer(7) twice = %v, want ErrGroupRegistered", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close = %v, want nil", err)
	}
	select {
	case <-served:
	case <-time.After(muxTestWait):
		t.Fatalf("Serve did not return after Close")
	}
	if _, err := m.layer(8); !errors.Is(err, ErrMuxClosed) {
		t.Fatalf("layer(8) after Close = %v, want ErrMuxClosed", err)
	}
	if _, err := l.Accept(); !errors.Is(err, ErrLayerClosed) {
		t.Fatalf("Accept after mux Close = %v, want ErrLayerClosed", err)
	}
	if err := l.Close(); err != nil {
		t.Fatalf("layer Close after mux Close = %v, want nil", err)
	}
}

// Every header has one size and carries the incarnation, 0 included (a
// bootstrapped replica, heartbeat frames); a probe is the header's prefix
// under its own magic.
func TestMuxHeaderRoundTrip(t *testing.T) {
	for _, group := range []uint32{0, 1, 0xDEADBEEF, beatGroupID} {
		for _, inc := range []uint64{0, 1, 0x9f86d081884c7d65} {
			enc := encodeHeader(group, inc)
			if len(enc) != muxHeaderBytes || !bytes.HasPrefix(enc, []byte(muxMagic)) {
				t.Errorf("encodeHeader(%d, %x) = %x, want %d bytes starting %q", group, inc, enc, muxHeaderBytes, muxMagic)
			}
			hdr, err := readPiped(enc)
			if err != nil || hdr != (muxHeader{group: group, incarnation: inc}) {
				t.Errorf("readHeader(encodeHeader(%d, %x)) = %+v, %v; want group %d, incarnation %x", group, inc, hdr, err, group, inc)
			}
		}
		hdr, err := readPiped(encodeProbe(group))
		if err != nil || hdr != (muxHeader{group: group, probe: true}) {
			t.Errorf("readHeader(encodeProbe(%d)) = %+v, %v; want a probe of group %d", group, hdr, err, group)
		}
	}
}

// readPiped is readHeader of a connection that sends b and closes.
func readPiped(b []byte) (muxHeader, error) {
	a, c := net.Pipe()
	go func() {
		_, _ = a.Write(b)
		a.Close()
	}()
	defer c.Close()
	return readHeader(c)
}

// muxTestFSM counts applied entries and those not tagged with its group, so
// a cross-group delivery would show up as foreign.
type muxTestFSM struct {
	group byte

	mu struct {
		sync.Mutex
		applied int // guarded by mu
		foreign int // guarded by mu
	}
}

func (f *muxTestFSM) Apply(l *raft.Log) any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.applied++
	if len(l.Data) == 0 || l.Data[0] != f.group {
		f.mu.foreign++
	}
	return nil
}

func (f *muxTestFSM) counts() (applied, foreign int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.mu.applied, f.mu.foreign
}

func (f *muxTestFSM) Snapshot() (raft.FSMSnapshot, error) {
	applied, foreign := f.counts()
	return muxTestSnapshot{applied, foreign}, nil
}

func (f *muxTestFSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	var v [2]uint64
	if err := binary.Read(rc, binary.BigEndian, &v); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mu.applied, f.mu.foreign = int(v[0]), int(v[1])
	return nil
}

type muxTestSnapshot struct{ applied, foreign int }

func (s muxTestSnapshot) Persist(sink raft.SnapshotSink) error {
	v := [2]uint64{uint64(s.applied), uint64(s.foreign)}
	if err := binary.Write(sink, binary.BigEndian, v); err != nil {
		_ = sink.Cancel()
		return err
	}
	return sink.Close()
}

func (muxTestSnapshot) Release() {}

// muxTestNode is one group's raft instance on one Mux.
type muxTestNode struct {
	raft      *raft.Raft
	transport *raft.NetworkTransport
	fsm       *muxTestFSM
}

func newMuxTestNode(t *testing.T, m *Mux, group uint32, id raft.ServerID) *muxTestNode {
	t.Helper()
	layer := mustLayer(t, m, group)
	transport := raft.NewNetworkTransport(layer, 3, 2*time.Second, io.Discard)

	conf := raft.DefaultConfig()
	conf.LocalID = id
	conf.HeartbeatTimeout = 100 * time.Millisecond
	conf.ElectionTimeout = 100 * time.Millisecond
	conf.LeaderLeaseTimeout = 50 * time.Millisecond
	conf.CommitTimeout = 5 * time.Millisecond
	conf.LogOutput = io.Discard
	conf.LogLevel = "ERROR"

	fsm := &muxTestFSM{group: byte(group)}
	r, err := raft.NewRaft(conf, fsm, raft.NewInmemStore(), raft.NewInmemStore(),
		raft.NewInmemSnapshotStore(), transport)
	if err != nil {
		t.Fatalf("raft.NewRaft(group %d, %s) = %v, want nil", group, id, err)
	}
	return &muxTestNode{raft: r, transport: transport, fsm: fsm}
}

func waitForLeader(t *testing.T, group uint32, nodes []*muxTestNode) *muxTestNode {
	t.Helper()
	deadline := time.Now().Add(muxTestWait)
	for time.Now().Before(deadline) {
		for _, n := range nodes {
			if n.raft.State() == raft.Leader {
				return n
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("group %d: no leader within %v", group, muxTestWait)
	return nil
}

func waitForApplied(t *testing.T, group uint32, nodes []*muxTestNode, want int) {
	t.Helper()
	deadline := time.Now().Add(muxTestWait)
	for {
		done := true
		for i, n := range nodes {
			applied, foreign := n.fsm.counts()
			if foreign != 0 {
				t.Fatalf("group %d node %d: %d entries from another group, want 0", group, i, foreign)
			}
			if applied != want {
				done = false
				if time.Now().After(deadline) {
					t.Fatalf("group %d node %d: applied %d entries, want %d", group, i, applied, want)
				}
			}
		}
		if done {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMuxCarriesTwoRaftClusters(t *testing.T) {
	const nodesPerGroup = 3
	var muxes []*Mux
	for range nodesPerGroup {
		muxes = append(muxes, newTestMux(t, headerTimeout))
	}
	replicateTwoGroups(t, muxes)
}

// replicateTwoGroups runs groups 1 and 2 as raft clusters with one replica
// on each Mux, applies a different number of entries to each, and checks
// that every replica applied exactly its group's entries and that no Mux
// rejected a connection.
func replicateTwoGroups(t *testing.T, muxes []*Mux) {
	t.Helper()
	groups := []uint32{1, 2}
	entries := map[uint32]int{1: 3, 2: 5} // different counts catch crossed wires
	cluster := make(map[uint32][]*muxTestNode)
	var servers []raft.Server
	for i, m := range muxes {
		servers = append(servers, raft.Server{
			Suffrage: raft.Voter,
			ID:       raft.ServerID(fmt.Sprintf("node%d", i)),
			Address:  raft.ServerAddress(m.Addr().String()),
		})
	}
	for _, g := range groups {
		for i, m := range muxes {
			cluster[g] = append(cluster[g], newMuxTestNode(t, m, g, servers[i].ID))
		}
		// Shutdown order: raft first so it stops using the transport,
		// then the transport, which closes its layer; the Muxes close in
		// newTestMux's cleanup, registered earlier and so run later.
		nodes := cluster[g]
		t.Cleanup(func() {
			for i, n := range nodes {
				if err := n.raft.Shutdown().Error(); err != nil {
					t.Errorf("group %d node %d: Shutdown = %v, want nil", g, i, err)
				}
				if err := n.transport.Close(); err != nil {
					t.Errorf("group %d node %d: transport Close = %v, want nil", g, i, err)
				}
			}
		})
		boot := raft.Configuration{Servers: servers}
		if err := nodes[0].raft.BootstrapCluster(boot).Error(); err != nil {
			t.Fatalf("group %d: BootstrapCluster = %v, want nil", g, err)
		}
	}

	for _, g := range groups {
		leader := waitForLeader(t, g, cluster[g])
		for i := range entries[g] {
			if err := leader.raft.Apply([]byte{byte(g), byte(i)}, muxTestWait).Error(); err != nil {
				t.Fatalf("group %d: Apply(entry %d) = %v, want nil", g, i, err)
			}
		}
	}
	for _, g := range groups {
		waitForApplied(t, g, cluster[g], entries[g])
	}
	for i, m := range muxes {
		if got := m.Rejected(); got != 0 {
			t.Errorf("mux %d: Rejected() = %d, want 0", i, got)
		}
	}
}
