package gateway

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatledger/seatledger/catalog"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// This file is the one place where gRPC status codes are made and mapped to
// HTTP (STYLE 9). Every error carries a google.rpc.ErrorInfo whose reason
// picks the HTTP status, so one rejection reads the same over both APIs.

// retryHorizon is the retry horizon as docs state it.
var retryHorizon = time.Duration(fsm.RequestHorizonMs) * time.Millisecond

// errorDomain names seatledger in ErrorInfo.
const errorDomain = "seatledger"

// retryAfter is the hint sent with 503s.
const retryAfter = 1 * time.Second

// rule maps a reason to its gRPC code and HTTP status, and says what it
// means to the caller (the OpenAPI document publishes doc, openapi.go).
type rule struct {
	code codes.Code
	http int
	doc  string
}

// reasons is the error table. Each HTTP status means one thing to a client
// or a retry middleware: 429 and 503 are "the same request may succeed
// later" (with Retry-After), 4xx else are "change the request", and a
// business limit such as TOO_MANY_HOLDS is 422, which no retry middleware
// retries (unlike 409, which some SDKs retry as a lock conflict).
var reasons = map[string]rule{
	"INVALID_ARGUMENT":    {codes.InvalidArgument, http.StatusBadRequest, "bad input: a google.rpc.BadRequest names the field (the JSON body's path for an unknown field, or where malformed JSON broke)"},
	"UNKNOWN_SEAT":        {codes.InvalidArgument, http.StatusBadRequest, "a named seat is not in the show's layout"},
	"BODY_TOO_LARGE":      {codes.InvalidArgument, http.StatusRequestEntityTooLarge, "the request body is larger than 1 MiB"},
	"SHOW_NOT_FOUND":      {codes.NotFound, http.StatusNotFound, "no such show (or not listed in the catalog)"},
	"SHOW_EXISTS":         {codes.AlreadyExists, http.StatusConflict, "another show has this show_id"},
	"SEATS_TAKEN":         {codes.Aborted, http.StatusConflict, "a named seat is held or booked: ErrorDetail.taken_seat_ids lists them and suggested_seat_ids the best free ones"},
	"HOLD_NOT_FOUND":      {codes.NotFound, http.StatusNotFound, "no such hold"},
	"HOLD_GONE":           {codes.NotFound, http.StatusGone, "at confirm: the ledger has no such hold; refund the payment"},
	"HOLD_EXPIRED":        {codes.FailedPrecondition, http.StatusGone, "the hold expired and its seats went back on sale; at confirm, refund the payment"},
	"HOLD_CANCELLED":      {codes.FailedPrecondition, http.StatusGone, "the hold was released; at confirm, refund the payment"},
	"HOLD_CONFIRMED":      {codes.FailedPrecondition, http.StatusConflict, "the hold is a booking already: it cannot be released, extended or confirmed with another payment"},
	"NOT_HOLD_OWNER":      {codes.PermissionDenied, http.StatusForbidden, "the hold belongs to another client_id"},
	"HOLD_TOKEN_INVALID":  {codes.PermissionDenied, http.StatusForbidden, "hold_token is not the hold's token"},
	"HOLD_NOT_CONFIRMED":  {codes.FailedPrecondition, http.StatusConflict, "only a confirmed booking can be refunded or has tickets"},
	"SOLD_OUT":            {codes.FailedPrecondition, http.StatusConflict, "best available: fewer free seats (of the category) than asked; send wait=true to join the line"},
	"TOO_MANY_HOLDS":      {codes.FailedPrecondition, http.StatusUnprocessableEntity, "a business limit, not a rate limit: the client has as many live holds in the show as it may (ErrorDetail.limit, limit_value); confirm or release one first, retrying does not help"},
	"QUEUED":              {codes.ResourceExhausted, http.StatusAccepted, "not an error over HTTP: the hold joined the show's waiting line, and the 202 body is the QueueEntry with its queue_token (over gRPC it is this status, with ErrorDetail and QueueEntry details)"},
	"RATE_LIMITED":        {codes.ResourceExhausted, http.StatusTooManyRequests, "the client writes faster than the node admits: retry with the same request_id after Retry-After seconds, which equals RetryInfo.retry_delay"},
	"QUEUE_FULL":          {codes.ResourceExhausted, http.StatusTooManyRequests, "sold out and the waiting line is full; try again later"},
	"NOT_QUEUED":          {codes.NotFound, http.StatusNotFound, "no such queue entry, or (on leave) one already offered seats"},
	"QUEUE_TOKEN_INVALID": {codes.PermissionDenied, http.StatusForbidden, "queue_token is not the entry's token"},
	"REQUEST_ID_REUSED":   {codes.AlreadyExists, http.StatusConflict, "this client_id sent this request_id before with another payload: send the new request with a new request_id"},
	// 422 like TOO_MANY_HOLDS: no retry middleware may retry it, and no
	// retry would run it.
	"REQUEST_EXPIRED":     {codes.FailedPrecondition, http.StatusUnprocessableEntity, fmt.Sprintf("the write states (Seatledger-First-Sent-At) that it was first sent longer ago than the retry horizon (%v), and the ledger has no record of it: it may have run and its record expired, so it was not executed now. Check its outcome (the client's holds and bookings), then send a new request with a new request_id", retryHorizon)},
	"NOT_FOUND":           {codes.NotFound, http.StatusNotFound, "no such route or object"},
	"CORS_ORIGIN_DENIED":  {codes.PermissionDenied, http.StatusForbidden, "a browser preflight from an origin this node does not allow (seatd serve --cors-origin)"},
	"METHOD_NOT_ALLOWED":  {codes.Unimplemented, http.StatusMethodNotAllowed, "the path exists but not for this method: the Allow header lists those it has"},
	"FAILED_PRECONDITION": {codes.FailedPrecondition, http.StatusPreconditionFailed, "an admin call that the cluster's state does not allow now"},
	"TOO_MANY_WATCHERS":   {codes.ResourceExhausted, http.StatusTooManyRequests, "the node serves as many watches as it may; retry after Retry-After, or at another node"},
	"UNAUTHENTICATED":     {codes.Unauthenticated, http.StatusUnauthorized, "an admin call without the admin token (Authorization: Bearer TOKEN)"},
	"ADMIN_TOKEN_INVALID": {codes.PermissionDenied, http.StatusForbidden, "the admin token is not the cluster's"},
	"CREDENTIAL_REQUIRED": {codes.Unauthenticated, http.StatusUnauthorized, "a private read without a credential: the backend key or admin token (Authorization: Bearer KEY), or a client proof (docs/API.md, Credentials)"},
	"CREDENTIAL_INVALID":  {codes.PermissionDenied, http.StatusForbidden, "the bearer token is not the cluster's backend key or admin token, or the client proof is malformed, expired or another client's"},
	"PEER_CERT_REQUIRED":  {codes.Unauthenticated, http.StatusUnauthorized, "a Peer call without a node certificate (--peer-mtls)"},
	// Cluster identity of Peer calls (shard/cluster.go).
	"CLUSTER_ID_REQUIRED": {codes.FailedPrecondition, http.StatusPreconditionFailed, "a Peer call without the cluster id (nodes send it; see docs/OPERATIONS.md)"},
	"OTHER_CLUSTER":       {codes.FailedPrecondition, http.StatusPreconditionFailed, "a Peer call from a node of another cluster"},
	"NOT_LEADER":          {codes.Unavailable, http.StatusServiceUnavailable, "no leader can take the request now: retry (with the same request_id) after Retry-After; ErrorDetail.leader_hint may name the leader"},
	"UNAVAILABLE":         {codes.Unavailable, http.StatusServiceUnavailable, "the shard has no quorum or leader now, this node is cut off from the shard's replicas, or the node is shutting down: retry after Retry-After, at another node if you can (a write with the same request_id)"},
	"OUTCOME_UNKNOWN":     {codes.Unavailable, http.StatusServiceUnavailable, "the write may or may not have been applied: retry with the same request_id, never a new one"},
	"DEADLINE_EXCEEDED":   {codes.DeadlineExceeded, http.StatusGatewayTimeout, "the call took longer than its deadline; a write's outcome is unknown: retry with the same request_id"},
	"CANCELED":            {codes.Canceled, 499, "the caller went away"},
	"INTERNAL":            {codes.Internal, http.StatusInternalServerError, "a bug: please report it"},
	// Catalog (catalog.go, browse.go).
	"CITY_NOT_FOUND":   {codes.NotFound, http.StatusNotFound, "no such city"},
	"CINEMA_NOT_FOUND": {codes.NotFound, http.StatusNotFound, "no such cinema"},
	"SCREEN_NOT_FOUND": {codes.NotFound, http.StatusNotFound, "no such screen in the cinema"},
	"MOVIE_NOT_FOUND":  {codes.NotFound, http.StatusNotFound, "no such movie"},
	"CITY_EXISTS":      {codes.AlreadyExists, http.StatusConflict, "another city has this id"},
	"CINEMA_EXISTS":    {codes.AlreadyExists, http.StatusConflict, "another cinema has this id"},
	"MOVIE_EXISTS":     {codes.AlreadyExists, http.StatusConflict, "another movie has this id"},
	"SHOW_LISTED":      {codes.AlreadyExists, http.StatusConflict, "the show is listed in the catalog with other fields"},
	// Node registry (nodes.go).
	"NODE_NOT_FOUND":     {codes.NotFound, http.StatusNotFound, "no such node in the registry"},
	"NODE_REMOVED":       {codes.FailedPrecondition, http.StatusConflict, "the node was removed from the cluster"},
	"NODE_ADDRESS_TAKEN": {codes.AlreadyExists, http.StatusConflict, "another node is registered with this address"},
	// Webhooks (webhooks.go).
	"WEBHOOK_NOT_FOUND": {codes.NotFound, http.StatusNotFound, "no webhook with this id"},
	"WEBHOOK_EXISTS":    {codes.AlreadyExists, http.StatusConflict, "a webhook with this id exists"},
	// Waiting room (waitroom.go).
	"ADMISSION_REQUIRED":   {codes.PermissionDenied, http.StatusForbidden, "the show's waiting room is open: join it (google.rpc.Help links the join call), and hold with the admission_token of the client's admitted entry"},
	"ROOM_CLOSED":          {codes.FailedPrecondition, http.StatusConflict, "the show has no open waiting room: hold seats directly"},
	"ROOM_FULL":            {codes.ResourceExhausted, http.StatusTooManyRequests, "the waiting room holds as many entries as it may; try again later"},
	"ROOM_ENTRY_NOT_FOUND": {codes.NotFound, http.StatusNotFound, "no such waiting room entry"},
	"ROOM_TOKEN_INVALID":   {codes.PermissionDenied, http.StatusForbidden, "entry_token is not the entry's token"},
}

// codeReasons names each FSM result code.
var codeReasons = map[ledgerpb.Code]string{
	ledgerpb.Code_CODE_INVALID_ARGUMENT:     "INVALID_ARGUMENT",
	ledgerpb.Code_CODE_SHOW_NOT_FOUND:       "SHOW_NOT_FOUND",
	ledgerpb.Code_CODE_SHOW_EXISTS:          "SHOW_EXISTS",
	ledgerpb.Code_CODE_UNKNOWN_SEAT:         "UNKNOWN_SEAT",
	ledgerpb.Code_CODE_SEATS_TAKEN:          "SEATS_TAKEN",
	ledgerpb.Code_CODE_HOLD_NOT_FOUND:       "HOLD_NOT_FOUND",
	ledgerpb.Code_CODE_HOLD_EXPIRED:         "HOLD_EXPIRED",
	ledgerpb.Code_CODE_HOLD_CONFIRMED:       "HOLD_CONFIRMED",
	ledgerpb.Code_CODE_HOLD_CANCELLED:       "HOLD_CANCELLED",
	ledgerpb.Code_CODE_NOT_HOLD_OWNER:       "NOT_HOLD_OWNER",
	ledgerpb.Code_CODE_REQUEST_ID_REUSED:    "REQUEST_ID_REUSED",
	ledgerpb.Code_CODE_REQUEST_EXPIRED:      "REQUEST_EXPIRED",
	ledgerpb.Code_CODE_SOLD_OUT:             "SOLD_OUT",
	ledgerpb.Code_CODE_TOO_MANY_HOLDS:       "TOO_MANY_HOLDS",
	ledgerpb.Code_CODE_HOLD_TOKEN_INVALID:   "HOLD_TOKEN_INVALID",
	ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED:   "HOLD_NOT_CONFIRMED",
	ledgerpb.Code_CODE_QUEUED:               "QUEUED",
	ledgerpb.Code_CODE_QUEUE_FULL:           "QUEUE_FULL",
	ledgerpb.Code_CODE_NOT_QUEUED:           "NOT_QUEUED",
	ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID:  "QUEUE_TOKEN_INVALID",
	ledgerpb.Code_CODE_CITY_NOT_FOUND:       "CITY_NOT_FOUND",
	ledgerpb.Code_CODE_CINEMA_NOT_FOUND:     "CINEMA_NOT_FOUND",
	ledgerpb.Code_CODE_SCREEN_NOT_FOUND:     "SCREEN_NOT_FOUND",
	ledgerpb.Code_CODE_MOVIE_NOT_FOUND:      "MOVIE_NOT_FOUND",
	ledgerpb.Code_CODE_CITY_EXISTS:          "CITY_EXISTS",
	ledgerpb.Code_CODE_CINEMA_EXISTS:        "CINEMA_EXISTS",
	ledgerpb.Code_CODE_MOVIE_EXISTS:         "MOVIE_EXISTS",
	ledgerpb.Code_CODE_SHOW_LISTED:          "SHOW_LISTED",
	ledgerpb.Code_CODE_ADMISSION_REQUIRED:   "ADMISSION_REQUIRED",
	ledgerpb.Code_CODE_ROOM_CLOSED:          "ROOM_CLOSED",
	ledgerpb.Code_CODE_ROOM_FULL:            "ROOM_FULL",
	ledgerpb.Code_CODE_ROOM_ENTRY_NOT_FOUND: "ROOM_ENTRY_NOT_FOUND",
	ledgerpb.Code_CODE_ROOM_TOKEN_INVALID:   "ROOM_TOKEN_INVALID",
	ledgerpb.Code_CODE_NODE_NOT_FOUND:       "NODE_NOT_FOUND",
	ledgerpb.Code_CODE_NODE_REMOVED:         "NODE_REMOVED",
	ledgerpb.Code_CODE_NODE_ADDRESS_TAKEN:   "NODE_ADDRESS_TAKEN",
	ledgerpb.Code_CODE_WEBHOOK_NOT_FOUND:    "WEBHOOK_NOT_FOUND",
	ledgerpb.Code_CODE_WEBHOOK_EXISTS:       "WEBHOOK_EXISTS",
}

// peerClusterError is the status of a Peer call refused for its cluster
// identity (shard.Router.CheckPeerCall).
func peerClusterError(err error) error {
	if errors.Is(err, shard.ErrNoClusterID) {
		return newStatus("CLUSTER_ID_REQUIRED", err.Error())
	}
	return newStatus("OTHER_CLUSTER", err.Error())
}

// undecodableRequest is the status of a gRPC request message that did not
// decode (decode.go): the caller sent it, so INVALID_ARGUMENT, never the
// Internal grpc-go would answer.
func undecodableRequest(err error) error {
	return newStatus("INVALID_ARGUMENT", "the request message cannot be decoded: "+err.Error(), &errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "body", Description: err.Error()}},
	})
}

// newStatus builds a status with an ErrorInfo for reason plus details.
func newStatus(reason, msg string, details ...proto.Message) error {
	r, ok := reasons[reason]
	if !ok {
		r = reasons["INTERNAL"]
	}
	s := status.New(r.code, msg)
	all := append([]proto.Message{&errdetails.ErrorInfo{Reason: reason, Domain: errorDomain}}, details...)
	ds := make([]protoadapt.MessageV1, 0, len(all))
	for _, d := range all {
		ds = append(ds, protoadapt.MessageV1Of(d))
	}
	if withDetails, err := s.WithDetails(ds...); err == nil {
		s = withDetails
	}
	return s.Err()
}

// fieldError is a 400 naming the field.
func fieldError(fe *fsm.FieldError) error {
	return newStatus("INVALID_ARGUMENT", fe.Field+": "+fe.Message, &errdetails.BadRequest{
		FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: fe.Field, Description: fe.Message}},
	})
}

// rateLimitedError refuses a client over its write rate; RetryInfo (and
// Retry-After over HTTP) says when a token is back. The delay is rounded up
// to whole seconds here, so the body and HTTP's Retry-After (whole seconds)
// say the same thing, and a client that waits as told finds a token.
func rateLimitedError(client string, wait time.Duration) error {
	wait = time.Duration(math.Ceil(max(wait, time.Nanosecond).Seconds())) * time.Second
	return newStatus("RATE_LIMITED", fmt.Sprintf("client %s sends writes faster than this node admits: retry in %v with the same request_id", client, wait),
		&errdetails.RetryInfo{RetryDelay: durationpb.New(wait)},
		&ledgerpb.ErrorDetail{Limit: "client_writes_per_second"})
}

// notLeaderError tells the caller to go to the leader, naming it if known.
func notLeaderError(leader string) error {
	return newStatus("NOT_LEADER", "this node does not lead the group: call the leader",
		&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}, &ledgerpb.ErrorDetail{LeaderHint: leader})
}

// membershipError maps a membership change's failure.
func membershipError(err error) error {
	switch {
	case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, raftnode.ErrOutcomeUnknown):
		// Asking the leader again is safe either way: a change already
		// made is found made.
		return notLeaderError("")
	case errors.Is(err, raftnode.ErrUnknownGroup), errors.Is(err, raftnode.ErrUnknownPeer):
		return newStatus("NOT_FOUND", err.Error())
	case errors.Is(err, raftnode.ErrGroupHosted), errors.Is(err, raftnode.ErrStillMember),
		errors.Is(err, raftnode.ErrNotHosted), errors.Is(err, raftnode.ErrOtherIncarnation):
		return newStatus("FAILED_PRECONDITION", err.Error())
	}
	return newStatus("UNAVAILABLE", err.Error(), &errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
}

// op names the call, for rules that depend on it.
type op int

const (
	opOther op = iota
	opConfirm
)

// resultError turns an FSM rejection into a status; nil for CODE_OK.
func resultError(res *ledgerpb.Result, o op) error {
	switch res.Code {
	case ledgerpb.Code_CODE_OK:
		return nil
	case ledgerpb.Code_CODE_INVALID_ARGUMENT:
		return fieldError(&fsm.FieldError{Field: res.Field, Message: res.Message})
	case ledgerpb.Code_CODE_UNKNOWN_SEAT:
		return newStatus("UNKNOWN_SEAT", res.Message, &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: "seat_ids", Description: res.Message}},
		})
	case ledgerpb.Code_CODE_SEATS_TAKEN:
		return newStatus("SEATS_TAKEN", res.Message, &ledgerpb.ErrorDetail{TakenSeatIds: res.SeatIds,
			SuggestedSeatIds: res.AlternativeSeatIds, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
	case ledgerpb.Code_CODE_QUEUED:
		return queuedError(res, &ledgerpb.QueueEntry{})
	case ledgerpb.Code_CODE_ADMISSION_REQUIRED:
		return newStatus("ADMISSION_REQUIRED", res.Message, &errdetails.Help{Links: []*errdetails.Help_Link{{
			Description: "join the show's waiting room: POST, then follow the entry until ADMITTED",
			Url:         "/v1/shows/{show_id}/waiting_room:join"}}},
			&ledgerpb.ErrorDetail{Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
	case ledgerpb.Code_CODE_REQUEST_ID_REUSED:
		// The FSM's message says what differs; the caller also needs to
		// hear what to do, as a retry with this id can never succeed.
		return newStatus("REQUEST_ID_REUSED", strings.TrimSuffix(res.Message, ".")+
			": this request_id was used for a different request; send this request with a new request_id",
			&ledgerpb.ErrorDetail{Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
	case ledgerpb.Code_CODE_TOO_MANY_HOLDS:
		return newStatus("TOO_MANY_HOLDS", res.Message, &ledgerpb.ErrorDetail{Limit: "holds_per_client_per_show",
			LimitValue: res.Limit, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
	case ledgerpb.Code_CODE_HOLD_NOT_FOUND:
		if o == opConfirm {
			// The frontend took a payment for a hold the ledger does not
			// have: it must refund, as for an expired hold.
			return newStatus("HOLD_GONE", res.Message, &ledgerpb.ErrorDetail{
				Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
		}
	}
	reason, ok := codeReasons[res.Code]
	if !ok {
		return newStatus("INTERNAL", fmt.Sprintf("unexpected result code %v", res.Code))
	}
	return newStatus(reason, res.Message, &ledgerpb.ErrorDetail{HoldState: res.HoldState,
		Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
}

// queuedError is the answer of a hold that joined the show's waiting line.
// Over HTTP it is not an error: writeError answers 202 with the QueueEntry
// detail, entry (filled in by the caller where it knows the show and
// client). The ErrorDetail is kept for gRPC clients that read it.
func queuedError(res *ledgerpb.Result, entry *ledgerpb.QueueEntry) error {
	entry.EntryId, entry.State, entry.Position, entry.SeatsAhead = res.QueueEntryId, "WAITING", res.QueuePosition, res.SeatsAhead
	entry.QueueToken, entry.Revision, entry.AsOf = res.QueueToken, res.Revision, ms(res.AppliedAtMs)
	return newStatus("QUEUED", res.Message, &ledgerpb.ErrorDetail{QueueEntryId: res.QueueEntryId,
		QueuePosition: res.QueuePosition, QueueToken: res.QueueToken, SeatsAhead: res.SeatsAhead,
		Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, entry)
}

// routeError turns a router or raft error into a status.
func routeError(err error) error {
	retry := &errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)}
	switch {
	case errors.Is(err, shard.ErrShowNotFound):
		return newStatus("SHOW_NOT_FOUND", "show not found")
	case errors.Is(err, shard.ErrHoldNotFound):
		return newStatus("HOLD_NOT_FOUND", "hold not found")
	case errors.Is(err, shard.ErrNotQueued):
		return newStatus("NOT_QUEUED", "no such queue entry")
	case errors.Is(err, shard.ErrHoldToken):
		return newStatus("HOLD_TOKEN_INVALID", "hold_token is not the token of the hold")
	case errors.Is(err, shard.ErrQueueToken):
		return newStatus("QUEUE_TOKEN_INVALID", "queue_token is not the token of the entry")
	case errors.Is(err, shard.ErrRoomEntryNotFound):
		return newStatus("ROOM_ENTRY_NOT_FOUND", "no such waiting room entry")
	case errors.Is(err, shard.ErrRoomToken):
		return newStatus("ROOM_TOKEN_INVALID", "entry_token is not the token of the entry")
	case errors.Is(err, catalog.ErrCityNotFound):
		return newStatus("CITY_NOT_FOUND", "city not found")
	case errors.Is(err, catalog.ErrCinemaNotFound):
		return newStatus("CINEMA_NOT_FOUND", "cinema not found")
	case errors.Is(err, catalog.ErrMovieNotFound):
		return newStatus("MOVIE_NOT_FOUND", "movie not found")
	case errors.Is(err, catalog.ErrNotListed):
		return newStatus("SHOW_NOT_FOUND", "show not listed in the catalog")
	case errors.Is(err, raftnode.ErrOutcomeUnknown):
		return newStatus("OUTCOME_UNKNOWN", "the outcome is unknown: retry with the same request_id", retry)
	case errors.Is(err, raftnode.ErrNotLeader):
		return newStatus("NOT_LEADER", "no leader can take the request now: retry", retry)
	case errors.Is(err, raftnode.ErrNoLeader):
		// Failed fast (DESIGN 4): nothing was appended, and waiting at
		// this node would only wait out its partition.
		return newStatus("UNAVAILABLE", "this node has known no leader of the shard for two election timeouts (cut off from its peers, or the shard has no quorum): retry at another node", retry)
	case errors.Is(err, raftnode.ErrUnavailable):
		return newStatus("UNAVAILABLE", "the shard has no quorum or leader now: retry", retry)
	case errors.Is(err, context.DeadlineExceeded):
		return newStatus("DEADLINE_EXCEEDED", err.Error())
	case errors.Is(err, context.Canceled):
		return newStatus("CANCELED", err.Error())
	}
	if s, ok := status.FromError(err); ok {
		// A forwarded watch's status, made by another node's gateway
		// from this same table.
		return s.Err()
	}
	return newStatus("INTERNAL", err.Error())
}

// watchError is the status a watch ends with; ctx is the watch's, whose
// cause says whether the node's shutdown ended it.
func watchError(ctx context.Context, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, errTooManyWatchers):
		return newStatus("TOO_MANY_WATCHERS", "this node serves as many watches as it may: retry later or at another node",
			&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	case errors.Is(err, errDraining) || errors.Is(context.Cause(ctx), errDraining):
		return newStatus("UNAVAILABLE", "the node is shutting down: resume from your last revision at another node",
			&errdetails.RetryInfo{RetryDelay: durationpb.New(retryAfter)})
	}
	return routeError(err)
}

// httpStatus picks the HTTP status of a gRPC status by its reason.
func httpStatus(s *status.Status) int {
	for _, d := range s.Details() {
		if info, ok := d.(*errdetails.ErrorInfo); ok {
			if r, ok := reasons[info.Reason]; ok {
				return r.http
			}
		}
	}
	switch s.Code() {
	case codes.InvalidArgument, codes.OutOfRange:
		return http.StatusBadRequest
	case codes.NotFound:
		return http.StatusNotFound
	case codes.Unavailable:
		return http.StatusServiceUnavailable
	case codes.Unimplemented:
		return http.StatusNotImplemented
	case codes.ResourceExhausted:
		return http.StatusTooManyRequests
	case codes.DeadlineExceeded:
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}

// IsAlreadyExists reports whether err says the thing to create exists.
func IsAlreadyExists(err error) bool {
	return status.Code(err) == codes.AlreadyExists
}

// httpError is the status an HTTP answer carries for err. Statuses made by
// this package pass through; those grpc-gateway makes itself (a body it
// could not decode, a bad path or query parameter) get a reason from the
// table, so every HTTP error body has an ErrorInfo and a client needs one
// way to read errors.
func httpError(r *http.Request, err error) *status.Status {
	if be := decodeError(r); be != nil {
		reason := "INVALID_ARGUMENT"
		if be.tooLarge {
			reason = "BODY_TOO_LARGE"
		}
		return status.Convert(newStatus(reason, "request body: "+be.Error(), &errdetails.BadRequest{
			FieldViolations: []*errdetails.BadRequest_FieldViolation{{Field: be.field, Description: be.msg}}}))
	}
	var he *runtime.HTTPStatusError
	if errors.As(err, &he) && he.HTTPStatus == http.StatusBadRequest {
		return status.Convert(newStatus("INVALID_ARGUMENT", he.Err.Error()))
	}
	s := status.Convert(err)
	for _, d := range s.Details() {
		if _, ok := d.(*errdetails.ErrorInfo); ok {
			return s
		}
	}
	switch s.Code() {
	case codes.InvalidArgument:
		return status.Convert(newStatus("INVALID_ARGUMENT", s.Message()))
	case codes.NotFound:
		return status.Convert(newStatus("NOT_FOUND", s.Message()))
	case codes.Unauthenticated:
		return status.Convert(newStatus("UNAUTHENTICATED", s.Message()))
	}
	return s
}

// methodNotAllowedError answers a method the path does not have; the
// caller sets the Allow header from the same list.
func methodNotAllowedError(method, path string, allow []string) error {
	return newStatus("METHOD_NOT_ALLOWED", fmt.Sprintf("%s is not a method of %s: use %s", method, path, strings.Join(allow, ", ")))
}

// routeNotFoundError answers a path the API does not have.
func routeNotFoundError(method, path string) error {
	return newStatus("NOT_FOUND", fmt.Sprintf("no route %s %s (the API is described at /openapi.json)", method, path))
}

// queueEntryOf returns the QueueEntry detail of a QUEUED status, the body
// of its 202 answer over HTTP.
func queueEntryOf(s *status.Status) *ledgerpb.QueueEntry {
	for _, d := range s.Details() {
		if e, ok := d.(*ledgerpb.QueueEntry); ok {
			return e
		}
	}
	return nil
}

// corsOriginError refuses a preflight from an origin not allowed.
func corsOriginError(origin string) error {
	return newStatus("CORS_ORIGIN_DENIED", "origin "+origin+" may not call this API from a browser: start seatd with --cors-origin "+origin)
}

// healthUnknownServiceError answers a health check of a service the node
// does not report on, as the gRPC health protocol says.
func healthUnknownServiceError(service string) error {
	return status.Error(codes.NotFound, "unknown service "+service)
}
