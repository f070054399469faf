// Tests in this file prove the raft port over TLS: layers dial and route
// through encrypted connections and two raft clusters replicate over mutual
// TLS; plaintext, garbage, a stalled handshake, a plaintext raft header, and
// with mutual TLS a client without a certificate or with one from another CA
// all get a closed connection (counted, never a crash) while the Mux keeps
// serving; and a dialer that trusts another CA refuses the server. The
// certificates are made here, with internal/certs; no key is committed.
package raftnode

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/internal/certs"
)

// testPKI is one cluster's CA and the pool that trusts it.
type testPKI struct {
	ca   *certs.Authority
	pool *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	now := time.Now()
	ca, err := certs.NewAuthority("test CA", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatalf("NewAuthority = %v, want nil", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	return &testPKI{ca: ca, pool: pool}
}

// cert issues a node certificate for 127.0.0.1.
func (p *testPKI) cert(t *testing.T, name string) tls.Certificate {
	t.Helper()
	now := time.Now()
	iss, err := p.ca.Issue(certs.Request{Name: name, Hosts: []string{"127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), Usage: certs.UsageNode})
	if err != nil {
		t.Fatalf("Issue(%s) = %v, want nil", name, err)
	}
	c, err := tls.X509KeyPair(iss.CertPEM, iss.KeyPEM)
	if err != nil {
		t.Fatalf("X509KeyPair(%s) = %v, want nil", name, err)
	}
	return c
}

// muxTLS is a node's raft port TLS: its certificate both ways, the CA to
// verify peers, and with mtls a client certificate required.
func (p *testPKI) muxTLS(t *testing.T, name string, mtls bool) *MuxTLS {
	t.Helper()
	c := p.cert(t, name)
	server := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{c}}
	if mtls {
		server.ClientAuth, server.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	client := &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: p.pool, Certificates: []tls.Certificate{c}}
	return &MuxTLS{Server: server, Client: client}
}

// dialRaw connects to m's port with TLS config cfg (nil: plaintext), sends
// send, and returns the connection. A handshake failure on our side fails
// the test: these cases are about what the server refuses.
func dialRaw(t *testing.T, m *Mux, cfg *tls.Config, send []byte) net.Conn {
	t.Helper()
	raw, err := net.Dial("tcp", m.Addr().String())
	if err != nil {
		t.Fatalf("net.Dial = %v, want nil", err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	conn := raw
	if cfg != nil {
		tc := tls.Client(raw, cfg)
		_ = tc.SetDeadline(time.Now().Add(muxTestWait))
		if err := tc.Handshake(); err != nil {
			t.Fatalf("client Handshake = %v, want nil (the server decides)", err)
		}
		_ = tc.SetDeadline(time.Time{})
		conn = tc
	}
	if _, err := conn.Write(send); err != nil {
		t.Fatalf("Write = %v, want nil", err)
	}
	return conn
}

// waitRejected waits until m has rejected want connections. Unlike a bad
// header, a failed handshake sends its alert from inside crypto/tls, before
// the Mux counts it, so the client may see the close first.
func waitRejected(t *testing.T, name string, m *Mux, want uint64) {
	t.Helper()
	deadline := time.Now().Add(muxTestWait)
	for m.Rejected() < want && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if got := m.Rejected(); got != want {
		t.Fatalf("%s: Rejected() = %d, want %d", name, got, want)
	}
}

func TestMuxTLSRoutesTwoGroups(t *testing.T) {
	pki := newTestPKI(t)
	m := serveTestMux(t, headerTimeout, pki.muxTLS(t, "n1", false))
	l1, l2 := mustLayer(t, m, 1), mustLayer(t, m, 2)

	c2 := mustDial(t, l2, m)
	c1 := mustDial(t, l1, m)
	s1 := acceptWithin(t, l1)
	s2 := acceptWithin(t, l2)
	for _, c := range []net.Conn{c1, c2, s1, s2} {
		if mc, ok := c.(*muxConn); ok {
			c = mc.Conn // the Mux's wrapper of an accepted connection
		}
		if _, ok := c.(*tls.Conn); !ok {
			t.Fatalf("connection is %T, want *tls.Conn", c)
		}
	}
	exchange(t, c1, s1, "to group 1", "from group 1")
	exchange(t, c2, s2, "to group 2", "from group 2")
	if got := m.Rejected(); got != 0 {
		t.Errorf("Rejected() = %d, want 0", got)
	}
}

func TestMuxTLSRejectsBadClients(t *testing.T) {
	const wait = 200 * time.Millisecond
	pki := newTestPKI(t)
	m := serveTestMux(t, wait, pki.muxTLS(t, "n1", false))
	l := mustLayer(t, m, 1)

	goodHeader := testHeader(1)
	unknown := testHeader(99)
	trusting := &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1"}
	// The first 5 bytes of a TLS record carrying a ClientHello, then
	// nothing: a handshake that stalls must end at the header deadline.
	stalled := []byte{0x16, 0x03, 0x01, 0x02, 0x00}
	cases := []struct {
		name string
		tls  *tls.Config
		send []byte
	}{
		{"plaintext http request", nil, []byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")},
		{"plaintext raft header", nil, goodHeader[:]},
		{"garbage", nil, []byte{0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"stalled handshake", nil, stalled},
		{"silent client", nil, nil},
		{"tls, wrong magic", trusting, append(encodeClusterPreamble(testClusterID), "SLR2\x00\x00\x00\x01"...)},
		{"tls, another cluster", trusting, append(encodeClusterPreamble(ClusterID{7}), goodHeader[len(goodHeader)-muxHeaderBytes:]...)},
		{"tls, unknown group", trusting, unknown[:]},
		{"tls, silent after handshake", trusting, nil},
	}
	for i, tc := range cases {
		conn := dialRaw(t, m, tc.tls, tc.send)
		expectClosedByPeer(t, tc.name, conn)
		waitRejected(t, tc.name, m, uint64(i+1))
	}

	// The mux still serves, and no rejected connection reached the layer.
	c := mustDial(t, l, m)
	s := acceptWithin(t, l)
	exchange(t, c, s, "still serving", "yes")
}

func TestMuxMutualTLSRefusesStrangers(t *testing.T) {
	pki, rogue := newTestPKI(t), newTestPKI(t)
	m := serveTestMux(t, 2*time.Second, pki.muxTLS(t, "n1", true))
	l := mustLayer(t, m, 1)
	hdr := testHeader(1)

	// Each trusts the server, so only the server can refuse them.
	noCert := &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1"}
	otherCA := &tls.Config{RootCAs: pki.pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{rogue.cert(t, "n1")}}
	cases := []struct {
		name string
		tls  *tls.Config
	}{
		{"plaintext dialer", nil},
		{"no client certificate", noCert},
		{"certificate from another CA", otherCA},
	}
	for i, tc := range cases {
		conn := dialRaw(t, m, tc.tls, hdr)
		expectClosedByPeer(t, tc.name, conn)
		waitRejected(t, tc.name, m, uint64(i+1))
	}

	// A layer of another cluster's Mux trusts only its own CA: its dial
	// fails on the server's certificate, before any raft byte is sent.
	stranger := serveTestMux(t, headerTimeout, rogue.muxTLS(t, "n2", true))
	sl := mustLayer(t, stranger, 1)
	if conn, err := sl.Dial(raft.ServerAddress(m.Addr().String()), time.Second); err == nil {
		conn.Close()
		t.Fatalf("Dial from another cluster = nil error, want a certificate error")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Dial from another cluster = %v, want a certificate error", err)
	}

	// A peer with a certificate from the cluster's CA gets through.
	peer := serveTestMux(t, headerTimeout, pki.muxTLS(t, "n2", true))
	pl := mustLayer(t, peer, 1)
	c := mustDial(t, pl, m)
	s := acceptWithin(t, l)
	exchange(t, c, s, "from a peer", "welcome")
}

func TestMuxTLSServerName(t *testing.T) {
	// A certificate for 127.0.0.1 only: dialing "localhost" must fail
	// unless ServerName maps the address back to the advertised host.
	pki := newTestPKI(t)
	m := serveTestMux(t, headerTimeout, pki.muxTLS(t, "n1", true))
	l := mustLayer(t, m, 1)
	_, port, _ := net.SplitHostPort(m.Addr().String())
	byName := raft.ServerAddress(net.JoinHostPort("localhost", port))

	plain := serveTestMux(t, headerTimeout, pki.muxTLS(t, "n2", true))
	if _, err := mustLayer(t, plain, 1).Dial(byName, time.Second); err == nil || !strings.Contains(err.Error(), "localhost") {
		t.Fatalf("Dial(%s) with a 127.0.0.1 certificate = %v, want a name mismatch", byName, err)
	}
	mapped := pki.muxTLS(t, "n3", true)
	mapped.ServerName = func(addr string) string { return "127.0.0.1" }
	c, err := mustLayer(t, serveTestMux(t, headerTimeout, mapped), 1).Dial(byName, time.Second)
	if err != nil {
		t.Fatalf("Dial(%s) with ServerName 127.0.0.1 = %v, want nil", byName, err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, testRPCStart); err != nil {
		t.Fatalf("Write(first RPC byte) = %v, want nil", err)
	}
	s := acceptWithin(t, l)
	exchange(t, c, s, "by name", "ok")
}

func TestMuxTLSConfigValidate(t *testing.T) {
	pki := newTestPKI(t)
	good := pki.muxTLS(t, "n1", false)
	cases := []struct {
		name string
		cfg  MuxTLS
		ok   bool
	}{
		{"complete", *good, true},
		{"no server", MuxTLS{Client: good.Client}, false},
		{"no client", MuxTLS{Server: good.Server}, false},
		{"server without certificate", MuxTLS{Server: &tls.Config{}, Client: good.Client}, false},
	}
	for _, tc := range cases {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%s: Validate() = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

func TestMuxMutualTLSCarriesTwoRaftClusters(t *testing.T) {
	pki := newTestPKI(t)
	var muxes []*Mux
	for i := range 3 {
		muxes = append(muxes, serveTestMux(t, headerTimeout, pki.muxTLS(t, string(rune('a'+i)), true)))
	}
	replicateTwoGroups(t, muxes)
}
