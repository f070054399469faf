// Package web serves seatledger's two web pages from files embedded in the
// binary: the booking page at / (browse the catalog, a live seat map over
// Server-Sent Events, hold, pay, confirm, tickets, the waiting line) and the
// operator page at /admin (groups, leaders, indexes and per-show counters,
// polled from the Admin and Catalog APIs).
//
// The pages are plain HTML, CSS and JavaScript modules with no build step
// and no third-party code, and they speak only the public HTTP/JSON API of
// the node that serves them. Nothing is fetched from another origin: the
// Content-Security-Policy sent with every file forbids it, so a page that
// tried would break in the browser tests instead of in a closed network.
package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

//go:embed static
var static embed.FS

// contentSecurityPolicy allows only this origin: scripts, styles, images
// (ticket QR codes are served by the API) and fetch/EventSource calls.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// file is one embedded file, ready to serve.
type file struct {
	name string
	data []byte
	// etag is a strong validator derived from the content, so a browser
	// revalidates cheaply and never keeps a page from an older binary.
	etag  string
	ctype string
}

// files maps a URL path ("/", "/admin", "/assets/book.js") to its file.
var files = mustLoad()

func mustLoad() map[string]*file {
	out := map[string]*file{}
	err := fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := static.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		f := &file{name: path.Base(p), data: data, etag: `"` + hex.EncodeToString(sum[:8]) + `"`,
			ctype: mime.TypeByExtension(path.Ext(p))}
		if f.ctype == "" {
			return fmt.Errorf("web: no content type for %s", p)
		}
		out[p[len("static"):]] = f
		return nil
	})
	if err != nil {
		panic(err)
	}
	for _, p := range []string{"/index.html", "/admin.html"} {
		if out[p] == nil {
			panic("web: missing embedded page " + p)
		}
	}
	out["/"], out["/admin"] = out["/index.html"], out["/admin.html"]
	delete(out, "/index.html")
	delete(out, "/admin.html")
	return out
}

// Register adds the pages to mux: "GET /" (exactly), "GET /admin" and
// "GET /assets/". Every other path stays the mux's.
//
// /admin is a static page and holds no secret; it sends the admin token the
// operator types in, and the Admin API it calls checks it (gateway/auth.go).
func Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", serve)
	mux.HandleFunc("GET /admin", serve)
	mux.HandleFunc("GET /assets/", serve)
}

// Paths lists every URL path Register serves a file at, for tests.
func Paths() []string {
	var out []string
	for p := range files {
		out = append(out, p)
	}
	return out
}

func serve(w http.ResponseWriter, r *http.Request) {
	f := files[r.URL.Path]
	if f == nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Type", f.ctype)
	h.Set("ETag", f.etag)
	h.Set("Cache-Control", "no-cache")
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	// ServeContent answers If-None-Match with 304 and handles HEAD.
	http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.data))
}
