// Tests in this file prove that a node's and a client's TLS flags are
// checked before anything listens: impossible combinations, unreadable,
// expired, not-yet-valid and mismatched files and a certificate from another
// CA are errors naming the flag (never a panic); that MakeDir's output loads
// and is kept on a second run; that the configurations ask for client
// certificates exactly where the flags say; and that the Peer service's root
// check tells the cluster CA from another.
package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var testNow = time.Date(2026, 5, 2, 17, 0, 0, 0, time.UTC)

// testDir makes a certgen directory with nodes n1 and n2 for 127.0.0.1 and
// localhost.
func testDir(t *testing.T) Dir {
	t.Helper()
	d := Dir(t.TempDir())
	if _, err := MakeDir(d, []string{"n1", "n2"}, []string{"127.0.0.1", "localhost"}, testNow, 24*time.Hour); err != nil {
		t.Fatalf("MakeDir = %v, want nil", err)
	}
	return d
}

func TestNodeFilesValidate(t *testing.T) {
	cases := []struct {
		name  string
		files NodeFiles
		want  error
	}{
		{"plaintext", NodeFiles{}, nil},
		{"cert and key", NodeFiles{CertFile: "c", KeyFile: "k"}, nil},
		{"with CA", NodeFiles{CertFile: "c", KeyFile: "k", CAFile: "ca"}, nil},
		{"mtls", NodeFiles{CertFile: "c", KeyFile: "k", CAFile: "ca", PeerMTLS: true}, nil},
		{"client CA", NodeFiles{CertFile: "c", KeyFile: "k", CAFile: "ca", ClientCAFile: "cca"}, nil},
		{"cert without key", NodeFiles{CertFile: "c"}, ErrCertWithoutKey},
		{"key without cert", NodeFiles{KeyFile: "k"}, ErrKeyWithoutCert},
		{"CA alone", NodeFiles{CAFile: "ca"}, ErrCAWithoutCert},
		{"mtls without CA", NodeFiles{CertFile: "c", KeyFile: "k", PeerMTLS: true}, ErrMTLSWithoutCA},
		{"mtls alone", NodeFiles{PeerMTLS: true}, ErrMTLSWithoutCA},
		{"client CA without CA", NodeFiles{CertFile: "c", KeyFile: "k", ClientCAFile: "cca"}, ErrClientCAWithoutCA},
	}
	for _, tc := range cases {
		if got := tc.files.Validate(); !errors.Is(got, tc.want) {
			t.Errorf("%s: Validate() = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestClientFilesValidate(t *testing.T) {
	cases := []struct {
		name  string
		files ClientFiles
		want  error
	}{
		{"plaintext", ClientFiles{}, nil},
		{"CA only", ClientFiles{CAFile: "ca"}, nil},
		{"cert and key", ClientFiles{CertFile: "c", KeyFile: "k"}, nil},
		{"cert without key", ClientFiles{CAFile: "ca", CertFile: "c"}, ErrClientCertWithoutKey},
		{"key without cert", ClientFiles{KeyFile: "k"}, ErrClientKeyWithoutCert},
	}
	for _, tc := range cases {
		if got := tc.files.Validate(); !errors.Is(got, tc.want) {
			t.Errorf("%s: Validate() = %v, want %v", tc.name, got, tc.want)
		}
	}
	if c, err := (ClientFiles{}).Config(); c != nil || err != nil {
		t.Errorf("ClientFiles{}.Config() = (%v, %v), want plaintext (nil, nil)", c, err)
	}
}

func TestLoadNodeRejectsBadFiles(t *testing.T) {
	d := testDir(t)
	other := testDir(t) // another cluster's CA and certificates
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	expired, notYet := filepath.Join(t.TempDir(), "old"), filepath.Join(t.TempDir(), "new")
	ca, err := LoadAuthority(d.CA(), d.CAKey())
	if err != nil {
		t.Fatalf("LoadAuthority = %v, want nil", err)
	}
	for path, from := range map[string]time.Time{expired: testNow.Add(-48 * time.Hour), notYet: testNow.Add(48 * time.Hour)} {
		iss, err := ca.Issue(Request{Name: "n9", Hosts: []string{"127.0.0.1"}, NotBefore: from, NotAfter: from.Add(time.Hour), Usage: UsageNode})
		if err != nil {
			t.Fatalf("Issue = %v, want nil", err)
		}
		if err := iss.Write(path+".pem", path+"-key.pem"); err != nil {
			t.Fatal(err)
		}
	}
	clientOnly := NodeFiles{CertFile: d.ClientCert(), KeyFile: d.ClientKey(), CAFile: d.CA()}

	cases := []struct {
		name  string
		files NodeFiles
		want  string // a fragment the error must contain
	}{
		{"missing cert", NodeFiles{CertFile: "/nonexistent.pem", KeyFile: d.Key("n1")}, "--tls-cert /nonexistent.pem"},
		{"garbage cert", NodeFiles{CertFile: garbage, KeyFile: d.Key("n1")}, "--tls-cert " + garbage},
		{"key of another node", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n2")}, "private key does not match"},
		{"expired", NodeFiles{CertFile: expired + ".pem", KeyFile: expired + "-key.pem"}, "expired at"},
		{"not yet valid", NodeFiles{CertFile: notYet + ".pem", KeyFile: notYet + "-key.pem"}, "not valid before"},
		{"missing CA", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), CAFile: "/nonexistent-ca.pem"}, "--tls-ca"},
		{"garbage CA", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), CAFile: garbage}, "no PEM certificate"},
		{"another cluster's CA", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), CAFile: other.CA()}, "does not verify against the CA"},
		{"client-only certificate", clientOnly, "server authentication"},
		{"missing client CA", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), CAFile: d.CA(), ClientCAFile: "/nonexistent"}, "--client-ca"},
		{"mtls without CA", NodeFiles{CertFile: d.Cert("n1"), KeyFile: d.Key("n1"), PeerMTLS: true}, "--peer-mtls needs --tls-ca"},
	}
	for _, tc := range cases {
		n, err := LoadNode(tc.files, testNow)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: LoadNode = (%v, %v), want an error containing %q", tc.name, n, err, tc.want)
		}
	}
}

func TestLoadNodeConfigs(t *testing.T) {
	d := testDir(t)
	if n, err := LoadNode(NodeFiles{}, testNow); n != nil || err != nil {
		t.Fatalf("LoadNode(plaintext) = (%v, %v), want (nil, nil)", n, err)
	}
	cases := []struct {
		name                  string
		files                 NodeFiles
		raft, grpc, http      tls.ClientAuthType
		grpcTrustsClientCerts bool
	}{
		{"server TLS", d.Node("n1"), tls.NoClientCert, tls.NoClientCert, tls.NoClientCert, false},
		{"peer mTLS", withMTLS(d.Node("n1")), tls.RequireAndVerifyClientCert, tls.VerifyClientCertIfGiven, tls.NoClientCert, true},
		{"client CA", withClientCA(d.Node("n1"), d.CA()), tls.NoClientCert, tls.RequireAndVerifyClientCert, tls.RequireAndVerifyClientCert, true},
	}
	for _, tc := range cases {
		n, err := LoadNode(tc.files, testNow)
		if err != nil {
			t.Fatalf("%s: LoadNode = %v, want nil", tc.name, err)
		}
		raft, grpc, http := n.RaftServer(), n.GRPCServer(), n.HTTPServer()
		if raft.ClientAuth != tc.raft || grpc.ClientAuth != tc.grpc || http.ClientAuth != tc.http {
			t.Errorf("%s: client auth raft/grpc/http = %v/%v/%v, want %v/%v/%v", tc.name,
				raft.ClientAuth, grpc.ClientAuth, http.ClientAuth, tc.raft, tc.grpc, tc.http)
		}
		if raft.MinVersion != tls.VersionTLS13 || n.PeerClient().MinVersion != tls.VersionTLS13 || grpc.MinVersion != tls.VersionTLS12 {
			t.Errorf("%s: min versions raft %x, peer client %x, grpc %x; want 1.3, 1.3, 1.2", tc.name,
				raft.MinVersion, n.PeerClient().MinVersion, grpc.MinVersion)
		}
		if got := grpc.ClientCAs != nil; got != tc.grpcTrustsClientCerts {
			t.Errorf("%s: gRPC ClientCAs set = %v, want %v", tc.name, got, tc.grpcTrustsClientCerts)
		}
		if err := n.CheckHost("127.0.0.1"); err != nil {
			t.Errorf("%s: CheckHost(127.0.0.1) = %v, want nil", tc.name, err)
		}
		if err := n.CheckHost("10.1.2.3"); !errors.Is(err, ErrNotForHost) || !strings.Contains(err.Error(), "localhost") {
			t.Errorf("%s: CheckHost(10.1.2.3) = %v, want ErrNotForHost listing the names", tc.name, err)
		}
	}
}

func withMTLS(f NodeFiles) NodeFiles { f.PeerMTLS = true; return f }

func withClientCA(f NodeFiles, ca string) NodeFiles { f.ClientCAFile = ca; return f }

func TestMakeDirKeepsExistingFiles(t *testing.T) {
	d := testDir(t)
	before, err := os.ReadFile(d.Cert("n1"))
	if err != nil {
		t.Fatal(err)
	}
	// A later run adds n3 from the same CA and keeps the rest.
	wrote, err := MakeDir(d, []string{"n1", "n3"}, []string{"127.0.0.1"}, testNow, time.Hour)
	if err != nil {
		t.Fatalf("second MakeDir = %v, want nil", err)
	}
	if want := []string{d.Cert("n3"), d.Key("n3")}; !slices.Equal(wrote, want) {
		t.Errorf("second MakeDir wrote %v, want %v", wrote, want)
	}
	after, _ := os.ReadFile(d.Cert("n1"))
	if string(before) != string(after) {
		t.Errorf("second MakeDir replaced n1.pem")
	}
	if _, err := LoadNode(d.Node("n3"), testNow); err != nil {
		t.Errorf("LoadNode(n3 from the kept CA) = %v, want nil", err)
	}
	if fi, err := os.Stat(d.Key("n3")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("n3-key.pem mode = %v (%v), want 0600", fi.Mode().Perm(), err)
	}
	for _, bad := range [][]string{nil, {"ca"}, {"client"}, {"../x"}} {
		if _, err := MakeDir(d, bad, []string{"127.0.0.1"}, testNow, time.Hour); !errors.Is(err, ErrBadRequest) {
			t.Errorf("MakeDir(nodes %q) = %v, want ErrBadRequest", bad, err)
		}
	}
}

func TestPeerChain(t *testing.T) {
	d, other := testDir(t), testDir(t)
	read := func(path string) *x509.Certificate {
		t.Helper()
		c, err := readCerts(path)
		if err != nil {
			t.Fatal(err)
		}
		return c[0]
	}
	ca, otherCA := []*x509.Certificate{read(d.CA())}, []*x509.Certificate{read(other.CA())}
	node, client := read(d.Cert("n1")), read(d.ClientCert())
	cases := []struct {
		name   string
		chains [][]*x509.Certificate
		cas    []*x509.Certificate
		want   bool
	}{
		{"node certificate from the CA", [][]*x509.Certificate{{node, ca[0]}}, ca, true},
		{"node certificate, another CA trusted", [][]*x509.Certificate{{node, ca[0]}}, otherCA, false},
		{"client certificate from the CA", [][]*x509.Certificate{{client, ca[0]}}, ca, false},
		{"no chain", nil, ca, false},
		{"empty chain", [][]*x509.Certificate{{}}, ca, false},
	}
	for _, tc := range cases {
		if got := PeerChain(tc.chains, tc.cas); got != tc.want {
			t.Errorf("PeerChain(%s) = %v, want %v", tc.name, got, tc.want)
		}
	}
}
