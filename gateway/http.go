package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/gateway/web"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// Limits on what a client may send.
const (
	// httpBodyBytesMax bounds an HTTP request body.
	httpBodyBytesMax = 1 << 20
	// grpcMessageBytesMax bounds a gRPC message.
	grpcMessageBytesMax = 4 << 20
	// grpcStreamWorkers is the size of the gRPC server's goroutine pool.
	grpcStreamWorkers = 64
	// watchKeepaliveTimeout is how long a pinged connection may take to
	// answer before it is closed.
	watchKeepaliveTimeout = 10 * time.Second
)

// NewGRPCServer returns a gRPC server with the Booking service, the internal
// Peer service, health and reflection; opts add to its options (such as
// Metrics.ServerOptions). The Peer service requires the admin token (auth.go)
// and a caller of this node's cluster (shard/cluster.go).
func NewGRPCServer(srv *Server, router *shard.Router, opts ...grpc.ServerOption) *grpc.Server {
	g := grpc.NewServer(append([]grpc.ServerOption{grpc.MaxRecvMsgSize(grpcMessageBytesMax),
		// A pool of goroutines whose stacks have grown serves the calls; a
		// new goroutine per call grew its stack on every call (copystack was
		// 13 % of a node's CPU serving seat maps). When all are busy (or
		// held by Watch streams) a call gets its own goroutine as before.
		grpc.NumStreamWorkers(grpcStreamWorkers),
		// The Peer service: authenticate, then check the cluster.
		grpc.ChainUnaryInterceptor(srv.auth.peerAuthUnary, peerClusterUnary(router)),
		grpc.ChainStreamInterceptor(srv.auth.peerAuthStream, peerClusterStream(router)),
		// Ping idle connections, so that a Watch stream to a client that
		// vanished without closing its connection ends.
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: watchKeepalive, Timeout: watchKeepaliveTimeout})}, opts...)...)
	ledgerpb.RegisterBookingServer(g, srv)
	ledgerpb.RegisterPeerServer(g, router.PeerServer())
	ledgerpb.RegisterAdminServer(g, srv.admin(router))
	ledgerpb.RegisterCatalogServer(g, srv.catalog(router))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("seatledger.v1.Booking", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("seatledger.v1.Catalog", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(g, hs)
	reflection.Register(g)
	return g
}

// jsonMarshaler writes proto field names and every field, and reads proto or
// lowerCamel names, ignoring unknown fields.
var jsonMarshaler = &runtime.JSONPb{
	MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
	UnmarshalOptions: protojson.UnmarshalOptions{DiscardUnknown: true},
}

// NewHTTPHandler returns the HTTP/JSON API (grpc-gateway, calling srv in
// process) plus /healthz and the web pages (/, /admin, /assets/).
func NewHTTPHandler(ctx context.Context, srv *Server, router *shard.Router) (http.Handler, error) {
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, jsonMarshaler),
		runtime.WithErrorHandler(writeError),
		runtime.WithMiddlewares(noteRoute), // for Metrics.HTTP's route label
	)
	if err := ledgerpb.RegisterBookingHandlerServer(ctx, gw, srv); err != nil {
		return nil, err
	}
	if err := ledgerpb.RegisterAdminHandlerServer(ctx, gw, srv.admin(router)); err != nil {
		return nil, err
	}
	if err := ledgerpb.RegisterCatalogHandlerServer(ctx, gw, srv.catalog(router)); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.MaxBytesHandler(gw, httpBodyBytesMax))
	// Server-Sent Events by hand: grpc-gateway streams newline-delimited
	// JSON, which no EventSource reads.
	mux.HandleFunc("GET /v1/shows/{show_id}/events", srv.serveEvents)
	mux.HandleFunc("GET /healthz", healthz(router))
	mux.HandleFunc("GET /v1/shows/{show_id}/bookings/{hold_id}/tickets/{seat_id}/qr.png", ticketQR(srv))
	web.Register(mux)
	return mux, nil
}

// writeError writes a google.rpc.Status as JSON with the HTTP status its
// reason maps to.
func writeError(ctx context.Context, _ *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, _ *http.Request, err error) {
	s := status.Convert(err)
	code := httpStatus(s)
	body, merr := m.Marshal(s.Proto())
	if merr != nil {
		code, body = http.StatusInternalServerError, []byte(`{"code":13,"message":"failed to encode the error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	if code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds(s)))
	}
	w.WriteHeader(code)
	w.Write(body)
}

// retryAfterSeconds is a status's RetryInfo delay rounded up to whole
// seconds (HTTP's unit), or the default hint.
func retryAfterSeconds(s *status.Status) int {
	for _, d := range s.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.RetryDelay != nil {
			return max(1, int(math.Ceil(ri.RetryDelay.AsDuration().Seconds())))
		}
	}
	return int(retryAfter.Seconds())
}

// healthz reports the node and what it knows of each group's leader.
func healthz(router *shard.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		type group struct {
			ID      uint32 `json:"id"`
			Leader  string `json:"leader"`
			Applied uint64 `json:"applied"`
		}
		out := struct {
			Status string  `json:"status"`
			Node   string  `json:"node"`
			Groups []group `json:"groups"`
		}{Status: "serving", Node: router.Node().ID()}
		for _, g := range router.Node().Groups() {
			out.Groups = append(out.Groups, group{ID: g.ID(), Leader: g.Leader(), Applied: g.Machine().Applied()})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(out)
	}
}
