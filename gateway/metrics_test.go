// This file proves the API metrics' labels: HTTP requests are counted by
// the route pattern they matched (grpc-gateway's or net/http's), never by
// their path, so show and hold ids cannot become series; unmatched paths
// share one label; streaming responses can still flush through the
// middleware; gRPC calls are counted by full method and status code, unary
// and streams alike, and only server faults are logged.
package gateway

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// count returns the value of the counter name with exactly labels, or the
// observation count of such a histogram.
func count(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.Metric {
			if len(m.Label) != len(labels) {
				continue
			}
			for _, l := range m.Label {
				if labels[l.GetName()] != l.GetValue() {
					continue metrics
				}
			}
			if m.Histogram != nil {
				return float64(m.Histogram.GetSampleCount())
			}
			return m.Counter.GetValue()
		}
	}
	return 0
}

func TestHTTPMetricsLabelRoutePatterns(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	gw := runtime.NewServeMux(runtime.WithMiddlewares(noteRoute))
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(gw.HandlePath("POST", "/v1/shows/{show_id}/holds", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.WriteHeader(http.StatusConflict)
	}))
	must(gw.HandlePath("POST", "/v1/shows/{show_id}/holds/{hold_id}:confirm", func(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
		w.Write([]byte("{}"))
	}))
	mux := http.NewServeMux()
	mux.Handle("/v1/", gw)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {})
	mux.HandleFunc("GET /v1/shows/{show_id}/events", func(w http.ResponseWriter, _ *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			t.Error("events handler: ResponseWriter is not an http.Flusher behind the middleware")
			return
		}
		w.Write([]byte("data: x\n\n"))
		f.Flush()
	})
	h := m.HTTP(mux)
	for _, c := range []struct{ method, path string }{
		{"POST", "/v1/shows/show-123/holds"},
		{"POST", "/v1/shows/show-456/holds"},
		{"POST", "/v1/shows/show-123/holds/h-9:confirm"},
		{"GET", "/healthz"},
		{"GET", "/v1/shows/show-123/events"},
		{"GET", "/v1/no/such/route"},
		{"GET", "/favicon.ico"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(c.method, c.path, nil))
	}
	for _, c := range []struct {
		route, code string
		want        float64
	}{
		{"POST /v1/shows/{show_id}/holds", "409", 2},
		{"POST /v1/shows/{show_id}/holds/{hold_id}:confirm", "200", 1},
		{"GET /healthz", "200", 1},
		{"GET /v1/shows/{show_id}/events", "200", 1},
		{"/v1/", "404", 1},
		{"unmatched", "404", 1},
	} {
		if got := count(t, reg, "seatledger_http_requests_total", map[string]string{"route": c.route, "code": c.code}); got != c.want {
			t.Errorf("http_requests_total{route=%q,code=%s} = %v, want %v", c.route, c.code, got, c.want)
		}
	}
	if got := count(t, reg, "seatledger_http_request_duration_seconds", map[string]string{"route": "POST /v1/shows/{show_id}/holds"}); got != 2 {
		t.Errorf("http_request_duration_seconds count for holds = %v, want 2", got)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, met := range mf.Metric {
			for _, l := range met.Label {
				if strings.Contains(l.GetValue(), "show-") || strings.Contains(l.GetValue(), "h-9") {
					t.Errorf("%s has label %s=%q: a request id became a series", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func TestGRPCMetricsByMethodAndCode(t *testing.T) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	m, err := NewMetrics(reg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	hold := &grpc.UnaryServerInfo{FullMethod: "/seatledger.v1.Booking/Hold"}
	for _, err := range []error{nil, nil, status.Error(codes.Aborted, "seats taken"), status.Error(codes.Internal, "broken")} {
		m.unary(context.Background(), nil, hold, func(context.Context, any) (any, error) { return nil, err })
	}
	watch := &grpc.StreamServerInfo{FullMethod: "/seatledger.v1.Booking/Watch", IsServerStream: true}
	m.stream(nil, nil, watch, func(any, grpc.ServerStream) error { return status.Error(codes.Canceled, "gone") })
	for _, c := range []struct {
		method, code string
		want         float64
	}{
		{hold.FullMethod, "OK", 2},
		{hold.FullMethod, "Aborted", 1},
		{hold.FullMethod, "Internal", 1},
		{watch.FullMethod, "Canceled", 1},
	} {
		if got := count(t, reg, "seatledger_grpc_requests_total", map[string]string{"method": c.method, "code": c.code}); got != c.want {
			t.Errorf("grpc_requests_total{method=%s,code=%s} = %v, want %v", c.method, c.code, got, c.want)
		}
	}
	if got := count(t, reg, "seatledger_grpc_request_duration_seconds", map[string]string{"method": hold.FullMethod}); got != 4 {
		t.Errorf("grpc_request_duration_seconds count for Hold = %v, want 4", got)
	}
	if n := strings.Count(logs.String(), "grpc request failed"); n != 1 || !strings.Contains(logs.String(), "code=Internal") {
		t.Errorf("logged %d failures, want 1 (the Internal one):\n%s", n, logs.String())
	}
}

// BenchmarkObserveGRPC measures what the gRPC interceptor adds to a call.
func BenchmarkObserveGRPC(b *testing.B) {
	m, err := NewMetrics(prometheus.NewRegistry(), nil)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		m.observeGRPC("/seatledger.v1.Booking/Hold", start, nil)
	}
}
