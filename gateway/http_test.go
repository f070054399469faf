// This file proves the HTTP answers a client or a retry middleware acts
// on, through the real handler and a one-node group: an unknown JSON field
// is 400 naming it, malformed JSON says where it broke, error bodies leave
// out empty fields, a wrong method is 405 with Allow, a hold that joins the
// waiting line is 202 with the queue entry, TOO_MANY_HOLDS is 422 (no retry
// middleware retries it), REQUEST_ID_REUSED says to use a new request id,
// and an oversized body is 413.
package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// httpAnswer is one HTTP answer: status, headers and body.
type httpAnswer struct {
	code   int
	header http.Header
	body   string
}

func httpDo(t *testing.T, base, method, path, body string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest(method, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpAnswer{resp.StatusCode, resp.Header, string(b)}
}

func TestHTTPAnswers(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s")
	wc.createShow("t")
	base := wc.nodes[0].http.URL
	check := func(what string, a httpAnswer, code int, substrs ...string) {
		t.Helper()
		if a.code != code {
			t.Errorf("%s = %d %s, want %d", what, a.code, a.body, code)
			return
		}
		for _, s := range substrs {
			if !strings.Contains(a.body, s) {
				t.Errorf("%s = %d %s, want it to contain %s", what, a.code, a.body, s)
			}
		}
	}

	a := httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A1"],"client_id":"c","request_id":"r0","ttl":10}`)
	check("hold with ttl", a, 400, `"field":"ttl"`, `"reason":"INVALID_ARGUMENT"`, "unknown field")
	a = httpDo(t, base, "POST", "/v1/shows", `{"show":{"show_id":"x","rows":[{"name":"A","sets":3}]}}`)
	check("create show with rows[0].sets", a, 400, `"field":"show.rows[0].sets"`)
	a = httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A1"`)
	check("truncated JSON", a, 400, "at line 1, column 18 (offset 17)")
	a = httpDo(t, base, "POST", "/v1/shows/s/holds", strings.Repeat(" ", httpBodyBytesMax+1))
	check("oversized body", a, 413, `"reason":"BODY_TOO_LARGE"`)

	a = httpDo(t, base, "GET", "/v1/shows/s/holds", "")
	check("GET holds", a, 405, `"reason":"METHOD_NOT_ALLOWED"`)
	if got := a.header.Get("Allow"); got != "POST" {
		t.Errorf("GET holds: Allow = %q, want POST", got)
	}
	a = httpDo(t, base, "PUT", "/v1/shows/s/holds/h1", "{}")
	check("PUT a hold", a, 405)
	if got := a.header.Get("Allow"); got != "DELETE, GET" {
		t.Errorf("PUT a hold: Allow = %q, want DELETE, GET", got)
	}
	check("unknown route", httpDo(t, base, "GET", "/v1/nothing", ""), 404, `"reason":"NOT_FOUND"`)

	// Client c holds every seat of s: a conflict's body has the taken
	// seats and nothing empty.
	check("hold all", httpDo(t, base, "POST", "/v1/shows/s/holds",
		`{"seat_ids":["A1","A2","A3","A4","A5","A6","A7","A8","A9","A10"],"client_id":"c","request_id":"all"}`), 200)
	a = httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A1"],"client_id":"d","request_id":"r1"}`)
	check("conflict", a, 409, `"taken_seat_ids":["A1"]`)
	for _, empty := range []string{`"leader_hint"`, `"queue_token"`, `"limit"`, `""`, `[]`} {
		if strings.Contains(a.body, empty) {
			t.Errorf("conflict body %s has an empty field (%s)", a.body, empty)
		}
	}
	a = httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A2"],"client_id":"c","request_id":"all"}`)
	check("request id reused", a, 409, `"reason":"REQUEST_ID_REUSED"`, "new request_id")

	// Sold out with wait: 202 and the entry, a success.
	a = httpDo(t, base, "POST", "/v1/shows/s/holds", `{"count":2,"wait":true,"client_id":"q","request_id":"w1"}`)
	check("queued", a, 202)
	var entry struct {
		EntryID    string `json:"entry_id"`
		State      string `json:"state"`
		Position   int    `json:"position"`
		QueueToken string `json:"queue_token"`
		ShowID     string `json:"show_id"`
		Count      int    `json:"count"`
	}
	if err := json.Unmarshal([]byte(a.body), &entry); err != nil || entry.EntryID == "" || entry.State != "WAITING" ||
		entry.Position != 1 || entry.QueueToken == "" || entry.ShowID != "s" || entry.Count != 2 {
		t.Errorf("queued body %s (%v), want a WAITING entry at position 1 with its token, show and count", a.body, err)
	}
	a = httpDo(t, base, "GET", fmt.Sprintf("/v1/shows/s/queue/%s?queue_token=%s", entry.EntryID, entry.QueueToken), "")
	check("the queued entry", a, 200, `"state":"WAITING"`)

	// TOO_MANY_HOLDS: 422, a status no retry middleware retries.
	for i := 1; i <= 8; i++ {
		check("hold", httpDo(t, base, "POST", "/v1/shows/t/holds", fmt.Sprintf(`{"seat_ids":["A%d"],"client_id":"m","request_id":"h%d"}`, i, i)), 200)
	}
	a = httpDo(t, base, "POST", "/v1/shows/t/holds", `{"seat_ids":["A9"],"client_id":"m","request_id":"h9"}`)
	check("ninth hold", a, 422, `"reason":"TOO_MANY_HOLDS"`, `"limit":"holds_per_client_per_show"`)
	if a.header.Get("Retry-After") != "" {
		t.Errorf("TOO_MANY_HOLDS has Retry-After %q, want none", a.header.Get("Retry-After"))
	}
}
