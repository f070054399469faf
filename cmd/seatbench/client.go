package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// api is the Booking API as seatbench calls it, over gRPC or HTTP/JSON. Every
// error it returns is an *apiError.
type api interface {
	CreateShow(ctx context.Context, req *ledgerpb.CreateShowRequest) error
	SeatMap(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error)
	// SeatStates reads a seat map without its layout (states_only).
	SeatStates(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error)
	Hold(ctx context.Context, req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error)
	Confirm(ctx context.Context, req *ledgerpb.ConfirmRequest) (*ledgerpb.ConfirmResponse, error)
	Release(ctx context.Context, req *ledgerpb.ReleaseRequest) (*ledgerpb.ReleaseResponse, error)
	GetHold(ctx context.Context, show, hold string, c ledgerpb.Consistency) (*ledgerpb.HoldInfo, error)
	// The waiting room (waitingroom.go).
	SetWaitingRoom(ctx context.Context, req *ledgerpb.SetWaitingRoomRequest) (*ledgerpb.WaitingRoomStatus, error)
	GetWaitingRoom(ctx context.Context, show string) (*ledgerpb.WaitingRoomStatus, error)
	JoinWaitingRoom(ctx context.Context, req *ledgerpb.JoinWaitingRoomRequest) (*ledgerpb.WaitingRoomEntry, error)
	GetWaitingRoomEntry(ctx context.Context, req *ledgerpb.GetWaitingRoomEntryRequest) (*ledgerpb.WaitingRoomEntry, error)
}

// apiError is a failed call: the server's reason (google.rpc.ErrorInfo), or
// a transport failure.
type apiError struct {
	// Reason is the ErrorInfo reason ("SEATS_TAKEN"), else "GRPC_<code>",
	// "HTTP_<status>" or "TRANSPORT".
	Reason string
	// Retry says the outcome is unknown or the cluster is unavailable:
	// retry with the same request id.
	Retry bool
	// Taken lists the taken seats of a SEATS_TAKEN.
	Taken []string
	Msg   string
}

func (e *apiError) Error() string { return e.Reason + ": " + e.Msg }

// reasonOf returns the reason of a failed call, "" for nil.
func reasonOf(err error) string {
	if err == nil {
		return ""
	}
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Reason
	}
	return "CLIENT"
}

func retryable(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Retry
}

func takenOf(err error) []string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.Taken
	}
	return nil
}

// grpcAPI calls one node's gRPC endpoint.
type grpcAPI struct {
	c ledgerpb.BookingClient
	w ledgerpb.WaitingRoomClient
}

// dialGRPC opens conns connections to each endpoint, with TLS when
// tlsCfg is set. With route, conns Go clients (client/) each reach every
// endpoint and send each call to its group's leader, batching concurrent
// writes to a node into Batch calls (at most batchesInFlight at once)
// unless noClientBatch; gc then holds them. Without route, every api
// returned shares one connection to one endpoint, and gc is nil.
func dialGRPC(endpoints []string, conns int, route, noClientBatch bool, batchesInFlight int, adminToken string, tlsCfg *tls.Config) (apis []api, closeAll func(), gc goClients, err error) {
	creds := insecure.NewCredentials()
	if tlsCfg != nil {
		creds = credentials.NewTLS(tlsCfg)
	}
	opts := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithPerRPCCredentials(shard.BearerCredentials(adminToken))}
	var out []api
	var closers []func() error
	var clients []*client.Client
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	for range conns {
		if route {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			cl, err := client.New(ctx, client.Config{Endpoints: endpoints, DialOptions: opts,
				NoBatching: noClientBatch, BatchesInFlight: batchesInFlight})
			cancel()
			if err != nil {
				closeAll()
				return nil, nil, nil, err
			}
			closers = append(closers, cl.Close)
			clients = append(clients, cl)
			out = append(out, &grpcAPI{c: cl.Booking(), w: ledgerpb.NewWaitingRoomClient(cl)})
			continue
		}
		for _, ep := range endpoints {
			cc, err := grpc.NewClient(ep, opts...)
			if err != nil {
				closeAll()
				return nil, nil, nil, fmt.Errorf("dial %s: %w", ep, err)
			}
			closers = append(closers, cc.Close)
			out = append(out, &grpcAPI{c: ledgerpb.NewBookingClient(cc), w: ledgerpb.NewWaitingRoomClient(cc)})
		}
	}
	return out, closeAll, clients, nil
}

// goClients are a run's Go clients (client/); nil when it uses none (HTTP,
// --route any).
type goClients []*client.Client

// batchStats sums their client.BatchStats: the Batch calls made and the
// calls they carried.
func (gc goClients) batchStats() (batches, calls uint64) {
	for _, cl := range gc {
		b, c := cl.BatchStats()
		batches, calls = batches+b, calls+c
	}
	return batches, calls
}

// refresh has each ask for the routing table now, as it would at its next
// background refresh (at most 2 s later): a run that waited for the
// leaderships to settle starts with the table of the settled cluster.
func (gc goClients) refresh(ctx context.Context) error {
	for _, cl := range gc {
		if err := cl.Refresh(ctx); err != nil {
			return err
		}
	}
	return nil
}

func grpcErr(err error) error {
	if err == nil {
		return nil
	}
	s, ok := status.FromError(err)
	if !ok {
		return &apiError{Reason: "TRANSPORT", Retry: true, Msg: err.Error()}
	}
	ae := &apiError{Reason: "GRPC_" + s.Code().String(), Msg: s.Message(),
		Retry: s.Code() == codes.Unavailable, Taken: client.Detail(err).GetTakenSeatIds()}
	if r := client.Reason(err); r != "" {
		ae.Reason = r
	}
	return ae
}

func (g *grpcAPI) CreateShow(ctx context.Context, req *ledgerpb.CreateShowRequest) error {
	_, err := g.c.CreateShow(ctx, req)
	return grpcErr(err)
}

func (g *grpcAPI) SeatMap(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	sm, err := g.c.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show, Consistency: c})
	return sm, grpcErr(err)
}

func (g *grpcAPI) SeatStates(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	sm, err := g.c.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show, Consistency: c, StatesOnly: true})
	return sm, grpcErr(err)
}

func (g *grpcAPI) Hold(ctx context.Context, req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	r, err := g.c.Hold(ctx, req)
	return r, grpcErr(err)
}

func (g *grpcAPI) Confirm(ctx context.Context, req *ledgerpb.ConfirmRequest) (*ledgerpb.ConfirmResponse, error) {
	r, err := g.c.Confirm(ctx, req)
	return r, grpcErr(err)
}

func (g *grpcAPI) Release(ctx context.Context, req *ledgerpb.ReleaseRequest) (*ledgerpb.ReleaseResponse, error) {
	r, err := g.c.Release(ctx, req)
	return r, grpcErr(err)
}

func (g *grpcAPI) GetHold(ctx context.Context, show, hold string, c ledgerpb.Consistency) (*ledgerpb.HoldInfo, error) {
	r, err := g.c.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: show, HoldId: hold, Consistency: c})
	return r, grpcErr(err)
}

// httpAPI calls one node's HTTP/JSON endpoint.
type httpAPI struct {
	base   string
	client *http.Client
	token  string // the admin token, sent with every request
}

// newHTTPAPIs calls each endpoint over http, or https when tlsCfg is set.
func newHTTPAPIs(endpoints []string, clients int, adminToken string, tlsCfg *tls.Config) ([]api, func()) {
	tr := &http.Transport{MaxIdleConns: clients + 16, MaxIdleConnsPerHost: clients + 16, IdleConnTimeout: 30 * time.Second,
		TLSClientConfig: tlsCfg, ForceAttemptHTTP2: tlsCfg != nil}
	hc := &http.Client{Transport: tr}
	scheme := "http://"
	if tlsCfg != nil {
		scheme = "https://"
	}
	var out []api
	for _, ep := range endpoints {
		out = append(out, &httpAPI{base: scheme + ep, client: hc, token: adminToken})
	}
	return out, tr.CloseIdleConnections
}

var (
	jsonOut = protojson.MarshalOptions{UseProtoNames: true}
	jsonIn  = protojson.UnmarshalOptions{DiscardUnknown: true}
)

// do sends one request; body and out may be nil.
func (h *httpAPI) do(ctx context.Context, method, path string, body, out proto.Message) error {
	var rd io.Reader
	if body != nil {
		b, err := jsonOut.Marshal(body)
		if err != nil {
			return &apiError{Reason: "CLIENT", Msg: err.Error()}
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.base+path, rd)
	if err != nil {
		return &apiError{Reason: "CLIENT", Msg: err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
		if sent := client.FirstSentOf(ctx); sent != "" {
			req.Header.Set("Seatledger-First-Sent-At", sent)
		}
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return &apiError{Reason: "TRANSPORT", Retry: ctx.Err() == nil, Msg: err.Error()}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return &apiError{Reason: "TRANSPORT", Retry: true, Msg: err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		return httpErr(resp.StatusCode, b)
	}
	if out == nil {
		return nil
	}
	if err := jsonIn.Unmarshal(b, out); err != nil {
		return &apiError{Reason: "CLIENT", Msg: "decode response: " + err.Error()}
	}
	return nil
}

func httpErr(code int, body []byte) error {
	ae := &apiError{Reason: fmt.Sprintf("HTTP_%d", code), Retry: code == http.StatusServiceUnavailable,
		Msg: strings.TrimSpace(string(body))}
	st := &spb.Status{}
	if jsonIn.Unmarshal(body, st) != nil {
		return ae
	}
	ae.Msg = st.Message
	for _, a := range st.Details {
		d, err := a.UnmarshalNew()
		if err != nil {
			continue
		}
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			ae.Reason = d.Reason
		case *ledgerpb.ErrorDetail:
			ae.Taken = d.TakenSeatIds
		}
	}
	return ae
}

func (h *httpAPI) CreateShow(ctx context.Context, req *ledgerpb.CreateShowRequest) error {
	return h.do(ctx, http.MethodPost, "/v1/shows", req, nil)
}

func (h *httpAPI) SeatMap(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	return h.seatMap(ctx, show, c, "")
}

func (h *httpAPI) SeatStates(ctx context.Context, show string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	return h.seatMap(ctx, show, c, "states_only=true")
}

func (h *httpAPI) seatMap(ctx context.Context, show string, c ledgerpb.Consistency, query string) (*ledgerpb.SeatMap, error) {
	sm := &ledgerpb.SeatMap{}
	if c == ledgerpb.Consistency_STALE {
		query = strings.TrimPrefix(query+"&consistency=STALE", "&")
	}
	if query != "" {
		query = "?" + query
	}
	return sm, h.do(ctx, http.MethodGet, "/v1/shows/"+url.PathEscape(show)+"/seats"+query, nil, sm)
}

func (h *httpAPI) Hold(ctx context.Context, req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	r := &ledgerpb.HoldResponse{}
	return r, h.do(ctx, http.MethodPost, "/v1/shows/"+url.PathEscape(req.ShowId)+"/holds", req, r)
}

func (h *httpAPI) Confirm(ctx context.Context, req *ledgerpb.ConfirmRequest) (*ledgerpb.ConfirmResponse, error) {
	r := &ledgerpb.ConfirmResponse{}
	return r, h.do(ctx, http.MethodPost, "/v1/shows/"+url.PathEscape(req.ShowId)+"/holds/"+url.PathEscape(req.HoldId)+":confirm", req, r)
}

func (h *httpAPI) Release(ctx context.Context, req *ledgerpb.ReleaseRequest) (*ledgerpb.ReleaseResponse, error) {
	r := &ledgerpb.ReleaseResponse{}
	return r, h.do(ctx, http.MethodPost, "/v1/shows/"+url.PathEscape(req.ShowId)+"/holds/"+url.PathEscape(req.HoldId)+":release", req, r)
}

func (h *httpAPI) GetHold(ctx context.Context, show, hold string, c ledgerpb.Consistency) (*ledgerpb.HoldInfo, error) {
	r := &ledgerpb.HoldInfo{}
	q := ""
	if c == ledgerpb.Consistency_STALE {
		q = "?consistency=STALE"
	}
	return r, h.do(ctx, http.MethodGet, "/v1/shows/"+url.PathEscape(show)+"/holds/"+url.PathEscape(hold)+q, nil, r)
}
