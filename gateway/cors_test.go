// This file proves CORS: origins are validated, an allowed origin (exact or
// any port) gets its preflight answered 204 with the methods and headers
// and its calls the Allow-Origin header, another origin's preflight is 403,
// and without origins nothing changes.
package gateway

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestCORSValidate(t *testing.T) {
	for _, o := range []string{"https://tickets.example.com", "http://localhost:*", "http://127.0.0.1:5173", "https://[::1]:8443"} {
		if err := (CORSConfig{Origins: []string{o}}).Validate(); err != nil {
			t.Errorf("Validate(%s) = %v, want ok", o, err)
		}
	}
	for _, o := range []string{"tickets.example.com", "https://tickets.example.com/", "https://x.com/path", "ftp://x.com",
		"http://*.example.com", "http://x.com:*:*", "*", "https://x.com?q=1", "https://user@x.com"} {
		if err := (CORSConfig{Origins: []string{o}}).Validate(); err == nil {
			t.Errorf("Validate(%s) = ok, want an error", o)
		}
	}
	many := make([]string, corsOriginsMax+1)
	for i := range many {
		many[i] = "https://x.com"
	}
	if err := (CORSConfig{Origins: many}).Validate(); err == nil {
		t.Errorf("Validate(%d origins) = ok, want the limit", len(many))
	}
}

func TestCORSAllowed(t *testing.T) {
	c := CORSConfig{Origins: []string{"https://tickets.example.com", "http://localhost:*"}}
	tests := []struct {
		origin string
		want   bool
	}{
		{"https://tickets.example.com", true},
		{"http://tickets.example.com", false},
		{"https://tickets.example.com:444", false},
		{"http://localhost:5173", true},
		{"http://localhost:1", true},
		{"http://localhost", false},
		{"http://localhost:0", false},
		{"http://localhost:65536", false},
		{"http://localhost:05173", false},
		{"http://localhost:5173.evil.com", false},
		{"http://localhost.evil.com:80", false},
		{"null", false},
	}
	for _, tt := range tests {
		if got := c.allowed(tt.origin); got != tt.want {
			t.Errorf("allowed(%s) = %v, want %v", tt.origin, got, tt.want)
		}
	}
}

func TestCORSHandler(t *testing.T) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("api")) })
	h := CORSConfig{Origins: []string{"http://localhost:*"}}.handler(inner)
	serve := func(method, origin, reqMethod string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, "/v1/shows/demo/holds", nil)
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if reqMethod != "" {
			r.Header.Set("Access-Control-Request-Method", reqMethod)
			r.Header.Set("Access-Control-Request-Headers", "content-type")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	rec := serve("OPTIONS", "http://localhost:5173", "POST")
	if rec.Code != http.StatusNoContent || rec.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(rec.Header().Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(rec.Header().Get("Access-Control-Allow-Headers"), "Content-Type") || rec.Body.Len() != 0 {
		t.Errorf("preflight = %d %v %q, want 204 with the origin, methods and headers", rec.Code, rec.Header(), rec.Body)
	}
	rec = serve("POST", "http://localhost:5173", "")
	if rec.Body.String() != "api" || rec.Header().Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(rec.Header().Get("Access-Control-Expose-Headers"), "Retry-After") {
		t.Errorf("call from an allowed origin = %q %v, want the API's answer with CORS headers", rec.Body, rec.Header())
	}
	rec = serve("OPTIONS", "https://evil.example", "POST")
	if rec.Code != http.StatusForbidden || rec.Header().Get("Access-Control-Allow-Origin") != "" ||
		!strings.Contains(rec.Body.String(), "CORS_ORIGIN_DENIED") {
		t.Errorf("preflight from another origin = %d %v %s, want 403 CORS_ORIGIN_DENIED without CORS headers", rec.Code, rec.Header(), rec.Body)
	}
	rec = serve("GET", "https://evil.example", "")
	if rec.Body.String() != "api" || rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("simple call from another origin = %q %v, want served without CORS headers (the browser withholds it)", rec.Body, rec.Header())
	}
	rec = serve("GET", "", "")
	if rec.Body.String() != "api" || rec.Header().Get("Vary") != "" {
		t.Errorf("call without Origin = %q %v, want served as is", rec.Body, rec.Header())
	}
	off := CORSConfig{}.handler(inner)
	r := httptest.NewRequest("OPTIONS", "/v1/shows", nil)
	r.Header.Set("Origin", "http://localhost:5173")
	r.Header.Set("Access-Control-Request-Method", "POST")
	rec = httptest.NewRecorder()
	off.ServeHTTP(rec, r)
	if rec.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("CORS off: preflight got %v, want no CORS headers", rec.Header())
	}
}
