// This file proves that seatctl turns the transport errors of a TLS mismatch
// into the flag to pass: plaintext against a TLS node asks for --cacert, an
// unknown CA names --cacert, TLS against a plaintext node says to drop the
// flags, a refused or missing client certificate names --cert/--key, and
// errors unrelated to TLS get no hint.
package main

import (
	"crypto/tls"
	"strings"
	"testing"
)

func TestTLSHint(t *testing.T) {
	plain := &app{}
	withCA := &app{tls: &tls.Config{}}
	withCert := &app{tls: &tls.Config{Certificates: []tls.Certificate{{}}}}
	cases := []struct {
		name string
		a    *app
		msg  string
		want string // a fragment of the hint; "" for none
	}{
		{"plaintext to TLS", plain, `connection error: desc = "error reading server preface: EOF"`, "--cacert"},
		{"plaintext to TLS, reset", plain, "read: connection reset by peer", "--cacert"},
		{"unknown CA", withCA, "x509: certificate signed by unknown authority", "--cacert ca.pem"},
		{"TLS to plaintext", withCA, "tls: first record does not look like a TLS handshake", "drop --cacert"},
		{"client certificate missing", withCA, "write: broken pipe", "--cert and --key"},
		{"client certificate missing, TLS alert", withCA, "remote error: tls: certificate required", "--cert and --key"},
		{"client certificate refused", withCert, "remote error: tls: unknown certificate authority", "signed by its --client-ca"},
		{"wrong host", withCA, "x509: certificate is valid for 127.0.0.1, not 10.0.0.1", "address in --peers"},
		{"not TLS", withCA, "NOT_LEADER: group 3 has no leader", ""},
		{"not TLS, plaintext", plain, "SEATS_TAKEN: seats taken", ""},
	}
	for _, tc := range cases {
		got := tc.a.tlsHint(tc.msg)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: tlsHint(%q) = %q, want a hint containing %q", tc.name, tc.msg, got, tc.want)
		}
	}
}
