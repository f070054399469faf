// This file proves the private reads over HTTP on a real 3-node cluster
// with a backend key (docs/API.md, "Credentials"): a hold read by id alone
// answers state, seats and expiry but no owner or payment, while the hold
// token, the backend key or the admin token read them; a bearer that is
// none of these is 403. Listing a client's bookings needs the backend key,
// the admin token or the client's proof: without one it is 401, with
// another client's proof 403.
package main

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/seatledger/seatledger/gateway"
)

const testBackendKey = "test-backend-key-0123456789"

// getAs GETs url with bearer as the Authorization ("" sends none), once.
func getAs(t *testing.T, url, bearer string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(b, &m)
	return resp.StatusCode, m
}

// reason is an error body's ErrorInfo reason.
func reason(body map[string]any) string {
	ds, _ := body["details"].([]any)
	for _, d := range ds {
		if m, _ := d.(map[string]any); m["reason"] != nil {
			r, _ := m["reason"].(string)
			return r
		}
	}
	return ""
}

func withBackendKey(c *nodeConfig) { c.BackendKey = testBackendKey }

func TestClusterPrivateHoldReads(t *testing.T) {
	c := startCluster(t, true, withBackendKey)
	base := "http://" + c.httpAddr[1]
	httpCall(t, "POST", base+"/v1/shows", `{"show":{"show_id":"p-1","rows":[{"name":"A","seats":4,"category":"std"}],
		"categories":[{"name":"std","price_minor":1250,"currency":"EUR"}]}}`).wantStatus(t, "POST /v1/shows", http.StatusOK)
	r := httpCall(t, "POST", base+"/v1/shows/p-1/holds", `{"seat_ids":["A1"],"client_id":"pia","request_id":"r1"}`).
		wantStatus(t, "POST holds", http.StatusOK)
	id, token := r.str("hold_id"), r.str("hold_token")
	httpCall(t, "POST", base+"/v1/shows/p-1/holds/"+id+":confirm", `{"payment_ref":"pay-9","client_id":"pia","request_id":"r2","hold_token":"`+token+`"}`).
		wantStatus(t, "POST confirm", http.StatusOK)
	url := base + "/v1/shows/p-1/holds/" + id

	code, h := getAs(t, url, "")
	if code != http.StatusOK || h["client_id"] != "" || h["payment_ref"] != "" || h["redacted"] != true ||
		h["state"] != "HOLD_STATE_CONFIRMED" || h["expires_at"] == nil {
		t.Errorf("GET hold without a credential = %d %v, want CONFIRMED with an expiry, redacted, no client_id or payment_ref", code, h)
	}
	for _, tt := range []struct{ name, url, bearer string }{
		{"the hold token", url + "?hold_token=" + token, ""},
		{"the backend key", url, testBackendKey},
		{"the admin token", url, testAdminToken},
	} {
		code, h := getAs(t, tt.url, tt.bearer)
		if code != http.StatusOK || h["client_id"] != "pia" || h["payment_ref"] != "pay-9" || h["redacted"] != false {
			t.Errorf("GET hold with %s = %d %v, want client pia and payment pay-9", tt.name, code, h)
		}
	}
	if code, h := getAs(t, url+"?hold_token="+token+"x", ""); code != http.StatusBadRequest && code != http.StatusForbidden {
		t.Errorf("GET hold with a wrong token = %d %v, want 400 or 403", code, h)
	}
	if code, h := getAs(t, url, "guessed-key-0123456789"); code != http.StatusForbidden || reason(h) != "CREDENTIAL_INVALID" {
		t.Errorf("GET hold with a guessed bearer = %d %v, want 403 CREDENTIAL_INVALID", code, h)
	}

	list := base + "/v1/clients/pia/bookings"
	proof := gateway.ClientProof(testBackendKey, "pia", time.Now().Add(time.Hour))
	for _, tt := range []struct{ name, url, bearer string }{
		{"the client's proof", list + "?client_proof=" + proof, ""},
		{"the backend key", list, testBackendKey},
		{"the admin token", list, testAdminToken},
	} {
		code, b := getAs(t, tt.url, tt.bearer)
		bs, _ := b["bookings"].([]any)
		if code != http.StatusOK || len(bs) != 1 || bs[0].(map[string]any)["payment_ref"] != "pay-9" {
			t.Errorf("GET pia's bookings with %s = %d %v, want the one booking with its payment", tt.name, code, b)
		}
	}
	for _, tt := range []struct {
		name, url string
		code      int
		reason    string
	}{
		{"nothing", list, http.StatusUnauthorized, "CREDENTIAL_REQUIRED"},
		{"another client's proof", base + "/v1/clients/pat/bookings?client_proof=" + proof, http.StatusForbidden, "CREDENTIAL_INVALID"},
	} {
		if code, b := getAs(t, tt.url, ""); code != tt.code || reason(b) != tt.reason {
			t.Errorf("GET bookings with %s = %d %v, want %d %s", tt.name, code, b, tt.code, tt.reason)
		}
	}
}
