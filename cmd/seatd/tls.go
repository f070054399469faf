package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// certExpiryWarning is how close to its expiry a node's certificate makes
// the start log a warning: time to renew it on every node.
const certExpiryWarning = 30 * 24 * time.Hour

// loadServeTLS loads and checks --tls-* files before any port is bound,
// including that the certificate names the hosts this node advertises in
// --peers (its peers verify it against them). nil means plaintext.
func loadServeTLS(files certs.NodeFiles, id string, peers []raftnode.Peer, now time.Time) (*certs.Node, error) {
	n, err := certs.LoadNode(files, now)
	if err != nil || n == nil {
		return nil, err
	}
	for _, p := range peers {
		if p.ID != id {
			continue
		}
		for _, addr := range []string{p.RaftAddr, p.GRPCAddr} {
			if err := n.CheckHost(certs.HostOf(addr)); err != nil {
				return nil, fmt.Errorf("--tls-cert %s: peers reach node %s at %s: %w", files.CertFile, id, addr, err)
			}
		}
	}
	return n, nil
}

// logTLS says at start what the node's TLS protects, and warns of a
// certificate close to expiry.
func logTLS(logger *slog.Logger, n *certs.Node, now time.Time) {
	if n == nil {
		logger.Info("TLS off: every port is plaintext (seatd serve --tls-cert/--tls-key/--tls-ca to turn it on)")
		return
	}
	leaf := n.Leaf()
	logger.Info("TLS on: raft, gRPC and HTTP ports are encrypted", "subject", leaf.Subject.CommonName,
		"not_after", leaf.NotAfter.UTC().Format(time.RFC3339), "peer_mtls", n.PeerMTLS())
	if !n.PeerMTLS() {
		logger.Warn("peer traffic is encrypted but peers are not authenticated by certificate: anyone who reaches the raft port can speak raft (add --peer-mtls)")
	}
	if left := leaf.NotAfter.Sub(now); left < certExpiryWarning {
		logger.Warn("the TLS certificate expires soon: renew it on every node", "expires_in", left.Round(time.Hour).String())
	}
}

// raftTLS is the raft port's TLS, nil without TLS.
func raftTLS(n *certs.Node) *raftnode.MuxTLS {
	if n == nil {
		return nil
	}
	return &raftnode.MuxTLS{Server: n.RaftServer(), Client: n.PeerClient()}
}

// grpcTLS makes forwarding to peers use TLS, makes the Peer service want a
// node certificate under --peer-mtls, and returns the gRPC server's TLS
// option. It changes nothing without TLS.
func grpcTLS(n *certs.Node, router *shard.Router, auth *gateway.Auth) []grpc.ServerOption {
	if n == nil {
		return nil
	}
	router.SetPeerTLS(n.PeerClient())
	if n.PeerMTLS() {
		auth.RequirePeerCert(n.PeerCAs())
	}
	return []grpc.ServerOption{grpc.Creds(credentials.NewTLS(n.GRPCServer()))}
}

// certgenHostsDefault are the names every certificate carries, so a
// cluster on one machine works without --hosts.
var certgenHostsDefault = []string{"127.0.0.1", "::1", "localhost"}

// runCertgen writes a CA and certificates into a directory:
// seatd certgen DIR [--nodes n1,n2,n3] [--hosts h1,h2] [--days N].
func runCertgen(args []string) error {
	fs := flag.NewFlagSet("seatd certgen", flag.ContinueOnError)
	nodes := fs.String("nodes", "n1,n2,n3", "node names, comma-separated: one certificate each (NODE.pem, NODE-key.pem)")
	hosts := fs.String("hosts", "", "extra DNS names or IP addresses every node certificate is valid for, comma-separated (always: "+strings.Join(certgenHostsDefault, ", ")+")")
	days := fs.Int("days", 365, "validity of the node and client certificates, in days")
	if len(args) > 0 && helpArgs(args[:1]) {
		fs.SetOutput(os.Stdout)
		fmt.Println("usage: seatd certgen DIR [--nodes n1,n2,n3] [--hosts HOST,...] [--days N]")
		fs.PrintDefaults()
		return flag.ErrHelp
	}
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return fmt.Errorf("usage: seatd certgen DIR [--nodes n1,n2,n3] [--hosts HOST,...] [--days N]")
	}
	dir := args[0]
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 || *days < 1 {
		return fmt.Errorf("usage: seatd certgen DIR [--nodes n1,n2,n3] [--hosts HOST,...] [--days N>=1]")
	}
	all := append([]string(nil), certgenHostsDefault...)
	all = append(all, splitComma(*hosts)...)
	d := certs.Dir(dir)
	wrote, err := certs.MakeDir(d, splitComma(*nodes), all, time.Now(), time.Duration(*days)*24*time.Hour)
	for _, f := range wrote {
		fmt.Println("wrote", f)
	}
	if err != nil {
		return err
	}
	if len(wrote) == 0 {
		fmt.Println("nothing to do: every file exists (delete one to make it again)")
	}
	fmt.Printf(`
new certificates are valid for: %s
each node: --tls-cert %s --tls-key %s --tls-ca %s [--peer-mtls]
seatctl:   --cacert %s   (and with seatd --client-ca %s: --cert %s --key %s)
%s signs new certificates: keep it off the nodes.
`, strings.Join(all, ", "), d.Cert("NODE"), d.Key("NODE"), d.CA(), d.CA(), d.CA(), d.ClientCert(), d.ClientKey(), d.CAKey())
	return nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
