package gateway

import (
	"context"
	"crypto/subtle"
	"crypto/x509"
	"strings"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/shard"
)

// Admin credential. Calls that change the cluster or the catalog (the Admin
// service, CreateShow, the catalog's create and schedule calls) and the
// internal Peer service require the cluster's admin token, presented as
// "authorization: Bearer <token>" (gRPC metadata, or the HTTP header, which
// grpc-gateway passes on as metadata). Booking calls need none: a hold is
// protected by its own token, and fans have no cluster credential. The same
// token authenticates nodes to each other when they forward (Peer), so every
// node must be started with the same one. An empty token turns the check
// off, for test clusters started with --insecure-no-auth.
//
// Backend credential. Reads that reveal who owns a hold or what was paid
// (GetHold's client_id and payment_ref, ListBookings) are the booking
// site's backend's business, not a fan's: they need the hold's own token,
// or a backend credential as "authorization: Bearer <key>". The backend
// key (seatd serve --backend-key-file) is that credential, as seats.io's
// secret key is; the admin token also counts, so operators (seatctl) and
// the fault harness read everything. The backend key is separate from the
// admin token because a booking site's servers face the internet: a leaked
// backend key exposes bookings, never the Admin or Peer services.

// AdminTokenLenMin bounds how short a configured admin token may be.
const AdminTokenLenMin = 16

// Auth holds the node's admin token and, with peer mutual TLS, the CAs a
// Peer caller's certificate must chain to; the zero value checks nothing.
// Set before serving and read-only afterwards.
type Auth struct {
	token string
	// backendKey, if set, is a second bearer credential that allows the
	// private reads (backend) but no admin call.
	backendKey string
	// peerCAs, if set, make the Peer service require a client certificate
	// verified by the TLS handshake and rooted in one of them.
	peerCAs []*x509.Certificate
}

// NewAuth checks nothing when token is empty.
func NewAuth(token string) *Auth { return &Auth{token: token} }

// SetBackendKey sets the backend key (see above); call before serving.
func (a *Auth) SetBackendKey(key string) { a.backendKey = key }

// RequirePeerCert makes the Peer service refuse callers whose TLS client
// certificate is not a node certificate chaining to one of cas (seatd serve
// --peer-mtls). The
// gRPC port also serves the public API, so it cannot require a certificate
// of every caller; this check does it for the one service only nodes call.
// The admin token is still required on top. Call before serving.
func (a *Auth) RequirePeerCert(cas []*x509.Certificate) { a.peerCAs = cas }

// SetAuth sets the admin credential of every admin call the server and the
// services made with it serve; call before serving.
func (s *Server) SetAuth(a *Auth) { s.auth = a }

// admin and catalog make the services that share s's admin credential.
func (s *Server) admin(router *shard.Router) *Admin {
	a := NewAdmin(router)
	a.auth, a.registry = s.auth, s.registry
	return a
}

func (s *Server) catalog(router *shard.Router) *Catalog {
	c := NewCatalog(router)
	c.auth = s.auth
	return c
}

// admin reports an error unless ctx carries the admin token: 401
// UNAUTHENTICATED without one, 403 PERMISSION_DENIED with another.
func (a *Auth) admin(ctx context.Context) error {
	if a == nil || a.token == "" {
		return nil
	}
	got, ok := bearer(ctx)
	if !ok {
		return newStatus("UNAUTHENTICATED", "this call needs the cluster's admin token: authorization: Bearer <token>")
	}
	if subtle.ConstantTimeCompare([]byte(got), []byte(a.token)) != 1 {
		return newStatus("ADMIN_TOKEN_INVALID", "the admin token is not this cluster's")
	}
	return nil
}

// open reports whether no credential is configured (--insecure-no-auth):
// then every read is answered in full.
func (a *Auth) open() bool { return a == nil || (a.token == "" && a.backendKey == "") }

// backend reports whether ctx carries a backend credential (the backend
// key or the admin token): ok false without a bearer token, an error with
// one that is neither. With no credential configured anyone is a backend.
func (a *Auth) backend(ctx context.Context) (ok bool, err error) {
	if a.open() {
		return true, nil
	}
	got, present := bearer(ctx)
	if !present {
		return false, nil
	}
	for _, k := range []string{a.token, a.backendKey} {
		if k != "" && subtle.ConstantTimeCompare([]byte(got), []byte(k)) == 1 {
			return true, nil
		}
	}
	return false, newStatus("CREDENTIAL_INVALID", "the bearer token is neither this cluster's backend key nor its admin token")
}

// client reports an error unless ctx carries a backend credential or
// proof proves client (proof.go): what listing a client's bookings needs.
func (a *Auth) client(ctx context.Context, client, proof string, now time.Time) error {
	ok, err := a.backend(ctx)
	if ok || err != nil {
		return err
	}
	if proof == "" {
		return newStatus("CREDENTIAL_REQUIRED", "listing a client's bookings needs the backend key (authorization: Bearer <key>) or the client's client_proof")
	}
	if err := checkClientProof(a.backendKey, client, proof, now); err != nil {
		return newStatus("CREDENTIAL_INVALID", err.Error())
	}
	return nil
}

// bearer returns the token of the incoming authorization metadata.
func bearer(ctx context.Context) (string, bool) {
	for _, v := range metadata.ValueFromIncomingContext(ctx, "authorization") {
		if t, ok := strings.CutPrefix(v, "Bearer "); ok {
			return t, true
		}
	}
	return "", false
}

// AdminContext returns ctx carrying token as an incoming credential, for
// in-process callers of admin methods (seatd dev seeding its demo data).
func AdminContext(ctx context.Context, token string) context.Context {
	return metadata.NewIncomingContext(ctx, metadata.Pairs("authorization", "Bearer "+token))
}

// peerCheck is what the Peer service checks before it decodes a request
// (decode.go): it takes raw commands for any group, so only nodes (holding
// the token, and with peer mutual TLS a node certificate) of this node's
// cluster (shard/cluster.go) may call it.
func (a *Auth) peerCheck(router *shard.Router) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := a.peer(ctx); err != nil {
			return err
		}
		if err := router.CheckPeerCall(ctx); err != nil {
			return peerClusterError(err)
		}
		return nil
	}
}

// peer checks a Peer service caller: the certificate first (a caller
// without one learns nothing about the token), then the admin token.
func (a *Auth) peer(ctx context.Context) error {
	if a != nil && a.peerCAs != nil && !peerCertOK(ctx, a.peerCAs) {
		return newStatus("PEER_CERT_REQUIRED", "the Peer service needs a node certificate signed by the cluster CA (--peer-mtls)")
	}
	return a.admin(ctx)
}

// peerCertOK reports whether the connection's TLS handshake verified a node
// certificate (one that also allows server authentication) chaining to one
// of cas. The handshake did the signature checks; this only looks at the
// chain, so it costs no crypto per call.
func peerCertOK(ctx context.Context, cas []*x509.Certificate) bool {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return false
	}
	info, ok := p.AuthInfo.(credentials.TLSInfo)
	return ok && certs.PeerChain(info.State.VerifiedChains, cas)
}
