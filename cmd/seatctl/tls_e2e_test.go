// This file proves TLS end to end on a real 3-node cluster of seatd
// processes started with --tls-cert, --tls-key, --tls-ca and --peer-mtls
// (certificates made in the test): every group elects a leader over the
// mutual-TLS raft port; seatctl status works with --cacert and fails with a
// hint without it or with another cluster's CA; a hold and a confirm sent to
// every node work over TLS gRPC, the non-leaders forwarding them to the
// leader over the Peer service; the same over https JSON, while plain http
// to that port is refused; /metrics is served over https and counts the
// forwards; the Peer service refuses a caller holding the admin token but no
// node certificate; the raft port closes a plaintext connection; and after a
// restart with --client-ca, seatctl needs --cert/--key and works with them.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

func TestTLSEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	dir := t.TempDir()
	tlsOpts := &proccluster.TLS{PeerMTLS: true}
	c := startCluster(t, ctx, dir, proccluster.Config{TLS: tlsOpts})
	var eps []string
	for _, n := range c.Nodes() {
		eps = append(eps, n.GRPCAddr)
	}
	ca := c.TLSDir().CA()
	sc := &seatctl{t: t, ctx: ctx, endpoints: strings.Join(eps, ","), tokenFile: c.AdminTokenPath(),
		flags: []string{"--cacert", ca}}

	// Leaders are elected over the mutual-TLS raft port.
	v := sc.status()
	if len(v.Nodes) != 3 || len(v.Groups) != e2eGroups {
		t.Fatalf("status over TLS = %d nodes, %d groups; want 3, %d", len(v.Nodes), len(v.Groups), e2eGroups)
	}
	for _, g := range v.Groups {
		if g.Leader == "" || len(g.Reports) != 3 {
			t.Fatalf("status over TLS: group %d leader %q, %d reports; want a leader and 3", g.Group, g.Leader, len(g.Reports))
		}
	}

	// Without --cacert, or with another cluster's CA, seatctl fails on one
	// line that says what to pass.
	otherDir := certs.Dir(filepath.Join(dir, "other"))
	if _, err := certs.MakeDir(otherDir, []string{"x"}, []string{"127.0.0.1"}, time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"no --cacert", nil, "--cacert"},
		{"another CA", []string{"--cacert", otherDir.CA()}, "unknown authority"},
	} {
		bad := *sc
		bad.flags, bad.endpoints = tc.flags, eps[0]
		_, errOut, code := bad.run("status", "--timeout", "2s")
		if code != exitFailure || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("seatctl status with %s = exit %d, stderr %q; want exit 1 and one line mentioning %q", tc.name, code, errOut, tc.want)
		}
	}

	showFile := filepath.Join(dir, "show.yaml")
	if err := os.WriteFile(showFile, []byte(e2eShowYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.ok("show", "create", showFile)
	group := shard.Map{Groups: e2eGroups}.GroupFor("e2e-show")
	leader := sc.status().group(group).Leader

	// A hold and a confirm through each node: two of them forward to the
	// group's leader over mutual TLS.
	for i, n := range c.Nodes() {
		one := *sc
		one.endpoints = n.GRPCAddr
		seat := fmt.Sprintf("A%d", i+1)
		holdID, token := one.hold(seat)
		one.ok("confirm", "e2e-show", holdID, "--client-id", "e2e", "--token", token, "--payment-ref", "tls-"+seat)
	}
	httpc := c.HTTPClient()
	for i, n := range c.Nodes() {
		httpsHoldAndConfirm(t, ctx, httpc, c.HTTPURL(n, ""), fmt.Sprintf("B%d", i+1))
	}
	if out := sc.ok("seatmap", "e2e-show"); !strings.Contains(out, "A  XXX.........") || !strings.Contains(out, "B  XXX.........") {
		t.Fatalf("seat map after the TLS holds and confirms:\n%s", out)
	}
	if got := peerForwards(t, ctx, httpc, c.HTTPURL(c.Node(leader), "/metrics")); got < 4 {
		t.Errorf("leader %s counted %v forwarded Propose and ProposeBatch calls over https /metrics, want at least 4 (2 nodes x hold+confirm, one at a time)", leader, got)
	}

	// Plain http to the https port is refused.
	if resp, err := http.Get("http://" + c.Nodes()[0].HTTPAddr + "/healthz"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain http GET /healthz on a TLS node = 200, want a refusal")
		}
	}

	// The Peer service wants a node certificate: the admin token and the
	// client certificate (same CA, client use only) are not enough.
	peerCallRefused(t, ctx, c, c.Nodes()[0].GRPCAddr)

	// The raft port closes a plaintext connection.
	raw, err := net.DialTimeout("tcp", c.Nodes()[0].RaftAddr, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	raw.Write([]byte("SLR1\x00\x00\x00\x00"))
	raw.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Errorf("plaintext on the raft port: Read = %v, want the node to close the connection", err)
	}
	raw.Close()

	clientCertRequired(t, ctx, c, tlsOpts, sc)
}

// httpsHoldAndConfirm holds seat over https JSON and confirms the hold.
func httpsHoldAndConfirm(t *testing.T, ctx context.Context, hc *http.Client, base, seat string) {
	t.Helper()
	var hold struct {
		HoldID    string `json:"hold_id"`
		HoldToken string `json:"hold_token"`
	}
	body := fmt.Sprintf(`{"seat_ids":[%q],"client_id":"web","request_id":"hold-%s"}`, seat, seat)
	postJSON(t, ctx, hc, base+"/v1/shows/e2e-show/holds", body, &hold)
	body = fmt.Sprintf(`{"hold_token":%q,"payment_ref":"pay-%s","client_id":"web","request_id":"confirm-%s"}`, hold.HoldToken, seat, seat)
	postJSON(t, ctx, hc, base+"/v1/shows/e2e-show/holds/"+hold.HoldID+":confirm", body, nil)
}

// postJSON posts body and wants 200, retrying 503s with the same body (the
// same request id) while a leader is elected.
func postJSON(t *testing.T, ctx context.Context, hc *http.Client, url, body string, out any) {
	t.Helper()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", url, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusServiceUnavailable && ctx.Err() == nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s = %d %s, want 200", url, resp.StatusCode, b)
		}
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("POST %s: decode %s: %v", url, b, err)
			}
		}
		return
	}
}

// peerForwardsRE matches the leader's count of forwarded calls: Propose,
// and ProposeBatch (which nodes forward through; a lone command is a batch
// of one).
var peerForwardsRE = regexp.MustCompile(`seatledger_grpc_requests_total\{[^}]*method="/seatledger.v1.Peer/Propose(Batch)?"[^}]*\} (\d+)`)

// peerForwards reads the forwarded calls a node served, from /metrics.
func peerForwards(t *testing.T, ctx context.Context, hc *http.Client, url string) float64 {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sum float64
	for _, m := range peerForwardsRE.FindAllStringSubmatch(string(b), -1) {
		if !strings.Contains(m[0], `code="OK"`) {
			continue
		}
		n, _ := strconv.ParseFloat(m[2], 64)
		sum += n
	}
	return sum
}

// peerCallRefused calls Peer/Propose with the admin token over TLS with the
// client certificate, and wants it refused for want of a node certificate.
func peerCallRefused(t *testing.T, ctx context.Context, c *proccluster.Cluster, addr string) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(c.ClientTLS())),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(c.AdminToken())))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = ledgerpb.NewPeerClient(conn).Propose(cctx, &ledgerpb.ProposeRequest{})
	if status.Code(err) != codes.Unauthenticated || !strings.Contains(err.Error(), "node certificate") {
		t.Errorf("Peer/Propose with the admin token and a client certificate = %v, want Unauthenticated for want of a node certificate", err)
	}
}

// clientCertRequired restarts the cluster with --client-ca and checks that
// seatctl then needs --cert/--key and works with them.
func clientCertRequired(t *testing.T, ctx context.Context, c *proccluster.Cluster, opts *proccluster.TLS, sc *seatctl) {
	t.Helper()
	for _, n := range c.Nodes() {
		if err := c.Stop(n.ID); err != nil {
			t.Fatal(err)
		}
	}
	opts.ClientCA = true
	for _, n := range c.Nodes() {
		if err := c.Restart(ctx, n.ID); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	noCert := *sc
	noCert.endpoints = c.Nodes()[0].GRPCAddr
	if _, errOut, code := noCert.run("status", "--timeout", "2s"); code != exitFailure || !strings.Contains(errOut, "--cert") {
		t.Errorf("seatctl status without --cert on a --client-ca cluster = exit %d, stderr %q; want exit 1 naming --cert", code, errOut)
	}
	withCert := *sc
	d := c.TLSDir()
	withCert.flags = append(append([]string(nil), sc.flags...), "--cert", d.ClientCert(), "--key", d.ClientKey())
	if v := withCert.status(); len(v.Nodes) != 3 {
		t.Errorf("seatctl status with --cert on a --client-ca cluster = %d nodes, want 3", len(v.Nodes))
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
