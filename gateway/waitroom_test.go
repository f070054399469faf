// This file proves the waiting room over HTTP through the real handler and
// a group led on one node, called through the other: the operator opens it,
// a hold without admission is 403 ADMISSION_REQUIRED with the way to join,
// a fan joins once (a second join is its entry), follows its entry with its
// token (another token is 403), is admitted by the leader's driver as the
// log's clock moves, and holds with its admission token; the room's changes
// reach the show's watch stream; closing the room lifts the check.
package gateway

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestWaitingRoomHTTP(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s")
	base := wc.nodes[1].http.URL // forwards to the leader on n1
	expect := func(what string, a httpAnswer, code int, substrs ...string) map[string]any {
		t.Helper()
		if a.code != code {
			t.Fatalf("%s = %d %s, want %d", what, a.code, a.body, code)
		}
		for _, s := range substrs {
			if !strings.Contains(a.body, s) {
				t.Fatalf("%s = %d %s, want it to contain %s", what, a.code, a.body, s)
			}
		}
		var m map[string]any
		json.Unmarshal([]byte(a.body), &m)
		return m
	}
	watch := wc.grpcWatch(0, "s", 0)
	recv(t, watch) // the seat map

	expect("join a show without a room", httpDo(t, base, "POST", "/v1/shows/s/waiting_room:join", `{"client_id":"c1","request_id":"j0"}`),
		409, `"reason":"ROOM_CLOSED"`)
	expect("open with rate 0", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":true,"admit_per_second":0}`),
		400, `"field":"admit_per_second"`)
	expect("open the room", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":true,"admit_per_second":5}`),
		200, `"open":true`, `"admit_per_second":5`)
	if e := recv(t, watch); e.Room == nil || !e.Room.Open || e.Room.AdmitPerSecond != 5 {
		t.Fatalf("watch after opening = %v, want the room open at 5/s", e)
	}
	expect("hold without admission", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A1"],"client_id":"c1","request_id":"h0"}`),
		403, `"reason":"ADMISSION_REQUIRED"`, `waiting_room:join`)

	j := expect("join", httpDo(t, base, "POST", "/v1/shows/s/waiting_room:join", `{"client_id":"c1","request_id":"j1"}`),
		200, `"state":"WAITING"`, `"position":"1"`, `"people_ahead":"0"`)
	id, tok := j["entry_id"].(string), j["entry_token"].(string)
	// At 5/s the one waiting waits for its window to close and a fifth of
	// a second: the answer estimates it, rounded up to whole seconds.
	if w, _ := j["estimated_wait_seconds"].(float64); w < 1 || w > 2 {
		t.Fatalf("join = %v, want estimated_wait_seconds 1 or 2 at 5/s", j)
	}
	again := expect("join again", httpDo(t, base, "POST", "/v1/shows/s/waiting_room:join", `{"client_id":"c1","request_id":"j2"}`), 200)
	if again["entry_id"] != id {
		t.Fatalf("second join = entry %v, want %s", again["entry_id"], id)
	}
	path := "/v1/shows/s/waiting_room/entries/" + id
	expect("read with another token", httpDo(t, base, "GET", path+"?entry_token=AAAAAAAAAAAAAAAAAAAAAA", ""), 403, `"reason":"ROOM_TOKEN_INVALID"`)
	expect("read without a token", httpDo(t, base, "GET", path, ""), 400, `"field":"entry_token"`)
	if r := expect("read while waiting", httpDo(t, base, "GET", path+"?entry_token="+tok, ""), 200, `"state":"WAITING"`); r["estimated_wait_seconds"] == nil {
		t.Fatalf("waiting entry = %v, want an estimated_wait_seconds", r)
	}

	// The log's clock passes the arrival window: the driver admits.
	wc.clock.Add(2000)
	var entry map[string]any
	deadline := time.Now().Add(5 * time.Second)
	for {
		entry = expect("read the entry", httpDo(t, base, "GET", path+"?entry_token="+tok, ""), 200)
		if entry["state"] == "ADMITTED" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("entry still %v 5 s after its window closed", entry)
		}
		time.Sleep(20 * time.Millisecond)
	}
	adm, _ := entry["admission_token"].(string)
	if adm == "" || entry["admission_expires_at"] == nil {
		t.Fatalf("admitted entry %v has no admission token or expiry", entry)
	}
	for {
		e := recv(t, watch)
		if e.Room != nil && e.Room.AdmittedThrough >= 1 {
			break
		}
	}
	expect("hold with another client's admission", httpDo(t, base, "POST", "/v1/shows/s/holds",
		`{"seat_ids":["A1"],"client_id":"c2","request_id":"h1","admission_token":"`+adm+`"}`), 403, `"reason":"ADMISSION_REQUIRED"`)
	expect("hold with admission", httpDo(t, base, "POST", "/v1/shows/s/holds",
		`{"seat_ids":["A1"],"client_id":"c1","request_id":"h1","admission_token":"`+adm+`"}`), 200, `"hold_id"`)
	expect("room status", httpDo(t, base, "GET", "/v1/shows/s/waiting_room", ""), 200, `"admitted":"1"`, `"joined":"1"`)

	expect("close the room", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":false}`), 200, `"open":false`)
	expect("hold after closing", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A2"],"client_id":"c3","request_id":"h1"}`), 200)
	expect("entry after closing", httpDo(t, base, "GET", path+"?entry_token="+tok, ""), 200, `"state":"CLOSED"`)
	// Opening again as before opens it again: an operator's calls are not
	// retries of each other.
	expect("open the room again", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":true,"admit_per_second":5}`),
		200, `"open":true`)
	expect("close it again", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":false}`), 200, `"open":false`)

	// Armed, the closed room opens by itself when three holds arrive
	// within a second of log time: the third is refused without admission,
	// as every hold after it.
	expect("arm without a rate", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room", `{"open":false,"auto_open_arrivals_per_second":3}`),
		400, `"field":"admit_per_second"`)
	expect("arm the room", httpDo(t, base, "POST", "/v1/admin/shows/s/waiting_room",
		`{"open":false,"admit_per_second":4,"auto_open_arrivals_per_second":3}`), 200, `"open":false`, `"auto_open_arrivals_per_second":3`, `"auto_open_admit_per_second":4`)
	wc.clock.Add(1000) // a second of its own
	expect("first hold", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A3"],"client_id":"a1","request_id":"h"}`), 200)
	expect("second hold", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A4"],"client_id":"a2","request_id":"h"}`), 200)
	expect("third hold", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A5"],"client_id":"a3","request_id":"h"}`),
		403, `"reason":"ADMISSION_REQUIRED"`)
	expect("room opened by itself", httpDo(t, base, "GET", "/v1/shows/s/waiting_room", ""), 200, `"open":true`, `"admit_per_second":4`)
	expect("hold after it opened", httpDo(t, base, "POST", "/v1/shows/s/holds", `{"seat_ids":["A6"],"client_id":"a4","request_id":"h"}`),
		403, `"reason":"ADMISSION_REQUIRED"`)
}
