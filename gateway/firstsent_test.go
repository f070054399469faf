// This file proves the first send time end to end: grpc-gateway forwards
// the HTTP header and gRPC carries the metadata, through a node that
// forwards to the group's leader, into the FSM; a value that is not Unix
// milliseconds, or lies ahead of the node's clock, is 400 naming the
// header; a request first sent past the horizon is REQUEST_EXPIRED (422,
// FailedPrecondition); and once the leader's clock has aged a request's
// record out, its retry is refused and takes nothing, while without the
// header it runs as a new request (as before the header existed).
package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestParseFirstSent(t *testing.T) {
	tests := []struct {
		in   []string
		want int64 // 0: an error
	}{
		{[]string{"1767225600000"}, 1767225600000},
		{[]string{"1"}, 1},
		{[]string{"0"}, 0},
		{[]string{""}, 0},
		{[]string{"-5"}, 0},
		{[]string{"+5"}, 0},
		{[]string{" 5"}, 0},
		{[]string{"1.7e12"}, 0},
		{[]string{"2026-11-26T16:00:00Z"}, 0},
		{[]string{"12345678901234567"}, 0}, // 17 digits
		{[]string{"1", "1"}, 0},
	}
	for _, tt := range tests {
		got, err := parseFirstSent(tt.in)
		if tt.want == 0 && err == nil {
			t.Errorf("parseFirstSent(%q) = %d, want an error", tt.in, got)
		}
		if tt.want != 0 && (err != nil || got != tt.want) {
			t.Errorf("parseFirstSent(%q) = %d, %v, want %d", tt.in, got, err, tt.want)
		}
	}
}

func TestIncomingHeaderForwardsFirstSent(t *testing.T) {
	if client.FirstSentKey != FirstSentKey {
		t.Errorf("client.FirstSentKey = %q, want the gateway's %q", client.FirstSentKey, FirstSentKey)
	}
	for _, h := range []string{"Seatledger-First-Sent-At", "seatledger-first-sent-at", "SEATLEDGER-FIRST-SENT-AT"} {
		if key, ok := incomingHeader(h); !ok || key != FirstSentKey {
			t.Errorf("incomingHeader(%q) = %q, %v, want %q, true", h, key, ok, FirstSentKey)
		}
	}
	for _, h := range []string{"Authorization", "X-Other", "Grpc-Metadata-Foo"} {
		key, ok := incomingHeader(h)
		if wantKey, wantOK := runtime.DefaultHeaderMatcher(h); key != wantKey || ok != wantOK {
			t.Errorf("incomingHeader(%q) = %q, %v, want the default's %q, %v", h, key, ok, wantKey, wantOK)
		}
	}
}

func httpWrite(t *testing.T, base, path, body, firstSent string) httpAnswer {
	t.Helper()
	req, err := http.NewRequest("POST", base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if firstSent != "" {
		req.Header.Set(FirstSentHeader, firstSent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return httpAnswer{resp.StatusCode, resp.Header, string(b)}
}

func TestFirstSentPastHorizon(t *testing.T) {
	wc := startWatchCluster(t)
	wc.createShow("s")
	base := wc.nodes[1].http.URL // n2 hosts no group: it forwards to n1
	sent := wc.clock.Load()
	hold := `{"seat_ids":["A1"],"client_id":"c","request_id":"r1","ttl_seconds":60}`
	a := httpWrite(t, base, "/v1/shows/s/holds", hold, strconv.FormatInt(sent, 10))
	var first struct {
		HoldID string `json:"hold_id"`
	}
	if a.code != 200 || json.Unmarshal([]byte(a.body), &first) != nil || first.HoldID == "" {
		t.Fatalf("Hold(A1) with %s = %d %s, want 200 with a hold", FirstSentHeader, a.code, a.body)
	}

	ahead := strconv.FormatInt(time.Now().UnixMilli()+fsm.FirstSentAheadMaxMs+60_000, 10)
	for _, bad := range []string{"abc", "-5", "0", "2026-11-26T16:00:00Z", ahead} {
		a := httpWrite(t, base, "/v1/shows/s/holds", `{"seat_ids":["A2"],"client_id":"c","request_id":"bad"}`, bad)
		if a.code != 400 || !strings.Contains(a.body, `"field":"seatledger-first-sent-at"`) {
			t.Errorf("Hold with %s: %q = %d %s, want 400 naming the header", FirstSentHeader, bad, a.code, a.body)
		}
	}

	// gRPC: a request first sent longer ago than the horizon, never run.
	old := strconv.FormatInt(sent-fsm.RequestHorizonMs-1000, 10)
	ctx := metadata.AppendToOutgoingContext(context.Background(), FirstSentKey, old)
	_, err := wc.nodes[1].client.Hold(ctx, &ledgerpb.HoldRequest{ShowId: "s", SeatIds: []string{"A2"}, ClientId: "c", RequestId: "late"})
	if s := status.Convert(err); s.Code() != codes.FailedPrecondition || reasonOf(s) != "REQUEST_EXPIRED" {
		t.Errorf("Hold first sent 23h ago over gRPC = %v, want FailedPrecondition REQUEST_EXPIRED", err)
	}

	// Age r1's record out: the leader's Expire entries prune it. Until
	// they do, a retry replays; after, it is refused; never run again.
	wc.clock.Add(fsm.RequestRetentionMs + 60*60*1000 + 1000)
	deadline := time.Now().Add(watchTimeout)
	for {
		a := httpWrite(t, base, "/v1/shows/s/holds", hold, strconv.FormatInt(sent, 10))
		if a.code == 422 {
			if !strings.Contains(a.body, `"reason":"REQUEST_EXPIRED"`) || !strings.Contains(a.body, "new request_id") {
				t.Errorf("retry past the horizon = %d %s, want REQUEST_EXPIRED saying to use a new request_id", a.code, a.body)
			}
			break
		}
		if a.code != 200 || !strings.Contains(a.body, `"hold_id":"`+first.HoldID+`"`) || !strings.Contains(a.body, `"replayed":true`) {
			t.Fatalf("retry of r1 = %d %s, want a replay of %s or 422: executed again", a.code, a.body, first.HoldID)
		}
		if time.Now().After(deadline) {
			t.Fatalf("r1's record was not pruned within %v", watchTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sm := call(t, "GetSeatMap", func(ctx context.Context) (*ledgerpb.SeatMap, error) {
		return wc.nodes[0].srv.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: "s"})
	})
	for _, seat := range sm.Seats {
		if seat.State != ledgerpb.SeatState_FREE {
			t.Errorf("seat %s = %v after the refused retries, want FREE", seat.SeatId, seat.State)
		}
	}

	// Without the header the same retry runs as a new request.
	a = httpWrite(t, base, "/v1/shows/s/holds", hold, "")
	if a.code != 200 || strings.Contains(a.body, first.HoldID) || strings.Contains(a.body, `"replayed":true`) {
		t.Errorf("retry of r1 without %s = %d %s, want 200 with a new hold", FirstSentHeader, a.code, a.body)
	}
}
