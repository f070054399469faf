// This file proves the private reads (auth.go, "Backend credential"): GetHold
// without a credential answers the public fields only and says so; with the
// hold's token, the backend key or the admin token it answers client_id and
// payment_ref (the hold token whatever bearer comes with it); a wrong token,
// or a wrong bearer without a token, is refused, never answered in part;
// and a node with no credential configured answers everything. Listing a
// client's bookings needs the backend key, the admin token or that client's
// unexpired proof, made with the backend key.
package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

const (
	testAdminToken = "admin-token-0123456789"
	testBackendKey = "backend-key-0123456789"
)

func TestGetHoldPrivate(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s")
	h := wc.hold("s", "fan", "A1", "A2")
	wc.confirm("s", "fan", h.HoldId)
	srv := wc.nodes[0].srv
	get := func(ctx context.Context, token string) (*ledgerpb.HoldInfo, error) {
		return srv.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: "s", HoldId: h.HoldId, HoldToken: token,
			Consistency: ledgerpb.Consistency_LINEARIZABLE})
	}

	// No credential configured (--insecure-no-auth): the whole hold.
	open := call(t, "GetHold(open)", func(ctx context.Context) (*ledgerpb.HoldInfo, error) { return get(ctx, "") })
	if open.ClientId != "fan" || open.PaymentRef != "p" || open.Redacted {
		t.Errorf("GetHold on an open node = client %q, payment %q, redacted %v; want fan, p, false", open.ClientId, open.PaymentRef, open.Redacted)
	}

	a := NewAuth(testAdminToken)
	a.SetBackendKey(testBackendKey)
	srv.SetAuth(a)
	public, err := get(context.Background(), "")
	if err != nil {
		t.Fatalf("GetHold without a credential = %v, want the public fields", err)
	}
	if public.ClientId != "" || public.PaymentRef != "" || !public.Redacted {
		t.Errorf("GetHold without a credential = client %q, payment %q, redacted %v; want both empty and redacted", public.ClientId, public.PaymentRef, public.Redacted)
	}
	if public.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED || len(public.SeatIds) != 2 || public.ExpiresAt == nil {
		t.Errorf("GetHold without a credential = state %v, seats %v, expires %v; want CONFIRMED, A1 A2 and an expiry", public.State, public.SeatIds, public.ExpiresAt)
	}

	full := []struct {
		name  string
		ctx   context.Context
		token string
	}{
		{"the hold token", context.Background(), h.HoldToken},
		{"the backend key", AdminContext(context.Background(), testBackendKey), ""},
		{"the admin token", AdminContext(context.Background(), testAdminToken), ""},
		{"the hold token and a stray bearer", AdminContext(context.Background(), "guess-0123456789abcdef"), h.HoldToken},
	}
	for _, tt := range full {
		got, err := get(tt.ctx, tt.token)
		if err != nil || got.ClientId != "fan" || got.PaymentRef != "p" || got.Redacted {
			t.Errorf("GetHold with %s = %v (client %q, payment %q); want fan and p", tt.name, err, got.GetClientId(), got.GetPaymentRef())
		}
	}

	refused := []struct {
		name  string
		ctx   context.Context
		token string
		code  codes.Code
	}{
		{"another hold's token", context.Background(), wc.hold("s", "other", "A3").HoldToken, codes.PermissionDenied},
		{"a guessed bearer", AdminContext(context.Background(), "guess-0123456789abcdef"), "", codes.PermissionDenied},
	}
	for _, tt := range refused {
		if _, err := get(tt.ctx, tt.token); status.Code(err) != tt.code {
			t.Errorf("GetHold with %s = %v, want %v", tt.name, err, tt.code)
		}
	}
}

func TestClientProof(t *testing.T) {
	now := time.UnixMilli(1_700_000_000_000)
	good := ClientProof(testBackendKey, "fan", now.Add(time.Hour))
	tests := []struct {
		name, key, client, proof string
		ok                       bool
	}{
		{"the client's proof", testBackendKey, "fan", good, true},
		{"another client", testBackendKey, "fan2", good, false},
		{"another key", "other-key-0123456789", "fan", good, false},
		{"no backend key", "", "fan", good, false},
		{"expired", testBackendKey, "fan", ClientProof(testBackendKey, "fan", now), false},
		{"too far ahead", testBackendKey, "fan", ClientProof(testBackendKey, "fan", now.Add(clientProofTTLMax+time.Second)), false},
		{"expiry moved", testBackendKey, "fan", strings.Replace(good, ".1700", ".1800", 1), false},
		{"not a proof", testBackendKey, "fan", "SLC1.x", false},
		{"another format", testBackendKey, "fan", strings.Replace(good, "SLC1", "SLC2", 1), false},
	}
	for _, tt := range tests {
		err := checkClientProof(tt.key, tt.client, tt.proof, now)
		if (err == nil) != tt.ok {
			t.Errorf("checkClientProof(%s) = %v, want ok %v", tt.name, err, tt.ok)
		}
	}
}

func TestListBookingsPrivate(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s")
	h := wc.hold("s", "fan", "A1")
	wc.confirm("s", "fan", h.HoldId)
	srv := wc.nodes[0].srv
	list := func(ctx context.Context, client, proof string) (*ledgerpb.ListBookingsResponse, error) {
		return srv.ListBookings(ctx, &ledgerpb.ListBookingsRequest{ClientId: client, ClientProof: proof})
	}
	call(t, "ListBookings(open)", func(ctx context.Context) (*ledgerpb.ListBookingsResponse, error) { return list(ctx, "fan", "") })

	a := NewAuth(testAdminToken)
	a.SetBackendKey(testBackendKey)
	srv.SetAuth(a)
	proof := ClientProof(testBackendKey, "fan", time.Now().Add(time.Minute))
	for _, tt := range []struct {
		name  string
		ctx   context.Context
		proof string
	}{
		{"the backend key", AdminContext(context.Background(), testBackendKey), ""},
		{"the admin token", AdminContext(context.Background(), testAdminToken), ""},
		{"the client's proof", context.Background(), proof},
	} {
		r, err := list(tt.ctx, "fan", tt.proof)
		if err != nil || len(r.Bookings) != 1 || r.Bookings[0].PaymentRef != "p" {
			t.Errorf("ListBookings(fan) with %s = %v, %v; want the one booking with its payment", tt.name, r, err)
		}
	}
	for _, tt := range []struct {
		name, client, proof string
		ctx                 context.Context
		code                codes.Code
	}{
		{"nothing", "fan", "", context.Background(), codes.Unauthenticated},
		{"another client's proof", "fan2", proof, context.Background(), codes.PermissionDenied},
		{"a guessed bearer", "fan", "", AdminContext(context.Background(), "guess-0123456789abcdef"), codes.PermissionDenied},
		{"a proof and a guessed bearer", "fan", proof, AdminContext(context.Background(), "guess-0123456789abcdef"), codes.PermissionDenied},
	} {
		if _, err := list(tt.ctx, tt.client, tt.proof); status.Code(err) != tt.code {
			t.Errorf("ListBookings(%s) with %s = %v, want %v", tt.client, tt.name, err, tt.code)
		}
	}
}
