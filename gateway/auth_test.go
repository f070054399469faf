// This file proves the admin credential: an admin call without the token is
// 401 UNAUTHENTICATED, with another token 403, with the token allowed; a
// node without a configured token checks nothing; the Peer service is
// guarded by the interceptor while booking methods pass through it.
package gateway

import (
	"context"
	"net/http"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

func TestPeerInterceptor(t *testing.T) {
	a := NewAuth("s3cret-token-0123456789")
	ok := func(context.Context, any) (any, error) { return "served", nil }
	if _, err := a.peerAuthUnary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/seatledger.v1.Peer/Propose"}, ok); status.Code(err) != codes.Unauthenticated {
		t.Errorf("Peer/Propose without the token = %v, want Unauthenticated", err)
	}
	if r, err := a.peerAuthUnary(AdminContext(context.Background(), "s3cret-token-0123456789"), nil,
		&grpc.UnaryServerInfo{FullMethod: "/seatledger.v1.Peer/Propose"}, ok); err != nil || r != "served" {
		t.Errorf("Peer/Propose with the token = %v, %v, want served", r, err)
	}
	if r, err := a.peerAuthUnary(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/seatledger.v1.Booking/Hold"}, ok); err != nil || r != "served" {
		t.Errorf("Booking/Hold without a token = %v, %v, want served (fans need no admin token)", r, err)
	}
}
