// This file proves seatd's TLS flags are checked before a port is bound:
// impossible combinations and bad files are errors naming the flag, and a
// certificate that does not name the host this node advertises in --peers is
// refused (its peers would refuse it later, one handshake at a time); and
// that certgen writes a CA, node and client certificates that load, keeps
// them on a second run, and refuses bad arguments.
package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/raftnode"
)

func TestLoadServeTLS(t *testing.T) {
	dir := t.TempDir()
	if err := runCertgen([]string{dir, "--nodes", "n1,n2"}); err != nil {
		t.Fatalf("certgen = %v, want nil", err)
	}
	d := certs.Dir(dir)
	local, _ := parsePeers("n1=127.0.0.1:7001/127.0.0.1:9001,n2=127.0.0.1:7002/127.0.0.1:9002")
	remote, _ := parsePeers("n1=10.9.9.9:7001/10.9.9.9:9001,n2=127.0.0.1:7002/127.0.0.1:9002")
	byName, _ := parsePeers("n1=localhost:7001/localhost:9001")
	now := time.Now()

	if n, err := loadServeTLS(certs.NodeFiles{}, "n1", local, now); n != nil || err != nil {
		t.Fatalf("loadServeTLS(no flags) = (%v, %v), want plaintext", n, err)
	}
	mtls := d.Node("n1")
	mtls.PeerMTLS = true
	for _, peers := range [][]raftnode.Peer{local, byName} {
		if n, err := loadServeTLS(mtls, "n1", peers, now); err != nil || n == nil || !n.PeerMTLS() {
			t.Errorf("loadServeTLS(n1 certificate, peers %v) = (%v, %v), want TLS with peer mTLS", peers, n, err)
		}
	}
	cases := []struct {
		name  string
		files certs.NodeFiles
		peers []raftnode.Peer
		want  string
	}{
		{"cert without key", certs.NodeFiles{CertFile: d.Cert("n1")}, local, "--tls-cert needs --tls-key"},
		{"mtls without CA", certs.NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), PeerMTLS: true}, local, "--peer-mtls needs --tls-ca"},
		{"unreadable key", certs.NodeFiles{CertFile: d.Cert("n1"), KeyFile: filepath.Join(dir, "nope.pem")}, local, "--tls-key"},
		{"another node's key", certs.NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n2")}, local, "does not match"},
		{"host not in the certificate", d.Node("n1"), remote, "10.9.9.9"},
	}
	for _, tc := range cases {
		n, err := loadServeTLS(tc.files, "n1", tc.peers, now)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: loadServeTLS = (%v, %v), want an error containing %q", tc.name, n, err, tc.want)
		}
	}
}

func TestCertgen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := runCertgen([]string{dir, "--nodes", "a,b", "--hosts", "db1.example,10.0.0.7", "--days", "2"}); err != nil {
		t.Fatalf("certgen = %v, want nil", err)
	}
	d := certs.Dir(dir)
	n, err := certs.LoadNode(d.Node("b"), time.Now())
	if err != nil {
		t.Fatalf("LoadNode(b) = %v, want nil", err)
	}
	for _, host := range []string{"127.0.0.1", "::1", "localhost", "db1.example", "10.0.0.7"} {
		if err := n.CheckHost(host); err != nil {
			t.Errorf("b's certificate: CheckHost(%s) = %v, want nil", host, err)
		}
	}
	if left := time.Until(n.Leaf().NotAfter); left > 49*time.Hour || left < 47*time.Hour {
		t.Errorf("--days 2: certificate valid for %v more, want about 48h", left)
	}
	if _, err := (certs.ClientFiles{CAFile: d.CA(), CertFile: d.ClientCert(), KeyFile: d.ClientKey()}).Config(); err != nil {
		t.Errorf("client certificate: Config = %v, want nil", err)
	}
	before, _ := os.ReadFile(d.CA())
	if err := runCertgen([]string{dir, "--nodes", "a,b,c"}); err != nil {
		t.Fatalf("second certgen = %v, want nil", err)
	}
	after, _ := os.ReadFile(d.CA())
	if string(before) != string(after) {
		t.Errorf("second certgen replaced the CA")
	}
	if _, err := certs.LoadNode(d.Node("c"), time.Now()); err != nil {
		t.Errorf("LoadNode(c, added later) = %v, want nil", err)
	}
	for _, bad := range [][]string{nil, {"--nodes", "a"}, {dir, "extra"}, {dir, "--days", "0"}, {dir, "--nodes", "ca"}} {
		if err := runCertgen(bad); err == nil {
			t.Errorf("certgen %q = nil, want an error", bad)
		}
	}
}
