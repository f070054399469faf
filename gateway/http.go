package gateway

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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
	// Protobuf with undecodable requests recorded (decode.go), and a
	// watch's shared frames sent as the bytes they are (watchCodec).
	codec := newRequestCodec()
	codec.CodecV2 = watchCodec{codec.CodecV2}
	g := grpc.NewServer(append(append(grpcLimits(), grpc.ForceServerCodecV2(codec),
		// A pool of goroutines whose stacks have grown serves the calls: a
		// new goroutine per call grows its stack again on every call, a
		// cost that showed in seat-map profiles (docs/PERFORMANCE.md). When
		// all are busy (or held by Watch streams) a call gets its own
		// goroutine as before.
		grpc.NumStreamWorkers(grpcStreamWorkers),
		// Stop returns once the handlers it cancelled have: seatd closes
		// raft and Pebble right after, and a Watch or read handler still
		// running would use them closed (a "pebble: closed" panic).
		grpc.WaitForHandlers(true)), opts...)...)
	// Every service answers a request it cannot decode INVALID_ARGUMENT;
	// the Peer service authenticates and checks the cluster before it
	// decodes anything (decode.go).
	reg := guardedServer{Server: g, codec: codec}
	ledgerpb.RegisterBookingServer(reg, srv)
	reg.registerChecked(&ledgerpb.Peer_ServiceDesc, srv.auth.peerCheck(router), router.PeerServer())
	ledgerpb.RegisterAdminServer(reg, srv.admin(router))
	ledgerpb.RegisterCatalogServer(reg, srv.catalog(router))
	ledgerpb.RegisterWaitingRoomServer(reg, srv.waitingRoom())
	// Health answers readiness (health.go), as /readyz does.
	healthpb.RegisterHealthServer(reg, readyHealth{router: router})
	reflection.Register(reg)
	return g
}

// jsonMarshaler writes proto field names and every field of a success, and
// reads proto or lowerCamel names, refusing unknown fields (json.go).
var jsonMarshaler = &runtime.JSONPb{
	MarshalOptions:   protojson.MarshalOptions{UseProtoNames: true, EmitUnpopulated: true},
	UnmarshalOptions: protojson.UnmarshalOptions{},
}

// errorMarshaler writes error bodies without empty fields: an ErrorDetail
// names only what the reason has (taken seats, a limit, a queue entry).
var errorMarshaler = protojson.MarshalOptions{UseProtoNames: true}

// HTTPConfig is what an HTTP handler serves beyond the API.
type HTTPConfig struct {
	// CORS lets browser pages of other origins call the API (cors.go).
	CORS CORSConfig
}

// Validate checks the config.
func (c HTTPConfig) Validate() error { return c.CORS.Validate() }

// NewHTTPHandler returns the HTTP/JSON API (grpc-gateway, calling srv in
// process) plus /healthz, /readyz, /openapi.json and the web pages (/,
// /admin, /assets/).
func NewHTTPHandler(ctx context.Context, srv *Server, router *shard.Router, cfg HTTPConfig) (http.Handler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	routes, err := newRouteTable(openAPIJSON)
	if err != nil {
		return nil, err
	}
	gw := runtime.NewServeMux(
		runtime.WithMarshalerOption(runtime.MIMEWildcard, strictJSON{jsonMarshaler}),
		runtime.WithErrorHandler(writeError),
		runtime.WithRoutingErrorHandler(routingError(routes)),
		runtime.WithMiddlewares(noteRoute), // for Metrics.HTTP's route label
		runtime.WithIncomingHeaderMatcher(incomingHeader),
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
	if err := ledgerpb.RegisterWaitingRoomHandlerServer(ctx, gw, srv.waitingRoom()); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/v1/", http.MaxBytesHandler(withBodyDeadline(withBodyReader(gw)), httpBodyBytesMax))
	// Server-Sent Events by hand: grpc-gateway streams newline-delimited
	// JSON, which no EventSource reads.
	mux.HandleFunc("GET /v1/shows/{show_id}/events", srv.serveEvents)
	mux.HandleFunc("GET /healthz", healthz(router))
	mux.HandleFunc("GET /readyz", readyz(router))
	mux.HandleFunc("GET /openapi.json", serveOpenAPI)
	mux.HandleFunc("GET /v1/shows/{show_id}/bookings/{hold_id}/tickets/{seat_id}/qr.png", ticketQR(srv))
	web.Register(mux)
	return cfg.CORS.handler(mux), nil
}

// routingError answers a request grpc-gateway has no route for: 405 with
// Allow when the path has other methods (grpc-gateway's default is 501,
// which clients and logs read as a server fault), else 404.
func routingError(routes routeTable) runtime.RoutingErrorHandlerFunc {
	return func(ctx context.Context, mux *runtime.ServeMux, m runtime.Marshaler, w http.ResponseWriter, r *http.Request, code int) {
		switch code {
		case http.StatusMethodNotAllowed:
			allow := routes.allow(r.URL.Path)
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(ctx, mux, m, w, r, methodNotAllowedError(r.Method, r.URL.Path, allow))
		case http.StatusNotFound:
			writeError(ctx, mux, m, w, r, routeNotFoundError(r.Method, r.URL.Path))
		default:
			runtime.DefaultRoutingErrorHandler(ctx, mux, m, w, r, code)
		}
	}
}

// writeError writes a google.rpc.Status as JSON with the HTTP status its
// reason maps to. A QUEUED hold is the one status that is a success over
// HTTP: 202 with the queue entry.
func writeError(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
	s := httpError(r, err)
	code := httpStatus(s)
	var body []byte
	var merr error
	if entry := queueEntryOf(s); code == http.StatusAccepted && entry != nil {
		body, merr = jsonMarshaler.Marshal(entry)
	} else {
		body, merr = errorMarshaler.Marshal(s.Proto())
	}
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

// healthz is liveness (health.go): it reports the node and what it knows of
// each group's leader, and answers 200 whatever they are.
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
