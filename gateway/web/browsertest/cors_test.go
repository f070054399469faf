package browsertest

// testCrossOrigin proves that a frontend served from its own origin can
// call the API from Chromium: `seatd dev` allows http://localhost:*, so a
// page at http://localhost:PORT (a second origin: another host name and
// port than the API's http://127.0.0.1:PORT) gets its JSON POST's preflight
// answered and holds a seat, reads the exposed Allow header of a 405, while
// the same page at http://127.0.0.1:PORT (an origin not allowed) is blocked
// by the browser; no preflight is logged as an error.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// crossOriginPage is a frontend's page: it only has to exist; the test
// runs its script through the page.
const crossOriginPage = `<!doctype html><html><head><title>frontend</title></head><body><p id="who">frontend</p></body></html>`

// crossOriginCalls runs in the frontend's page: a JSON POST (which needs a
// preflight) and a GET with the wrong method, against the API at %q.
const crossOriginCalls = `(async (api) => {
  const out = {};
  try {
    const r = await fetch(api + "/v1/shows/demo/holds", {method: "POST", headers: {"Content-Type": "application/json"},
      body: JSON.stringify({seat_ids: ["J20"], client_id: "cors-fan", request_id: "cors-1"})});
    out.hold = r.status;
    out.holdId = (await r.json()).hold_id || "";
  } catch (e) { out.hold = "blocked: " + e.name; }
  try {
    const r = await fetch(api + "/v1/shows/demo/holds");
    out.get = r.status;
    out.allow = r.headers.get("Allow") || "";
  } catch (e) { out.get = "blocked: " + e.name; }
  return JSON.stringify(out);
})(%q)`

func testCrossOrigin(t *testing.T, b *browser, s *seatd) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write([]byte(crossOriginPage))
	}))
	front.Listener.Close()
	front.Listener = ln
	front.Start()
	t.Cleanup(front.Close)
	port := ln.Addr().(*net.TCPAddr).Port

	logBefore := len(s.logged())
	f := b.newFan(t, "frontend")
	allowed := fmt.Sprintf("http://localhost:%d/", port)
	f.do("open the frontend at "+allowed, chromedp.Navigate(allowed), chromedp.WaitVisible(chromedp.CSS("#who")))
	got := evalAsync(f, fmt.Sprintf(crossOriginCalls, s.base))
	if !strings.Contains(got, `"hold":200`) || strings.Contains(got, `"holdId":""`) {
		t.Errorf("from %s: POST a hold = %s, want 200 with a hold id", allowed, got)
	}
	if !strings.Contains(got, `"get":405`) || !strings.Contains(got, `"allow":"POST"`) {
		t.Errorf("from %s: GET holds = %s, want 405 with Allow: POST readable by the page", allowed, got)
	}

	blocked := fmt.Sprintf("http://127.0.0.1:%d/", port)
	f.do("open the frontend at "+blocked, chromedp.Navigate(blocked), chromedp.WaitVisible(chromedp.CSS("#who")))
	got = evalAsync(f, fmt.Sprintf(crossOriginCalls, s.base))
	if !strings.Contains(got, `"hold":"blocked: TypeError"`) || !strings.Contains(got, `"get":"blocked: TypeError"`) {
		t.Errorf("from %s (not allowed): calls = %s, want both blocked by the browser", blocked, got)
	}
	if log := s.logged()[logBefore:]; strings.Contains(log, "level=ERROR") {
		t.Errorf("seatd logged an error during the cross-origin calls:\n%s", log)
	}
}

// evalAsync evaluates an expression that returns a promise of a string.
func evalAsync(f *fan, expr string) string {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, stepMax)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		f.t.Fatalf("%s: evaluate: %v", f.name, err)
	}
	return v
}
