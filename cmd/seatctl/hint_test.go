// This file proves seatctl's etcdctl habits: -w and --write-out set the
// output format as -o does; a call refused for want of the admin token says
// which flag or variable gives it (and a refused token where it came from);
// and a node's HTTP port given as an endpoint gets a hint to use the gRPC
// port, not the TLS hint that gRPC's "server preface" error would suggest,
// both from a real HTTP server on loopback and from the messages gRPC gives
// over TLS.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestWriteOutAliasesOutput(t *testing.T) {
	for _, args := range [][]string{{"-w", "json"}, {"--write-out", "json"}, {"--write-out=json"}, {"-o", "json"}} {
		a := &app{}
		root := newRootCmd(a, func(string) string { return "" })
		if err := root.ParseFlags(args); err != nil {
			t.Fatalf("seatctl %v: %v", args, err)
		}
		if err := a.validate(); err != nil || !a.json() {
			t.Errorf("seatctl %v: output %q, validate %v; want json", args, a.output, err)
		}
	}
}

func TestHint(t *testing.T) {
	plain := &app{}
	withToken := &app{token: "0123456789abcdef"}
	withFile := &app{token: "0123456789abcdef", tokenFile: "/etc/seatd/admin.token"}
	withCA := &app{tls: &tls.Config{}}
	const http1 = `connection error: desc = "error reading server preface: http2: failed reading the frame payload: http2: frame too large, note that the frame header looked like an HTTP/1.1 header"`
	cases := []struct {
		name string
		a    *app
		msg  string
		want string // a fragment of the hint; "" for none
	}{
		{"HTTP port, plaintext", plain, "UNAVAILABLE: " + http1, "--grpc address"},
		{"HTTP port, not the TLS hint", plain, http1, "seatctl speaks gRPC"},
		{"HTTPS port", withCA, `UNIMPLEMENTED: unexpected HTTP status code received from server: 404 (Not Found); transport: received unexpected content-type "text/plain"`, "HTTP port"},
		{"HTTPS port without h2", withCA, "credentials: cannot check peer: missing selected ALPN property", "HTTP port"},
		{"no token", plain, "no endpoint answered Status: 127.0.0.1:9090: UNAUTHENTICATED: this call needs the cluster's admin token", "--admin-token-file FILE"},
		{"no token, names the variable", plain, "rpc error: code = Unauthenticated desc = this call needs the cluster's admin token", adminTokenEnv},
		{"wrong token from a file", withFile, "ADMIN_TOKEN_INVALID: the admin token is not this cluster's", "--admin-token-file /etc/seatd/admin.token"},
		{"wrong token from the flag or env", withToken, "ADMIN_TOKEN_INVALID: the admin token is not this cluster's", "--admin-token or " + adminTokenEnv},
		{"TLS still hinted", plain, `connection error: desc = "error reading server preface: EOF"`, "--cacert"},
		{"nothing to say", withToken, "SEATS_TAKEN: seats taken", ""},
	}
	for _, tc := range cases {
		got := tc.a.hint(tc.msg)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: hint(%q) = %q, want a hint containing %q", tc.name, tc.msg, got, tc.want)
		}
	}
}

// TestHTTPPortHint points seatctl at a real HTTP/1.1 server, as a node's
// --http port is: the error names the gRPC port and not --cacert.
func TestHTTPPortHint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.NotFoundHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--endpoints", ln.Addr().String(), "--timeout", "2s", "status"}, &out, &errOut, func(string) string { return "" })
	if msg := errOut.String(); code != exitFailure || !strings.Contains(msg, "HTTP port") || strings.Contains(msg, "--cacert") {
		t.Fatalf("seatctl status at an HTTP port = exit %d, stderr %q; want exit 1 with the HTTP port hint, not the TLS one", code, msg)
	}
}
