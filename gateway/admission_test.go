// This file proves admission control: a client's bucket admits its burst,
// then refuses with the time until the next token, refills at the rate, and
// never touches another client's bucket; a refusal reads over HTTP as 429
// RATE_LIMITED with a Retry-After header rounded up to whole seconds.
package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestLimiterBucket(t *testing.T) {
	l := newLimiter(Admission{Rate: 10, Burst: 3})
	t0 := time.Unix(1000, 0)
	for i := range 3 {
		if ok, _ := l.allow("flood", t0); !ok {
			t.Fatalf("allow(flood) #%d at t0 = refused, want admitted within the burst of 3", i+1)
		}
	}
	ok, wait := l.allow("flood", t0)
	if ok || wait != 100*time.Millisecond {
		t.Fatalf("allow(flood) #4 at t0 = %v, wait %v, want refused with wait 100ms", ok, wait)
	}
	if ok, _ := l.allow("calm", t0); !ok {
		t.Fatalf("allow(calm) at t0 = refused, want admitted: buckets are per client")
	}
	if ok, _ := l.allow("flood", t0.Add(100*time.Millisecond)); !ok {
		t.Fatalf("allow(flood) 100ms later = refused, want one token refilled at 10/s")
	}
	if ok, _ := l.allow("flood", t0.Add(100*time.Millisecond)); ok {
		t.Fatalf("allow(flood) again at once = admitted, want refused")
	}
	// An idle client refills to the burst, not beyond.
	t1 := t0.Add(time.Hour)
	for i := range 3 {
		if ok, _ := l.allow("flood", t1); !ok {
			t.Fatalf("allow(flood) #%d after an hour = refused, want the full burst", i+1)
		}
	}
	if ok, _ := l.allow("flood", t1); ok {
		t.Fatalf("allow(flood) #4 after an hour = admitted, want the bucket capped at its burst")
	}
}

// TestLimiterSweepsIdleBuckets: past clientBucketsMax buckets a new client
// drops the idle ones, and a bucket still refilling keeps its tokens.
func TestLimiterSweepsIdleBuckets(t *testing.T) {
	l := newLimiter(Admission{Rate: 1, Burst: 2})
	t0 := time.Unix(1000, 0)
	for i := range clientBucketsMax - 1 {
		l.allow(fmt.Sprintf("idle-%d", i), t0)
	}
	late := t0.Add(clientBucketIdle + time.Second)
	l.allow("busy", late)
	l.allow("busy", late) // its burst spent
	if n := len(l.mu.buckets); n != clientBucketsMax {
		t.Fatalf("%d buckets before the sweep, want %d", n, clientBucketsMax)
	}
	if ok, _ := l.allow("newcomer", late); !ok {
		t.Fatal("allow(newcomer) = refused, want its full burst")
	}
	if n := len(l.mu.buckets); n != 2 {
		t.Fatalf("%d buckets after the sweep, want 2 (busy and newcomer): the idle ones dropped", n)
	}
	if ok, _ := l.allow("busy", late); ok {
		t.Fatal("allow(busy) after the sweep = admitted, want refused: its bucket survived, empty")
	}
}

func TestLimiterOff(t *testing.T) {
	l := newLimiter(Admission{Rate: 0})
	for range 1000 {
		if ok, _ := l.allow("c", time.Unix(0, 0)); !ok {
			t.Fatal("allow with rate 0 = refused, want the limit off")
		}
	}
}

// TestRateLimitedOverHTTP checks that Retry-After and the body's
// retry_delay say the same whole seconds, rounded up.
func TestRateLimitedOverHTTP(t *testing.T) {
	for _, tt := range []struct {
		wait  time.Duration
		after string
	}{{1900 * time.Microsecond, "1"}, {1500 * time.Millisecond, "2"}, {2 * time.Second, "2"}, {0, "1"}} {
		rec := httptest.NewRecorder()
		writeError(context.Background(), nil, jsonMarshaler, rec, httptest.NewRequest("POST", "/v1/shows/s/holds", nil),
			rateLimitedError("flood", tt.wait))
		body := rec.Body.String()
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != tt.after ||
			!strings.Contains(body, "RATE_LIMITED") || !strings.Contains(body, `"retry_delay":"`+tt.after+`s"`) {
			t.Errorf("RATE_LIMITED after %v over HTTP = %d Retry-After %q %s, want 429, Retry-After %s, retry_delay %ss and the reason",
				tt.wait, rec.Code, rec.Header().Get("Retry-After"), body, tt.after, tt.after)
		}
	}
}
