package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// requestBuckets: 0.5 ms to 8 s; a write is bounded by requestTimeoutDefault
// (5 s) with retries inside it.
var requestBuckets = prometheus.ExponentialBuckets(0.0005, 2, 15)

// Metrics counts and times the API's requests: gRPC by method and code (a
// unary and a stream interceptor, ServerOptions), HTTP by route pattern and
// status (HTTP). HTTP/JSON calls reach the Booking service in process, so
// they are counted once, as HTTP, not again as gRPC. Labels are bounded:
// methods are the registered ones, routes the registered patterns (never
// the request path), codes the protocol's.
type Metrics struct {
	grpcRequests *prometheus.CounterVec
	grpcLatency  *prometheus.HistogramVec
	httpRequests *prometheus.CounterVec
	httpLatency  *prometheus.HistogramVec
	// log, if set, receives one line per request that failed on the
	// server's side (not the client's, and not a retryable 503).
	log *slog.Logger

	// The gRPC series already made (grpcSeriesOf): a Vec's WithLabelValues
	// hashes, checks and copies its labels on every call.
	mu            sync.RWMutex
	grpcCounters  map[grpcSeries]prometheus.Counter
	grpcObservers map[string]prometheus.Observer
}

// grpcSeries names a request counter: a method and a code.
type grpcSeries struct {
	method string
	code   codes.Code
}

// NewMetrics registers the API's metrics with reg; log may be nil.
func NewMetrics(reg prometheus.Registerer, log *slog.Logger) (*Metrics, error) {
	m := &Metrics{
		grpcRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "grpc", Name: "requests_total",
			Help: "gRPC requests served, by full method and status code (streams count when they end)."}, []string{"method", "code"}),
		grpcLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "grpc", Name: "request_duration_seconds",
			Help: "gRPC request latency by full method (a stream's whole life).", Buckets: requestBuckets}, []string{"method"}),
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests served, by route pattern and status code."}, []string{"route", "code"}),
		httpLatency: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "http", Name: "request_duration_seconds",
			Help: "HTTP request latency by route pattern.", Buckets: requestBuckets}, []string{"route"}),
		log:           log,
		grpcCounters:  map[grpcSeries]prometheus.Counter{},
		grpcObservers: map[string]prometheus.Observer{},
	}
	for _, c := range []prometheus.Collector{m.grpcRequests, m.grpcLatency, m.httpRequests, m.httpLatency} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Live state of a Server, read when scraped: a lock or an atomic load each,
// nothing kept per request.
var (
	descWatchers = prometheus.NewDesc("seatledger_watchers",
		"Live seat-map watches (Watch streams) this node serves, by wire: sse (GET /v1/shows/{show_id}/events) or grpc.", []string{"protocol"}, nil)
	descRateLimited = prometheus.NewDesc("seatledger_admission_rate_limited_total",
		"Writes this node refused with 429 RATE_LIMITED because their client_id was over --client-rate.", nil, nil)
)

// RegisterMetrics registers the server's live gauges with reg: watches by
// wire and writes refused by admission control. Call once, before serving.
func (s *Server) RegisterMetrics(reg prometheus.Registerer) error {
	return reg.Register(serverCollector{s})
}

// serverCollector reports a Server's live state.
type serverCollector struct{ s *Server }

// Describe sends the descriptors.
func (c serverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descWatchers
	ch <- descRateLimited
}

// Collect reads the live counts.
func (c serverCollector) Collect(ch chan<- prometheus.Metric) {
	live := c.s.watches.live()
	for p := range watchProtos {
		ch <- prometheus.MustNewConstMetric(descWatchers, prometheus.GaugeValue, float64(live[p]), p.String())
	}
	ch <- prometheus.MustNewConstMetric(descRateLimited, prometheus.CounterValue, float64(c.s.rateLimited.Load()))
}

// ServerOptions are the interceptors to pass to NewGRPCServer.
func (m *Metrics) ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{grpc.ChainUnaryInterceptor(m.unary), grpc.ChainStreamInterceptor(m.stream)}
}

func (m *Metrics) unary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	m.observeGRPC(info.FullMethod, start, err)
	return resp, err
}

func (m *Metrics) stream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := handler(srv, ss)
	m.observeGRPC(info.FullMethod, start, err)
	return err
}

func (m *Metrics) observeGRPC(method string, start time.Time, err error) {
	took := time.Since(start)
	code := status.Code(err)
	requests, latency := m.grpcSeriesOf(method, code)
	requests.Inc()
	latency.Observe(took.Seconds())
	if m.log != nil && serverFault(code) {
		m.log.Error("grpc request failed", "method", method, "code", code.String(), "duration", took, "err", err)
	}
}

// grpcSeriesOf returns the request counter of method and code and the
// latency observer of method, each made on its first use. The labels are
// bounded (Metrics), so are the maps.
func (m *Metrics) grpcSeriesOf(method string, code codes.Code) (prometheus.Counter, prometheus.Observer) {
	key := grpcSeries{method, code}
	m.mu.RLock()
	requests, latency := m.grpcCounters[key], m.grpcObservers[method]
	m.mu.RUnlock()
	if requests != nil && latency != nil {
		return requests, latency
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if requests = m.grpcCounters[key]; requests == nil {
		requests = m.grpcRequests.WithLabelValues(method, code.String())
		m.grpcCounters[key] = requests
	}
	if latency = m.grpcObservers[method]; latency == nil {
		latency = m.grpcLatency.WithLabelValues(method)
		m.grpcObservers[method] = latency
	}
	return requests, latency
}

// serverFault reports codes that mean the server is broken rather than the
// request refused or the cluster briefly without a leader.
func serverFault(c codes.Code) bool {
	return c == codes.Internal || c == codes.Unknown || c == codes.DataLoss
}

// routeNote carries the matched route pattern out of the grpc-gateway mux,
// which keeps it in a context the outer handler never sees.
type routeNote struct{ route string }

type routeNoteKey struct{}

// noteRoute is a grpc-gateway middleware: it records the pattern the
// gateway matched (as "METHOD /v1/shows/{show_id}/holds") for HTTP.
func noteRoute(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if n, ok := r.Context().Value(routeNoteKey{}).(*routeNote); ok {
			if p, ok := runtime.HTTPPattern(r.Context()); ok {
				// Pattern.String spells a capture {show_id=*}.
				n.route = r.Method + " " + strings.ReplaceAll(p.String(), "=*}", "}")
			}
		}
		next(w, r, params)
	}
}

// HTTP counts and times requests to h by route pattern and status: the
// grpc-gateway pattern the request matched, else the net/http ServeMux
// pattern (which ServeMux records in the request it is handed), else
// "unmatched".
func (m *Metrics) HTTP(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		note := &routeNote{}
		r = r.WithContext(context.WithValue(r.Context(), routeNoteKey{}, note))
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(sw, r)
		route := note.route
		if route == "" {
			route = r.Pattern
		}
		if route == "" {
			route = "unmatched"
		}
		took := time.Since(start)
		m.httpRequests.WithLabelValues(route, strconv.Itoa(sw.code)).Inc()
		m.httpLatency.WithLabelValues(route).Observe(took.Seconds())
		if m.log != nil && sw.code >= 500 && sw.code != http.StatusServiceUnavailable {
			m.log.Error("http request failed", "route", route, "status", sw.code, "duration", took)
		}
	})
}

// statusWriter remembers the status written. It passes Flush through, as
// streaming responses (server-sent events) need it.
type statusWriter struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.code, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Flush flushes the underlying writer if it can.
func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError flushes and reports a failed write, for
// http.ResponseController (the SSE handler's), which prefers it to Flush.
func (w *statusWriter) FlushError() error {
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
