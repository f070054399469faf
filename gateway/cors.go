package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// CORS lets a booking frontend served from its own origin call the API from
// the browser. Only listed origins are allowed: the API has no cookies, so
// CORS guards nothing secret (admin calls need a token the page must hold),
// but an explicit list keeps other sites from spending a node's admission
// budget through visitors' browsers.

const (
	// corsOriginsMax bounds --cors-origin.
	corsOriginsMax = 64
	// corsMaxAgeSeconds is how long a browser may cache a preflight.
	corsMaxAgeSeconds = 600
	// corsMethods and corsHeaders are what any route may need: the API's
	// methods, and JSON bodies, the admin token, SSE's resume header and
	// a write's first send time (firstsent.go).
	corsMethods = "GET, POST, DELETE"
	corsHeaders = "Authorization, Content-Type, Last-Event-ID, Seatledger-First-Sent-At"
	// corsExposed are response headers a page's script may read: the wait
	// of a 429/503 and the methods of a 405.
	corsExposed = "Retry-After, Allow"
)

// CORSConfig lists the origins allowed to call the API from a browser.
type CORSConfig struct {
	// Origins are exact origins ("https://tickets.example.com"), or an
	// origin with any port ("http://localhost:*"). None turns CORS off.
	Origins []string
}

// DevCORSOrigins are what `seatd dev` allows: a frontend being developed
// on any local port.
var DevCORSOrigins = []string{"http://localhost:*"}

// Validate checks that every origin is scheme://host[:port|:*], nothing more.
func (c CORSConfig) Validate() error {
	if len(c.Origins) > corsOriginsMax {
		return fmt.Errorf("--cors-origin: %d origins, at most %d", len(c.Origins), corsOriginsMax)
	}
	for _, o := range c.Origins {
		u, err := url.Parse(strings.Replace(o, ":*", ":0", 1))
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" || u.Path != "" ||
			u.RawQuery != "" || u.Fragment != "" || u.User != nil || strings.Count(o, "*") > 1 ||
			(strings.Contains(o, "*") && !strings.HasSuffix(o, ":*")) {
			return fmt.Errorf("--cors-origin %q: want an origin such as https://tickets.example.com or http://localhost:* (scheme, host and port or :*, no path)", o)
		}
	}
	return nil
}

// allowed reports whether a request's Origin header is one of c's.
func (c CORSConfig) allowed(origin string) bool {
	for _, o := range c.Origins {
		if base, ok := strings.CutSuffix(o, ":*"); ok {
			if port, ok := strings.CutPrefix(origin, base+":"); ok {
				if n, err := strconv.Atoi(port); err == nil && n > 0 && n < 65536 && port == strconv.Itoa(n) {
					return true
				}
			}
			continue
		}
		if origin == o {
			return true
		}
	}
	return false
}

// handler adds CORS to h: an allowed origin gets Access-Control-Allow-Origin
// on every answer, and its preflight 204 with the methods and headers; a
// preflight from another origin gets 403, which the browser reports as a
// CORS failure. Without origins, h is returned as it is.
func (c CORSConfig) handler(h http.Handler) http.Handler {
	if len(c.Origins) == 0 {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		preflight := r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != ""
		if origin == "" {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Add("Vary", "Origin")
		if !c.allowed(origin) {
			if preflight {
				writeError(r.Context(), nil, nil, w, r, corsOriginError(origin))
				return
			}
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Set("Access-Control-Expose-Headers", corsExposed)
		if preflight {
			w.Header().Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			w.Header().Set("Access-Control-Allow-Methods", corsMethods)
			w.Header().Set("Access-Control-Allow-Headers", corsHeaders)
			w.Header().Set("Access-Control-Max-Age", strconv.Itoa(corsMaxAgeSeconds))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})
}
