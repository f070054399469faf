// This file proves that `seatd serve --watchers-max` caps the live seat-map
// streams of one real seatd process: with --watchers-max 1 on n1 only, a
// first SSE stream at n1 opens, a second is refused with 429
// TOO_MANY_WATCHERS, Retry-After and the reason in words (docs/API.md),
// while n2, at the default, serves one; once n1's stream ends its slot is
// free again.
package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestWatchersMaxFlagCapsTheNode(t *testing.T) {
	ctx, c := startWatchCluster(t, func(n *proccluster.Node) []string {
		if n.ID == "n1" {
			return []string{"--watchers-max", "1"}
		}
		return nil
	})
	n1, n2 := "http://"+c.Nodes()[0].HTTPAddr, "http://"+c.Nodes()[1].HTTPAddr

	const show = "capped"
	body, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&ledgerpb.CreateShowRequest{Show: testShow(show)})
	if err != nil {
		t.Fatal(err)
	}
	httpCall(t, "POST", n1+"/v1/shows", string(body)).wantStatus(t, "POST /v1/shows", http.StatusOK)

	first := getEventsAt(ctx, t, n1, show)
	wantEventStream(t, "first stream at n1", first)
	refused := getEventsAt(ctx, t, n1, show)
	if refused.StatusCode == http.StatusOK {
		refused.Body.Close() // a stream: its body never ends
		t.Fatalf("second stream at n1 with --watchers-max 1 = 200, want 429 TOO_MANY_WATCHERS")
	}
	b, _ := io.ReadAll(refused.Body)
	refused.Body.Close()
	var e struct {
		Message string `json:"message"`
	}
	json.Unmarshal(b, &e)
	if refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Content-Type") != "application/json" ||
		refused.Header.Get("Retry-After") != "1" || !strings.Contains(string(b), "TOO_MANY_WATCHERS") ||
		!strings.Contains(e.Message, "as many watches as it may") {
		t.Errorf("second stream at n1 with --watchers-max 1 = %d %q Retry-After %q %s, want 429 application/json, Retry-After 1, TOO_MANY_WATCHERS and the reason in words",
			refused.StatusCode, refused.Header.Get("Content-Type"), refused.Header.Get("Retry-After"), b)
	}
	other := getEventsAt(ctx, t, n2, show)
	wantEventStream(t, "stream at n2, at the default limit", other)
	other.Body.Close()

	// The client leaves: n1 notices, and admits a watcher again.
	first.Body.Close()
	for deadline := time.Now().Add(clusterWaitMax); ; time.Sleep(50 * time.Millisecond) {
		again := getEventsAt(ctx, t, n1, show)
		code := again.StatusCode
		again.Body.Close()
		if code == http.StatusOK {
			break
		}
		if code != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("stream at n1 after its only watcher left = %d, want 200 (within %v)", code, clusterWaitMax)
		}
	}
}

// getEventsAt opens GET /v1/shows/{show}/events at base; the caller closes
// the body.
func getEventsAt(ctx context.Context, t *testing.T, base, show string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/v1/shows/"+show+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s events: %v", base, err)
	}
	return resp
}

func wantEventStream(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s = %d %q %s, want 200 text/event-stream", what, resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}
