package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// retries checks what seatctl prints to repeat a write from another run:
// the retry replays the first hold instead of making a second, and a
// write whose first send is past the retry horizon is refused, not run.
func (sc *seatctl) retries() {
	t := sc.t
	t.Helper()
	out, errOut, code := sc.run("hold", "e2e-show", "B5", "--client-id", "e2e", "-o", "json")
	if code != exitOK {
		t.Fatalf("hold B5 = exit %d\n%s%s", code, out, errOut)
	}
	m := regexp.MustCompile(`to retry this exact request: (--request-id (\S+) --first-sent (\d+))\)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("hold printed no retry flags on stderr:\n%s", errOut)
	}
	if sent, _ := strconv.ParseInt(m[3], 10, 64); time.Since(time.UnixMilli(sent)).Abs() > time.Minute {
		t.Fatalf("--first-sent %s is not the time of the run", m[3])
	}
	var first, again struct {
		HoldID   string `json:"hold_id"`
		Replayed bool   `json:"replayed"`
	}
	json.Unmarshal([]byte(out), &first)
	retried := sc.ok(append([]string{"hold", "e2e-show", "B5", "--client-id", "e2e", "-o", "json"}, strings.Fields(m[1])...)...)
	if err := json.Unmarshal([]byte(retried), &again); err != nil || again.HoldID != first.HoldID || !again.Replayed {
		t.Fatalf("retry with %s = %s, want hold %s replayed", m[1], retried, first.HoldID)
	}

	dayAgo := strconv.FormatInt(time.Now().Add(-24*time.Hour).UnixMilli(), 10)
	out, errOut, code = sc.run("hold", "e2e-show", "B6", "--client-id", "e2e", "--request-id", "e2e-forgotten", "--first-sent", dayAgo)
	if code == exitOK || !strings.Contains(out+errOut, "REQUEST_EXPIRED") {
		t.Fatalf("hold first sent a day ago = exit %d\n%s%s\nwant REQUEST_EXPIRED", code, out, errOut)
	}
	if view := sc.ok("seatmap", "e2e-show"); !strings.Contains(view, "B  ....h") || strings.Contains(view, "B  ....hh") {
		t.Fatalf("seat map after the refused retry: want B5 held and B6 free:\n%s", view)
	}
	if _, errOut, code = sc.run("hold", "e2e-show", "B6", "--first-sent", "-1"); code == exitOK || !strings.Contains(errOut, "--first-sent") {
		t.Fatalf("--first-sent -1 = exit %d, %q; want a usage error naming the flag", code, errOut)
	}
}
