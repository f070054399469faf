package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// This file is the one place where gRPC status codes are made and mapped to
// HTTP (STYLE 9). Every error carries a google.rpc.ErrorInfo whose reason
// picks the HTTP status, so one rejection reads the same over both APIs.

// errorDomain names seatledger in ErrorInfo.
const errorDomain = "seatledger"

// retryAfter is the hint sent with 503s.
const retryAfter = 1 * time.Second

// rule maps a reason to its gRPC code and HTTP status.
type rule struct {
	code codes.Code
	http int
}

// reasons is the error table.
var reasons = map[string]rule{
	"INVALID_ARGUMENT":    {codes.InvalidArgument, http.StatusBadRequest},
	"UNKNOWN_SEAT":        {codes.InvalidArgument, http.StatusBadRequest},
	"SHOW_NOT_FOUND":      {codes.NotFound, http.StatusNotFound},
	"SHOW_EXISTS":         {codes.AlreadyExists, http.StatusConflict},
	"SEATS_TAKEN":         {codes.Aborted, http.StatusConflict},
	"HOLD_NOT_FOUND":      {codes.NotFound, http.StatusNotFound},
	"HOLD_GONE":           {codes.NotFound, http.StatusGone}, // unknown hold at confirm
	"HOLD_EXPIRED":        {codes.FailedPrecondition, http.StatusGone},
	"HOLD_CANCELLED":      {codes.FailedPrecondition, http.StatusGone},
	"HOLD_CONFIRMED":      {codes.FailedPrecondition, http.StatusConflict},
	"NOT_HOLD_OWNER":      {codes.PermissionDenied, http.StatusForbidden},
	"HOLD_TOKEN_INVALID":  {codes.PermissionDenied, http.StatusForbidden},
	"HOLD_NOT_CONFIRMED":  {codes.FailedPrecondition, http.StatusConflict},
	"SOLD_OUT":            {codes.FailedPrecondition, http.StatusConflict},
	"TOO_MANY_HOLDS":      {codes.ResourceExhausted, http.StatusTooManyRequests},
	"QUEUED":              {codes.ResourceExhausted, http.StatusTooManyRequests},
	"RATE_LIMITED":        {codes.ResourceExhausted, http.StatusTooManyRequests},
	"QUEUE_FULL":          {codes.ResourceExhausted, http.StatusTooManyRequests},
	"NOT_QUEUED":          {codes.NotFound, http.StatusNotFound},
	"QUEUE_TOKEN_INVALID": {codes.PermissionDenied, http.StatusForbidden},
	"REQUEST_ID_REUSED":   {codes.AlreadyExists, http.StatusConflict},
	"NOT_FOUND":           {codes.NotFound, http.StatusNotFound},
	"FAILED_PRECONDITION": {codes.FailedPrecondition, http.StatusPreconditionFailed},
	"TOO_MANY_WATCHERS":   {codes.ResourceExhausted, http.StatusTooManyRequests},
	"UNAUTHENTICATED":     {codes.Unauthenticated, http.StatusUnauthorized},
	"ADMIN_TOKEN_INVALID": {codes.PermissionDenied, http.StatusForbidden},
	"PEER_CERT_REQUIRED":  {codes.Unauthenticated, http.StatusUnauthorized},
	// Cluster identity of Peer calls (shard/cluster.go).
	"CLUSTER_ID_REQUIRED": {codes.FailedPrecondition, http.StatusPreconditionFailed},
	"OTHER_CLUSTER":       {codes.FailedPrecondition, http.StatusPreconditionFailed},
	"NOT_LEADER":          {codes.Unavailable, http.StatusServiceUnavailable},
	"UNAVAILABLE":         {codes.Unavailable, http.StatusServiceUnavailable},
	"OUTCOME_UNKNOWN":     {codes.Unavailable, http.StatusServiceUnavailable},
	"DEADLINE_EXCEEDED":   {codes.DeadlineExceeded, http.StatusGatewayTimeout},
	"CANCELED":            {codes.Canceled, 499},
	"INTERNAL":            {codes.Internal, http.StatusInternalServerError},
	// Catalog (catalog.go, browse.go).
	"CITY_NOT_FOUND":   {codes.NotFound, http.StatusNotFound},
	"CINEMA_NOT_FOUND": {codes.NotFound, http.StatusNotFound},
	"SCREEN_NOT_FOUND": {codes.NotFound, http.StatusNotFound},
	"MOVIE_NOT_FOUND":  {codes.NotFound, http.StatusNotFound},
	"CITY_EXISTS":      {codes.AlreadyExists, http.StatusConflict},
	"CINEMA_EXISTS":    {codes.AlreadyExists, http.StatusConflict},
	"MOVIE_EXISTS":     {codes.AlreadyExists, http.StatusConflict},
	"SHOW_LISTED":      {codes.AlreadyExists, http.StatusConflict},
	// Node registry (nodes.go).
	"NODE_NOT_FOUND":     {codes.NotFound, http.StatusNotFound},
	"NODE_REMOVED":       {codes.FailedPrecondition, http.StatusConflict},
	"NODE_ADDRESS_TAKEN": {codes.AlreadyExists, http.StatusConflict},
}

// codeReasons names each FSM result code.
var codeReasons = map[ledgerpb.Code]string{
	ledgerpb.Code_CODE_INVALID_ARGUMENT:    "INVALID_ARGUMENT",
	ledgerpb.Code_CODE_SHOW_NOT_FOUND:      "SHOW_NOT_FOUND",
	ledgerpb.Code_CODE_SHOW_EXISTS:         "SHOW_EXISTS",
	ledgerpb.Code_CODE_UNKNOWN_SEAT:        "UNKNOWN_SEAT",
	ledgerpb.Code_CODE_SEATS_TAKEN:         "SEATS_TAKEN",
	ledgerpb.Code_CODE_HOLD_NOT_FOUND:      "HOLD_NOT_FOUND",
	ledgerpb.Code_CODE_HOLD_EXPIRED:        "HOLD_EXPIRED",
	ledgerpb.Code_CODE_HOLD_CONFIRMED:      "HOLD_CONFIRMED",
	ledgerpb.Code_CODE_HOLD_CANCELLED:      "HOLD_CANCELLED",
	ledgerpb.Code_CODE_NOT_HOLD_OWNER:      "NOT_HOLD_OWNER",
	ledgerpb.Code_CODE_REQUEST_ID_REUSED:   "REQUEST_ID_REUSED",
	ledgerpb.Code_CODE_SOLD_OUT:            "SOLD_OUT",
	ledgerpb.Code_CODE_TOO_MANY_HOLDS:      "TOO_MANY_HOLDS",
	ledgerpb.Code_CODE_HOLD_TOKEN_INVALID:  "HOLD_TOKEN_INVALID",
	ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED:  "HOLD_NOT_CONFIRMED",
	ledgerpb.Code_CODE_QUEUED:              "QUEUED",
	ledgerpb.Code_CODE_QUEUE_FULL:          "QUEUE_FULL",
	ledgerpb.Code_CODE_NOT_QUEUED:          "NOT_QUEUED",
	ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID: "QUEUE_TOKEN_INVALID",
	ledgerpb.Code_CODE_CITY_NOT_FOUND:      "CITY_NOT_FOUND",
	ledgerpb.Code_CODE_CINEMA_NOT_FOUND:    "CINEMA_NOT_FOUND",
	ledgerpb.Code_CODE_SCREEN_NOT_FOUND:    "SCREEN_NOT_FOUND",
	ledgerpb.Code_CODE_MOVIE_NOT_FOUND:     "MOVIE_NOT_FOUND",
	ledgerpb.Code_CODE_CITY_EXISTS:         "CITY_EXISTS",
	ledgerpb.Code_CODE_CINEMA_EXISTS:       "CINEMA_EXISTS",
	ledgerpb.Code_CODE_MOVIE_EXISTS:        "MOVIE_EXISTS",
	ledgerpb.Code_CODE_SHOW_LISTED:         "SHOW_LISTED",
	ledgerpb.Code_CODE_NODE_NOT_FOUND:      "NODE_NOT_FOUND",
	ledgerpb.Code_CODE_NODE_REMOVED:        "NODE_REMOVED",
	ledgerpb.Code_CODE_NODE_ADDRESS_TAKEN:  "NODE_ADDRESS_TAKEN",
}

// peerClusterError is the status of a Peer call refused for its cluster
// identity (shard.Router.CheckPeerCall).
func peerClusterError(err error) error {
	if errors.Is(err, shard.ErrNoClusterID) {
		return newStatus("CLUSTER_ID_REQUIRED", err.Error())
	}
	return newStatus("OTHER_CLUSTER", err.Error())
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
// Retry-After over HTTP) says when a token is back.
func rateLimitedError(client string, wait time.Duration) error {
	return newStatus("RATE_LIMITED", "client "+client+" sends writes faster than this node admits: retry later",
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
	case errors.Is(err, raftnode.ErrNotLeader), errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost):
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
		// Not an error of the caller's: the request waits. 429 carries the
		// place in line and the secret to follow it.
		return newStatus("QUEUED", res.Message, &ledgerpb.ErrorDetail{QueueEntryId: res.QueueEntryId,
			QueuePosition: res.QueuePosition, QueueToken: res.QueueToken, SeatsAhead: res.SeatsAhead,
			Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)})
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
	case errors.Is(err, shard.ErrCityNotFound):
		return newStatus("CITY_NOT_FOUND", "city not found")
	case errors.Is(err, shard.ErrCinemaNotFound):
		return newStatus("CINEMA_NOT_FOUND", "cinema not found")
	case errors.Is(err, shard.ErrMovieNotFound):
		return newStatus("MOVIE_NOT_FOUND", "movie not found")
	case errors.Is(err, shard.ErrNotListed):
		return newStatus("SHOW_NOT_FOUND", "show not listed in the catalog")
	case errors.Is(err, raftnode.ErrOutcomeUnknown):
		return newStatus("OUTCOME_UNKNOWN", "the outcome is unknown: retry with the same request_id", retry)
	case errors.Is(err, raftnode.ErrNotLeader):
		return newStatus("NOT_LEADER", "no leader can take the request now: retry", retry)
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
