package browsertest

// The harness: a `seatd dev` process, a headless Chromium, fans (one
// browser context each, so each has its own localStorage and so its own
// client id), a TCP proxy that can drop a fan's connections, and
// screenshots.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/seatledger/seatledger/internal/proccluster"
)

const (
	// seatdBuildMax bounds building seatd (from a cold cache while other
	// packages' tests build too).
	seatdBuildMax = 5 * time.Minute
	// seatdStartMax bounds starting the dev cluster until it prints its
	// URLs (leader elections, the demo catalog).
	seatdStartMax = 60 * time.Second
	// seatdStopGrace is how long seatd gets after SIGTERM.
	seatdStopGrace = 10 * time.Second
	// stepMax bounds one browser step: a click, or waiting for the page
	// to show what the step expects.
	stepMax = 15 * time.Second
	// viewportWidth and viewportHeight size every fan's window.
	viewportWidth, viewportHeight = 1280, 1000
)

// chromiumPath finds Chromium: $SEATLEDGER_CHROMIUM, else chromium on PATH
// (Debian's /usr/bin/chromium). Without one the test skips, unless
// SEATLEDGER_REQUIRE_BROWSER is set (CI sets it), when it fails.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SEATLEDGER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SEATLEDGER_REQUIRE_BROWSER") != "" {
		t.Fatal("chromium is not installed and SEATLEDGER_REQUIRE_BROWSER is set: apt-get install -y chromium")
	}
	t.Skip("skipping browser tests: chromium is not installed (apt-get install -y chromium; " +
		"SEATLEDGER_REQUIRE_BROWSER=1 turns this skip into a failure, as in CI)")
	return ""
}

// screenshotDir is $SEATLEDGER_SCREENSHOTS, else a new temporary directory
// that outlives the test, so the pictures can be looked at afterwards.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SEATLEDGER_SCREENSHOTS")
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "seatledger-screenshots-"); err != nil {
			t.Fatal(err)
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots in %s", dir)
	return dir
}

// ---- seatd ----

// seatd is a running `seatd dev`.
type seatd struct {
	base  string // the booking page's origin: http://127.0.0.1:PORT
	admin string // the operator page's URL, as printed
	token string // the dev cluster's admin token (DATA_DIR/admin.token)
	logMu *sync.Mutex
	log   *bytes.Buffer // guarded by logMu
}

// logged is what seatd dev has printed so far.
func (s *seatd) logged() string {
	s.logMu.Lock()
	defer s.logMu.Unlock()
	return s.log.String()
}

// bookURL matches the line `seatd dev` prints for the booking page.
var (
	bookURL  = regexp.MustCompile(`Book seats\s+(http://\S+)/`)
	adminURL = regexp.MustCompile(`Operator\s+(http://\S+/admin)`)
)

// startSeatd builds seatd from this module and runs `seatd dev` on free
// ports with a fresh data dir, as a new user would, and reads the booking
// page's URL from what it prints.
func startSeatd(t *testing.T) *seatd {
	t.Helper()
	bctx, cancel := context.WithTimeout(context.Background(), seatdBuildMax)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "seatd")
	if err := proccluster.Build(bctx, bin); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), seatdStartMax)
	defer cancel()
	dataDir := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(bin, "dev", "--data-dir", dataDir,
		"--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--groups", "4")
	dieWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var logMu sync.Mutex
	s := &seatd{log: &bytes.Buffer{}, logMu: &logMu}
	cmd.Stderr = lockedWriter{&logMu, s.log}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(seatdStopGrace):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			logMu.Lock()
			t.Logf("seatd dev output:\n%s", s.log)
			logMu.Unlock()
		}
	})
	urls := make(chan [2]string, 1)
	go func() {
		defer close(done)
		defer cmd.Wait()
		var book string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			logMu.Lock()
			fmt.Fprintln(s.log, line)
			logMu.Unlock()
			if m := bookURL.FindStringSubmatch(line); m != nil {
				book = m[1]
			}
			if m := adminURL.FindStringSubmatch(line); m != nil {
				urls <- [2]string{book, m[1]}
			}
		}
		io.Copy(io.Discard, out)
	}()
	select {
	case u := <-urls:
		s.base, s.admin = u[0], u[1]
	case <-done:
		t.Fatalf("seatd dev exited before printing its URLs:\n%s", s.log)
	case <-ctx.Done():
		t.Fatalf("seatd dev printed no booking page URL within %v:\n%s", seatdStartMax, s.log)
	}
	if s.base == "" || !strings.HasSuffix(s.admin, "/admin") {
		t.Fatalf("seatd dev printed no booking page URL:\n%s", s.log)
	}
	// Admin calls (creating a show, the operator page) need the token
	// seatd dev keeps with its data, as its banner tells a new user.
	token, err := os.ReadFile(filepath.Join(dataDir, "admin.token"))
	if err != nil {
		t.Fatalf("seatd dev's admin token: %v", err)
	}
	s.token = strings.TrimSpace(string(token))
	return s
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// api calls seatd's HTTP/JSON API and decodes the answer into out (if not
// nil); it fails the test unless the status is want.
func (s *seatd) api(t *testing.T, method, path string, body any, want int, out any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}

// ---- the browser ----

// browser is one headless Chromium; each fan is a browser context in it.
type browser struct {
	ctx   context.Context // the browser's chromedp context
	shots string
}

// startBrowser starts Chromium with the flags this closed network needs:
// no background networking, component updates, sync or QUIC, so Chromium
// makes no connection but the test's; a fresh profile every run.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	exe := chromiumPath(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(viewportWidth, viewportHeight),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
	})
	// The first Run starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium (%s): %v", exe, err)
	}
	return &browser{ctx: ctx, shots: screenshotDir(t)}
}

// fan is one person at one browser: a browser context of its own.
type fan struct {
	t    *testing.T
	name string
	ctx  context.Context
	b    *browser
	mu   sync.Mutex
	errs []string // uncaught exceptions and console.error calls of the page
}

func (b *browser) newFan(t *testing.T, name string) *fan {
	t.Helper()
	ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	f := &fan{t: t, name: name, ctx: ctx, b: b}
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("%s: open a browser context: %v", name, err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			// The browser's own log (Source set) reports dropped
			// connections, which some tests cause on purpose.
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source == "") {
				f.mu.Lock()
				f.errs = append(f.errs, m.String())
				f.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, e := range f.errs {
			t.Errorf("%s: the page logged an error: %s", name, e)
		}
	})
	return f
}

// do runs steps, each within stepMax, and fails the test on an error.
func (f *fan) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	f.t.Helper()
	for _, s := range steps {
		ctx, cancel := context.WithTimeout(f.ctx, stepMax)
		_, err := chromedp.Run(ctx, s)
		cancel()
		if err != nil {
			f.shot("failed-" + f.name)
			f.t.Fatalf("%s: %s: %v", f.name, what, err)
		}
	}
}

// open loads a URL and waits for the page's scripts to have run.
func (f *fan) open(url string) {
	f.t.Helper()
	f.do("open "+url, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#who")),
		chromedp.Poll[chromedp.Void](`document.getElementById("who").textContent !== ""`))
}

// waitFor waits until a JavaScript expression is truthy in the page.
func (f *fan) waitFor(what, expr string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, stepMax)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond))); err != nil {
		f.shot("failed-" + f.name)
		f.t.Fatalf("%s: waiting until %s: %v\nnotice: %q", f.name, what, err, f.text("#notice"))
	}
}

// eval evaluates a JavaScript expression in the page.
func eval[T any](f *fan, expr string) T {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, stepMax)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		f.t.Fatalf("%s: evaluate %s: %v", f.name, expr, err)
	}
	return v
}

// text is an element's text ("" if there is none).
func (f *fan) text(sel string) string {
	ctx, cancel := context.WithTimeout(f.ctx, stepMax)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(s)
}

// shot saves a full-page screenshot as NAME.png in the screenshot dir.
func (f *fan) shot(name string) {
	ctx, cancel := context.WithTimeout(f.ctx, stepMax)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		f.t.Logf("%s: screenshot %s: %v", f.name, name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(f.b.shots, name+".png"), png, 0o644); err != nil {
		f.t.Errorf("save screenshot %s: %v", name, err)
	}
}

// ---- a proxy that drops connections ----

// dropProxy forwards TCP connections to a target and can drop them all and
// refuse new ones for a while: a fan behind it loses its connections as on
// a flaky network, without the page knowing why.
type dropProxy struct {
	ln     net.Listener
	target string
	mu     struct {
		sync.Mutex
		conns map[net.Conn]struct{}
		down  bool
		// heads are the first bytes each accepted connection sent
		// (its first request's line and headers), in order.
		heads []string
	}
	wg sync.WaitGroup
}

func startProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{ln: ln, target: target}
	p.mu.conns = map[net.Conn]struct{}{}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *dropProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			c.Close()
			continue
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(up) {
			if up != nil {
				up.Close()
			}
			p.untrack(c)
			c.Close()
			continue
		}
		p.wg.Add(2)
		go p.pipe(up, &headReader{c: c, p: p})
		go p.pipe(c, up)
	}
}

func (p *dropProxy) pipe(dst net.Conn, src io.Reader) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	p.untrack(dst)
	if c, ok := src.(net.Conn); ok {
		c.Close()
		p.untrack(c)
	}
	if h, ok := src.(*headReader); ok {
		h.c.Close()
		p.untrack(h.c)
	}
}

// headReader reads a client connection and records its first read.
type headReader struct {
	c    net.Conn
	p    *dropProxy
	seen bool
}

func (h *headReader) Read(b []byte) (int, error) {
	n, err := h.c.Read(b)
	if n > 0 && !h.seen {
		h.seen = true
		h.p.mu.Lock()
		h.p.mu.heads = append(h.p.mu.heads, string(b[:n]))
		h.p.mu.Unlock()
	}
	return n, err
}

// requests returns the first request head of every connection so far.
func (p *dropProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.mu.heads)
}

func (p *dropProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.mu.down {
		return false
	}
	p.mu.conns[c] = struct{}{}
	return true
}

func (p *dropProxy) untrack(c net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.mu.conns, c)
}

// setDown(true) drops every connection and refuses new ones until
// setDown(false).
func (p *dropProxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mu.down = down
	if down {
		for c := range p.mu.conns {
			c.Close()
		}
	}
}
