package gateway

import (
	"context"
	"crypto/subtle"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

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

// AdminTokenLenMin bounds how short a configured admin token may be.
const AdminTokenLenMin = 16

// Auth holds the node's admin token; the zero value checks nothing.
type Auth struct{ token string }

// NewAuth checks nothing when token is empty.
func NewAuth(token string) *Auth { return &Auth{token: token} }

// SetAuth sets the admin credential of every admin call the server and the
// services made with it serve; call before serving.
func (s *Server) SetAuth(a *Auth) { s.auth = a }

// admin and catalog make the services that share s's admin credential.
func (s *Server) admin(router *shard.Router) *Admin {
	a := NewAdmin(router)
	a.auth = s.auth
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

// bearer returns the token of the incoming authorization metadata.
func bearer(ctx context.Context) (string, bool) {
	md, _ := metadata.FromIncomingContext(ctx)
	for _, v := range md.Get("authorization") {
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

// peerMethodPrefix names the internal service nodes forward through.
const peerMethodPrefix = "/seatledger.v1.Peer/"

// peerAuthUnary and peerAuthStream guard the Peer service: it takes raw
// commands for any group, so only nodes (holding the token) may call it.
func (a *Auth) peerAuthUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	if strings.HasPrefix(info.FullMethod, peerMethodPrefix) {
		if err := a.admin(ctx); err != nil {
			return nil, err
		}
	}
	return h(ctx, req)
}

func (a *Auth) peerAuthStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	if strings.HasPrefix(info.FullMethod, peerMethodPrefix) {
		if err := a.admin(ss.Context()); err != nil {
			return err
		}
	}
	return h(srv, ss)
}
