// This file proves the admin credential: an admin call without the token is
// 401 UNAUTHENTICATED, with another token 403, with the token allowed; a
// node without a configured token checks nothing; the Peer service is
// checked before a byte of its request is decoded (every method,
// ProposeBatch included) while booking methods need no token, and a request
// that cannot be decoded is INVALID_ARGUMENT, not Internal; and with peer
// mutual TLS the Peer service also wants a verified node certificate from
// the cluster CA (not another CA's, not a client certificate, not none).
package gateway

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestAdminToken(t *testing.T) {
	a := NewAuth("s3cret-token-0123456789")
	tests := []struct {
		name string
		ctx  context.Context
		code codes.Code
		http int
	}{
		{"no token", context.Background(), codes.Unauthenticated, http.StatusUnauthorized},
		{"another token", AdminContext(context.Background(), "guess"), codes.PermissionDenied, http.StatusForbidden},
		{"the token", AdminContext(context.Background(), "s3cret-token-0123456789"), codes.OK, http.StatusOK},
	}
	for _, tt := range tests {
		err := a.admin(tt.ctx)
		if status.Code(err) != tt.code {
			t.Errorf("admin(%s) = %v, want %v", tt.name, err, tt.code)
		}
		if err != nil && httpStatus(status.Convert(err)) != tt.http {
			t.Errorf("admin(%s) over HTTP = %d, want %d", tt.name, httpStatus(status.Convert(err)), tt.http)
		}
	}
	if err := NewAuth("").admin(context.Background()); err != nil {
		t.Errorf("admin() with no token configured = %v, want nil (auth off)", err)
	}
	var none *Auth
	if err := none.admin(context.Background()); err != nil {
		t.Errorf("admin() with no Auth = %v, want nil", err)
	}
}

func TestPeerCheckedBeforeDecode(t *testing.T) {
	a := NewAuth("s3cret-token-0123456789")
	codec := newRequestCodec()
	peerSvc := codec.guard(&ledgerpb.Peer_ServiceDesc, a.peer)
	for _, m := range peerSvc.Methods {
		decoded := false
		dec := func(any) error { decoded = true; return nil }
		_, err := m.Handler(nil, context.Background(), dec, nil)
		if status.Code(err) != codes.Unauthenticated || decoded {
			t.Errorf("Peer/%s without the token = %v, decoded %v; want Unauthenticated before decoding", m.MethodName, err, decoded)
		}
	}
	// With the token the request is decoded; this one does not decode.
	bad := func(m any) error {
		return codec.Unmarshal(mem.BufferSlice{mem.SliceBuffer([]byte{0xff, 0xff, 0xff})}, m)
	}
	_, err := peerSvc.Methods[0].Handler(nil, AdminContext(context.Background(), "s3cret-token-0123456789"), bad, nil)
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Peer/%s with the token and an undecodable request = %v, want InvalidArgument", peerSvc.Methods[0].MethodName, err)
	}
	// Booking needs no token; an undecodable request is the caller's fault.
	booking := codec.guard(&ledgerpb.Booking_ServiceDesc, nil)
	if _, err := booking.Methods[0].Handler(nil, context.Background(), bad, nil); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Booking/%s with an undecodable request = %v, want InvalidArgument", booking.Methods[0].MethodName, err)
	} else if httpStatus(status.Convert(err)) != http.StatusBadRequest {
		t.Errorf("undecodable request over HTTP = %d, want 400", httpStatus(status.Convert(err)))
	}
}

// tlsPeer returns ctx as a gRPC server sees a TLS caller whose handshake
// verified chains.
func tlsPeer(ctx context.Context, chains [][]*x509.Certificate) context.Context {
	return peer.NewContext(ctx, &peer.Peer{AuthInfo: credentials.TLSInfo{State: tls.ConnectionState{VerifiedChains: chains}}})
}

func TestPeerInterceptorRequiresPeerCert(t *testing.T) {
	now := time.Now()
	cluster, err := certs.NewAuthority("cluster CA", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewAuthority("client CA", now.Add(-time.Hour), now.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	const token = "s3cret-token-0123456789"
	a := NewAuth(token)
	a.RequirePeerCert([]*x509.Certificate{cluster.Cert})
	withToken := AdminContext(context.Background(), token)
	node := &x509.Certificate{Raw: []byte("node"), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth}}
	client := &x509.Certificate{Raw: []byte("client"), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	tests := []struct {
		name string
		ctx  context.Context
		code codes.Code
	}{
		{"token, plaintext", withToken, codes.Unauthenticated},
		{"token, TLS without a certificate", tlsPeer(withToken, nil), codes.Unauthenticated},
		{"token, certificate from another CA", tlsPeer(withToken, [][]*x509.Certificate{{node, other.Cert}}), codes.Unauthenticated},
		{"token, client certificate from the cluster CA", tlsPeer(withToken, [][]*x509.Certificate{{client, cluster.Cert}}), codes.Unauthenticated},
		{"node certificate, no token", tlsPeer(context.Background(), [][]*x509.Certificate{{node, cluster.Cert}}), codes.Unauthenticated},
		{"node certificate and token", tlsPeer(withToken, [][]*x509.Certificate{{node, cluster.Cert}}), codes.OK},
	}
	for _, tt := range tests {
		err := a.peer(tt.ctx)
		if status.Code(err) != tt.code {
			t.Errorf("Peer/Propose with %s = %v, want %v", tt.name, err, tt.code)
		}
	}
	err = a.peer(withToken)
	if reason := reasonOf(status.Convert(err)); reason != "PEER_CERT_REQUIRED" {
		t.Errorf("Peer/Propose without a certificate: reason %q, want PEER_CERT_REQUIRED", reason)
	}
}
