// Package certs loads, checks and makes the X.509 certificates that encrypt
// seatledger's traffic, and builds the crypto/tls configurations every
// listener and dialer uses, so that the TLS policy (versions, who must show a
// certificate, which CA vouches for whom) is written in one place.
//
// A node has one certificate and key. It serves them on every port: the
// raft port, the gRPC port (public API and the internal Peer service) and the
// HTTP ports. It verifies its peers with the cluster's CA (--tls-ca) and,
// dialing a peer, presents its own certificate as a client certificate, so
// the same certificate must allow both server and client authentication.
// With peer mutual TLS the raft port requires that client certificate and the
// Peer service refuses callers without one (gateway/auth.go checks it).
// A client CA (--client-ca) makes the public ports require a client
// certificate from every caller too.
package certs

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"time"
)

// TLS versions. Peers are all seatd nodes of one build, so their links take
// TLS 1.3 only; public clients (browsers, load balancers, older SDKs) may
// still speak 1.2, the lowest version without known protocol breaks.
const (
	PeerVersionMin   = tls.VersionTLS13
	PublicVersionMin = tls.VersionTLS12
)

// peerSessionCacheEntries bounds the TLS session tickets a node keeps to
// resume connections to its peers: raft redials on every broken connection,
// and a resumed handshake skips the certificate verification.
const peerSessionCacheEntries = 64

// Errors of the node's TLS flags and files. Messages name the flag, so an
// operator sees which one to fix.
var (
	ErrKeyWithoutCert    = errors.New("certs: --tls-key needs --tls-cert")
	ErrCertWithoutKey    = errors.New("certs: --tls-cert needs --tls-key")
	ErrCAWithoutCert     = errors.New("certs: --tls-ca needs --tls-cert and --tls-key: a node verifying its peers must also present a certificate")
	ErrMTLSWithoutCA     = errors.New("certs: --peer-mtls needs --tls-ca (the CA peers' certificates are verified with) and --tls-cert/--tls-key")
	ErrClientCAWithoutCA = errors.New("certs: --client-ca needs --tls-ca and --tls-cert/--tls-key: nodes forwarding to each other present certificates signed by --tls-ca")
	ErrNoCertificate     = errors.New("certs: no PEM certificate")
	ErrNotValidNow       = errors.New("certs: certificate not valid now")
	ErrNotForHost        = errors.New("certs: certificate not valid for host")
	ErrUntrusted         = errors.New("certs: certificate does not verify against the CA")
)

// NodeFiles names a node's TLS files, as given on seatd serve's command line.
// The zero value means plaintext.
type NodeFiles struct {
	// CertFile and KeyFile are the node's certificate (PEM, leaf first,
	// then any intermediates) and its private key (--tls-cert, --tls-key).
	CertFile, KeyFile string
	// CAFile holds the CA certificates peers are verified with
	// (--tls-ca). Empty means the system's roots.
	CAFile string
	// ClientCAFile, if set, makes the public gRPC and HTTP ports require a
	// client certificate signed by one of its CAs (--client-ca).
	ClientCAFile string
	// PeerMTLS makes the raft port and the Peer service require a client
	// certificate signed by CAFile (--peer-mtls).
	PeerMTLS bool
}

// Enabled reports whether the node serves TLS at all.
func (f NodeFiles) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" }

// Validate reports the first impossible combination of flags. It reads no
// file: Load does.
func (f NodeFiles) Validate() error {
	switch {
	case f.KeyFile != "" && f.CertFile == "":
		return ErrKeyWithoutCert
	case f.CertFile != "" && f.KeyFile == "":
		return ErrCertWithoutKey
	case f.PeerMTLS && (f.CAFile == "" || f.CertFile == ""):
		return ErrMTLSWithoutCA
	case f.CAFile != "" && f.CertFile == "":
		return ErrCAWithoutCert
	case f.ClientCAFile != "" && (f.CAFile == "" || f.CertFile == ""):
		return ErrClientCAWithoutCA
	}
	return nil
}

// Node is a node's loaded and checked TLS material. It is immutable, so its
// configurations may be built from any goroutine.
type Node struct {
	cert tls.Certificate
	// peerCAs verify peers (nil: the system's roots); peerCAList is the
	// same CAs as certificates, for the Peer service's root check.
	peerCAs    *x509.CertPool
	peerCAList []*x509.Certificate
	// clientCAs verify public clients' certificates; nil when the public
	// ports do not ask for one.
	clientCAs *x509.CertPool
	peerMTLS  bool
}

// LoadNode reads and checks the files: the key matches the certificate, the
// certificate is valid at now, and, given a CA, it chains to that CA for both
// server and client use (peers verify it both ways). Every failure is an
// error naming the file; nothing here panics on bad input.
func LoadNode(f NodeFiles, now time.Time) (*Node, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if !f.Enabled() {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("certs: --tls-cert %s / --tls-key %s: %w", f.CertFile, f.KeyFile, err)
	}
	if cert.Leaf == nil { // GODEBUG=x509keypairleaf=0 leaves it unparsed
		if cert.Leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: --tls-cert %s: %w", f.CertFile, err)
		}
	}
	if err := validAt(cert.Leaf, now); err != nil {
		return nil, fmt.Errorf("--tls-cert %s: %w", f.CertFile, err)
	}
	n := &Node{cert: cert, peerMTLS: f.PeerMTLS}
	if f.CAFile != "" {
		if n.peerCAList, err = readCerts(f.CAFile); err != nil {
			return nil, fmt.Errorf("--tls-ca: %w", err)
		}
		n.peerCAs = poolOf(n.peerCAList)
		if err := chains(cert, n.peerCAs, now); err != nil {
			return nil, fmt.Errorf("--tls-cert %s and --tls-ca %s: %w", f.CertFile, f.CAFile, err)
		}
	}
	if f.ClientCAFile != "" {
		clientCAs, err := readCerts(f.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("--client-ca: %w", err)
		}
		// Nodes forwarding to each other present their own certificates
		// on the same gRPC port, so the peer CA is trusted there too.
		n.clientCAs = poolOf(append(clientCAs, n.peerCAList...))
	}
	return n, nil
}

// Leaf returns the node's certificate.
func (n *Node) Leaf() *x509.Certificate { return n.cert.Leaf }

// PeerMTLS reports whether peers must present a client certificate.
func (n *Node) PeerMTLS() bool { return n.peerMTLS }

// PeerCAs returns the CA certificates peers are verified with (nil for the
// system's roots). The Peer service accepts a caller whose verified chain
// ends in one of them.
func (n *Node) PeerCAs() []*x509.Certificate { return n.peerCAList }

// CheckHost reports an error unless the node's certificate is valid for host
// (a DNS name or an IP address): peers dial the addresses in --peers and
// verify the certificate against them.
func (n *Node) CheckHost(host string) error {
	if err := n.cert.Leaf.VerifyHostname(host); err != nil {
		return fmt.Errorf("%w %s (it names %s)", ErrNotForHost, host, names(n.cert.Leaf))
	}
	return nil
}

// RaftServer is the raft port's configuration: TLS 1.3, and with peer mTLS
// a client certificate signed by the peer CA is required.
func (n *Node) RaftServer() *tls.Config {
	c := &tls.Config{MinVersion: PeerVersionMin, Certificates: []tls.Certificate{n.cert}}
	if n.peerMTLS {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, n.peerCAs
	}
	return c
}

// PeerClient is what this node dials its peers' raft and gRPC ports with:
// the peer CA verifies them, and this node's certificate is its client
// certificate. It has no ServerName: the dialer sets the peer's advertised
// host per connection, which may differ from the address dialed (a proxy in
// the fault harness).
func (n *Node) PeerClient() *tls.Config {
	return &tls.Config{MinVersion: PeerVersionMin, RootCAs: n.peerCAs,
		Certificates:       []tls.Certificate{n.cert},
		ClientSessionCache: tls.NewLRUClientSessionCache(peerSessionCacheEntries)}
}

// GRPCServer is the gRPC port's configuration. The port serves the public
// API and the Peer service, so client certificates follow the stricter of
// the two: with a client CA every caller must present one; with peer mTLS
// alone a certificate is verified when given, and the Peer service refuses
// callers without a verified one.
func (n *Node) GRPCServer() *tls.Config {
	c := n.httpServer()
	if c.ClientAuth == tls.NoClientCert && n.peerMTLS {
		c.ClientAuth, c.ClientCAs = tls.VerifyClientCertIfGiven, n.peerCAs
	}
	return c
}

// HTTPServer is the configuration of the HTTP listeners (--http and
// --admin-http): with a client CA, a client certificate is required.
func (n *Node) HTTPServer() *tls.Config { return n.httpServer() }

func (n *Node) httpServer() *tls.Config {
	c := &tls.Config{MinVersion: PublicVersionMin, Certificates: []tls.Certificate{n.cert}}
	if n.clientCAs != nil {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, n.clientCAs
	}
	return c
}

// HostOf returns the host of a host:port address, or addr itself if it has
// no port.
func HostOf(addr string) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return host
}

// validAt reports whether now is inside the certificate's validity window.
func validAt(c *x509.Certificate, now time.Time) error {
	switch {
	case now.After(c.NotAfter):
		return fmt.Errorf("%w: %q expired at %s", ErrNotValidNow, c.Subject.CommonName, c.NotAfter.UTC().Format(time.RFC3339))
	case now.Before(c.NotBefore):
		return fmt.Errorf("%w: %q is not valid before %s", ErrNotValidNow, c.Subject.CommonName, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

// chains reports whether cert verifies against roots at now for server and
// for client authentication: a node is both to its peers.
func chains(cert tls.Certificate, roots *x509.CertPool, now time.Time) error {
	inter := x509.NewCertPool()
	for _, der := range cert.Certificate[1:] {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("certs: intermediate certificate: %w", err)
		}
		inter.AddCert(c)
	}
	for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		opts := x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{use}}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			return fmt.Errorf("%w (for %s): %v", ErrUntrusted, usageName(use), err)
		}
	}
	return nil
}

func usageName(u x509.ExtKeyUsage) string {
	if u == x509.ExtKeyUsageClientAuth {
		return "client authentication"
	}
	return "server authentication"
}

// readCerts reads every CERTIFICATE block of a PEM file.
func readCerts(path string) ([]*x509.Certificate, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("certs: %w", err)
	}
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("certs: %s: %w", path, err)
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w in %s", ErrNoCertificate, path)
	}
	return out, nil
}

func poolOf(certs []*x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	for _, c := range certs {
		p.AddCert(c)
	}
	return p
}

// names lists a certificate's DNS and IP subject alternative names.
func names(c *x509.Certificate) string {
	var out []string
	out = append(out, c.DNSNames...)
	for _, ip := range c.IPAddresses {
		out = append(out, ip.String())
	}
	if len(out) == 0 {
		return "no subject alternative names"
	}
	return strings.Join(out, ", ")
}

// PeerChain reports whether one of chains is a node's: it ends in one of
// cas and its leaf allows server authentication, which node certificates do
// and client certificates (certgen's client.pem, from the same CA) do not.
// It is the Peer service's test of a caller's verified chains, by bytes and
// flags so it costs no signature check per call.
func PeerChain(chains [][]*x509.Certificate, cas []*x509.Certificate) bool {
	for _, chain := range chains {
		if len(chain) == 0 || !slices.Contains(chain[0].ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
			continue
		}
		root := chain[len(chain)-1].Raw
		for _, ca := range cas {
			if bytes.Equal(root, ca.Raw) {
				return true
			}
		}
	}
	return false
}
