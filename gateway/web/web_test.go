// This file proves that the embedded pages are served as a browser needs
// them: every page and asset answers 200 with its content type, a strict
// same-origin Content-Security-Policy and a validator that revalidates to
// 304; paths that are not pages are left to the API (404 here); and no page,
// script or stylesheet refers to another origin, so the pages work on a
// closed network and load nothing a fan did not ask this node for.
package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/gateway/web"
)

func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	web.Register(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, url string, header map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: read body: %v", url, err)
	}
	return resp, string(body)
}

func TestPagesServed(t *testing.T) {
	srv := newServer(t)
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `src="/assets/book.js"`},
		{"/admin", "text/html; charset=utf-8", `src="/assets/admin.js"`},
		{"/assets/book.js", "text/javascript; charset=utf-8", "EventSource"},
		{"/assets/admin.js", "text/javascript; charset=utf-8", "/v1/admin/status"},
		{"/assets/api.js", "text/javascript; charset=utf-8", "request_id"},
		{"/assets/style.css", "text/css; charset=utf-8", ".seat"},
	} {
		resp, body := get(t, srv.URL+tc.path, nil)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", tc.path, resp.StatusCode)
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type = %q, want %q", tc.path, got, tc.ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy = %q, want same-origin only", tc.path, csp)
		}
		if !strings.Contains(body, tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		etag := resp.Header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", tc.path)
			continue
		}
		if again, _ := get(t, srv.URL+tc.path, map[string]string{"If-None-Match": etag}); again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with If-None-Match = %d, want 304", tc.path, again.StatusCode)
		}
	}
}

func TestOtherPathsNotServed(t *testing.T) {
	srv := newServer(t)
	for _, path := range []string{"/index.html", "/admin.html", "/assets/", "/assets/nope.js", "/nope", "/admin/x", "/static/index.html"} {
		if resp, _ := get(t, srv.URL+path, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
	resp, err := http.Post(srv.URL+"/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", resp.StatusCode)
	}
}

// externalRef finds what would make a browser contact another origin: an
// absolute or protocol-relative URL, or a CSS import/url() of one.
var externalRef = regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}|wss?://|(src|href|action)\s*=\s*["']//|@import`)

func TestNoExternalURLs(t *testing.T) {
	srv := newServer(t)
	paths := web.Paths()
	slices.Sort(paths)
	if len(paths) < 6 {
		t.Fatalf("web.Paths() = %v, want the two pages and their assets", paths)
	}
	for _, path := range paths {
		_, body := get(t, srv.URL+path, nil)
		for i, line := range strings.Split(body, "\n") {
			if m := externalRef.FindString(line); m != "" {
				t.Errorf("%s:%d refers to another origin (%q): %s", path, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}
