// Package gateway serves the public Booking API over gRPC and HTTP/JSON:
// validation and admission happen here, then the shard router takes the
// request to its group's leader. All status mapping lives in errors.go.
package gateway

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/registry"
	"github.com/seatledger/seatledger/shard"
	"github.com/seatledger/seatledger/watch"
)

// requestTimeoutDefault bounds one API call, retries at the router included.
const requestTimeoutDefault = 5 * time.Second

// Server implements ledgerpb.BookingServer.
type Server struct {
	ledgerpb.UnimplementedBookingServer
	router  *shard.Router
	timeout time.Duration
	// admit limits each client's writes on this node (admission.go).
	admit *limiter
	// rateLimited counts writes admit refused (seatledger_admission_rate_limited_total).
	rateLimited atomic.Uint64
	// ticketKey signs ticket codes (tickets.go).
	ticketKey ed25519.PrivateKey
	// auth checks the admin credential of admin calls (auth.go).
	auth *Auth
	// registry is the node's registry, which the Admin API rereads after a
	// change (nodes.go); nil rereads nothing.
	registry *registry.Registry
	// faults are the deliberately wrong behaviours of a fault build
	// (faults.go; none in a default build).
	faults faults

	// watches admits and drains Watch streams (watch.go), which hub
	// serves. Its limits are atomic so that tests may lower them while
	// serving.
	hub            *watch.Hub
	watches        watchers
	watchersMax    atomic.Int64
	watchKeepalive atomic.Int64 // nanoseconds
	watchWriteMax  atomic.Int64 // nanoseconds: watchWriteTimeout
}

// NewServer serves the Booking API through router, with the default
// per-client admission limit.
func NewServer(router *shard.Router) *Server {
	s := &Server{router: router, hub: watch.New(router), timeout: requestTimeoutDefault,
		admit:     newLimiter(Admission{Rate: ClientRateDefault, Burst: ClientBurstDefault}),
		ticketKey: NewTicketKey()}
	s.watchersMax.Store(WatchersMaxDefault)
	s.watchKeepalive.Store(int64(watchKeepalive))
	s.watchWriteMax.Store(int64(watchWriteTimeout))
	return s
}

// SetAdmission replaces the per-client write limit; call before serving.
func (s *Server) SetAdmission(a Admission) { s.admit = newLimiter(a) }

func ms(t int64) *timestamppb.Timestamp { return timestamppb.New(time.UnixMilli(t)) }

// msIn is ms written into ts, which it returns.
func msIn(ts *timestamppb.Timestamp, t int64) *timestamppb.Timestamp {
	u := time.UnixMilli(t)
	ts.Seconds, ts.Nanos = u.Unix(), int32(u.Nanosecond())
	return ts
}

// send proposes a client command to its show's group, bounded in time as
// a write: proposeBounded, or within a batch the batch's (batch.go).
type send func(ctx context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error)

// propose sends a client command to its show's group and returns the FSM's
// result, or the status for a rejection or routing failure.
func (s *Server) propose(ctx context.Context, showID string, cmd *ledgerpb.Command, o op) (*ledgerpb.Result, error) {
	return s.proposeVia(ctx, showID, cmd, o, s.proposeBounded)
}

// proposeBounded is the router's Propose bounded as a write: by the
// caller's deadline (gRPC's grpc-timeout) when it comes sooner than ours,
// for then a second timer would only be garbage, else by s.timeout.
func (s *Server) proposeBounded(ctx context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	if d, ok := ctx.Deadline(); !ok || time.Until(d) > s.timeout {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	s.noteForwarded(ctx, showID)
	return s.router.Propose(ctx, showID, cmd)
}

// proposeVia is propose with the command sent by via, which bounds the
// write's time: admission and the first send time first, the status
// mapping after.
func (s *Server) proposeVia(ctx context.Context, showID string, cmd *ledgerpb.Command, o op, via send) (*ledgerpb.Result, error) {
	if _, create := cmd.Op.(*ledgerpb.Command_CreateShow); !create {
		if ok, wait := s.admit.allow(cmd.ClientId, time.Now()); !ok {
			s.rateLimited.Add(1)
			return nil, rateLimitedError(cmd.ClientId, wait)
		}
	}
	sent, err := firstSentAt(ctx, time.Now())
	if err != nil {
		return nil, err
	}
	cmd.FirstSentAtMs = sent
	s.faults.requestID(cmd)
	res, err := via(ctx, showID, cmd)
	if err != nil {
		return nil, routeError(err)
	}
	return res, resultError(res, o)
}

// CreateShow creates a show. Without a request_id, one is derived from the
// show itself, so creating the same show twice is harmless and creating a
// different show under a taken id is refused with SHOW_EXISTS.
func (s *Server) CreateShow(ctx context.Context, req *ledgerpb.CreateShowRequest) (*ledgerpb.CreateShowResponse, error) {
	if err := s.auth.admin(ctx); err != nil {
		return nil, err
	}
	if fe := fsm.ValidateShow(req.Show); fe != nil {
		return nil, fieldError(fe)
	}
	client, request := req.ClientId, req.RequestId
	if client == "" {
		client = "admin"
	}
	if request == "" {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req.Show)
		if err != nil {
			return nil, newStatus("INTERNAL", "encode show: "+err.Error())
		}
		sum := sha256.Sum256(b)
		request = "create-show:" + req.Show.ShowId + ":" + hex.EncodeToString(sum[:8])
	}
	if fe := fsm.ValidateIdentity(client, request); fe != nil {
		return nil, fieldError(fe)
	}
	// The show's hold-token key: random here, so that the FSM can issue
	// tokens deterministically from the log (fsm/token.go).
	key := make([]byte, fsm.TokenKeyBytes)
	rand.Read(key)
	cmd := &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: req.Show, TokenKey: key}}}
	res, err := s.propose(ctx, req.Show.ShowId, cmd, opOther)
	if err != nil {
		return nil, err
	}
	seats := uint32(0)
	for _, r := range req.Show.Rows {
		seats += r.Seats
	}
	return &ledgerpb.CreateShowResponse{ShowId: req.Show.ShowId, SeatCount: seats, Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs)}, nil
}

// GetSeatMap returns a show's seats with their states, or with states_only
// just the states, one letter per seat.
func (s *Server) GetSeatMap(ctx context.Context, req *ledgerpb.GetSeatMapRequest) (*ledgerpb.SeatMap, error) {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"})
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	read := s.router.SeatMap
	if req.StatesOnly {
		read = s.router.SeatStates
	}
	sm, err := read(ctx, req.ShowId, req.Consistency)
	if err != nil {
		return nil, routeError(err)
	}
	return sm, nil
}

// Hold holds the named seats, or the best available count, all or nothing.
func (s *Server) Hold(ctx context.Context, req *ledgerpb.HoldRequest) (*ledgerpb.HoldResponse, error) {
	return s.hold(ctx, req, s.proposeBounded)
}

// hold is Hold with the command sent by via (a Batch's calls, batch.go).
func (s *Server) hold(ctx context.Context, req *ledgerpb.HoldRequest, via send) (*ledgerpb.HoldResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	m := &holdMem{}
	m.hc = ledgerpb.HoldCmd{ShowId: req.ShowId, SeatIds: req.SeatIds, TtlMs: int64(req.TtlSeconds) * 1000,
		Count: req.Count, Category: req.Category, Wait: req.Wait, AdmissionToken: req.AdmissionToken}
	if fe := fsm.ValidateHold(&m.hc); fe != nil {
		return nil, fieldError(fe)
	}
	m.op.Hold = &m.hc
	m.cmd = ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &m.op}
	res, err := s.proposeVia(ctx, req.ShowId, &m.cmd, opOther, via)
	if res != nil && res.Code == ledgerpb.Code_CODE_QUEUED {
		// Joined the line: the entry as GetQueueEntry would show it.
		return nil, queuedError(res, &ledgerpb.QueueEntry{ShowId: req.ShowId, ClientId: req.ClientId,
			Count: req.Count, Category: req.Category})
	}
	if err != nil {
		return nil, err
	}
	m.resp = ledgerpb.HoldResponse{
		HoldId: res.HoldId, ShowId: req.ShowId, SeatIds: res.SeatIds, ExpiresAt: msIn(&m.ts[0], res.ExpiresAtMs),
		Revision: res.Revision, AppliedAt: msIn(&m.ts[1], res.AppliedAtMs), AmountMinor: res.AmountMinor,
		Currency: res.Currency, Replayed: res.Replayed, HoldToken: res.HoldToken,
		MaxExpiresAt: msIn(&m.ts[2], res.MaxExpiresAtMs),
	}
	return &m.resp, nil
}

// holdMem, confirmMem and releaseMem are what serving a hold, a confirm or
// a release allocates, in one allocation each instead of five to seven:
// the command with its op and the response with its timestamps. They are
// the calls of a busy booking site, and every allocation there is work for
// the collector (docs/PERFORMANCE.md). Their fields are only ever
// addressed, never copied.
type (
	holdMem struct {
		cmd  ledgerpb.Command
		op   ledgerpb.Command_Hold
		hc   ledgerpb.HoldCmd
		resp ledgerpb.HoldResponse
		ts   [3]timestamppb.Timestamp
	}
	confirmMem struct {
		cmd  ledgerpb.Command
		op   ledgerpb.Command_Confirm
		cc   ledgerpb.ConfirmCmd
		resp ledgerpb.ConfirmResponse
		ts   timestamppb.Timestamp
	}
	releaseMem struct {
		cmd  ledgerpb.Command
		op   ledgerpb.Command_Release
		rc   ledgerpb.ReleaseCmd
		resp ledgerpb.ReleaseResponse
		ts   timestamppb.Timestamp
	}
)

// Confirm turns a live hold into a booking.
func (s *Server) Confirm(ctx context.Context, req *ledgerpb.ConfirmRequest) (*ledgerpb.ConfirmResponse, error) {
	return s.confirm(ctx, req, s.proposeBounded)
}

// confirm is Confirm with the command sent by via (a Batch's calls, batch.go).
func (s *Server) confirm(ctx context.Context, req *ledgerpb.ConfirmRequest, via send) (*ledgerpb.ConfirmResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	m := &confirmMem{}
	m.cc = ledgerpb.ConfirmCmd{ShowId: req.ShowId, HoldId: req.HoldId, PaymentRef: req.PaymentRef, HoldToken: req.HoldToken}
	if fe := fsm.ValidateConfirm(&m.cc); fe != nil {
		return nil, fieldError(fe)
	}
	m.op.Confirm = &m.cc
	m.cmd = ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &m.op}
	res, err := s.proposeVia(ctx, req.ShowId, &m.cmd, opConfirm, via)
	if err != nil {
		return nil, err
	}
	m.resp = ledgerpb.ConfirmResponse{
		HoldId: res.HoldId, ShowId: req.ShowId, SeatIds: res.SeatIds, State: res.HoldState,
		PaymentRef: req.PaymentRef, Revision: res.Revision, AppliedAt: msIn(&m.ts, res.AppliedAtMs),
		AmountMinor: res.AmountMinor, Currency: res.Currency, Replayed: res.Replayed,
	}
	return &m.resp, nil
}

// Release gives a hold's seats back.
func (s *Server) Release(ctx context.Context, req *ledgerpb.ReleaseRequest) (*ledgerpb.ReleaseResponse, error) {
	return s.release(ctx, req, s.proposeBounded)
}

// release is Release with the command sent by via (a Batch's calls, batch.go).
func (s *Server) release(ctx context.Context, req *ledgerpb.ReleaseRequest, via send) (*ledgerpb.ReleaseResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	m := &releaseMem{}
	m.rc = ledgerpb.ReleaseCmd{ShowId: req.ShowId, HoldId: req.HoldId, HoldToken: req.HoldToken}
	if fe := fsm.ValidateRelease(&m.rc); fe != nil {
		return nil, fieldError(fe)
	}
	m.op.Release = &m.rc
	m.cmd = ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &m.op}
	res, err := s.proposeVia(ctx, req.ShowId, &m.cmd, opOther, via)
	if err != nil {
		return nil, err
	}
	m.resp = ledgerpb.ReleaseResponse{HoldId: res.HoldId, State: res.HoldState, Revision: res.Revision,
		AppliedAt: msIn(&m.ts, res.AppliedAtMs), Replayed: res.Replayed}
	return &m.resp, nil
}

// Extend moves a live hold's expiry later, up to its lifetime cap.
func (s *Server) Extend(ctx context.Context, req *ledgerpb.ExtendRequest) (*ledgerpb.ExtendResponse, error) {
	return s.extend(ctx, req, s.proposeBounded)
}

// extend is Extend with the command sent by via (a Batch's calls, batch.go).
func (s *Server) extend(ctx context.Context, req *ledgerpb.ExtendRequest, via send) (*ledgerpb.ExtendResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	ec := &ledgerpb.ExtendCmd{ShowId: req.ShowId, HoldId: req.HoldId, HoldToken: req.HoldToken, TtlMs: int64(req.TtlSeconds) * 1000}
	if fe := fsm.ValidateExtend(ec); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &ledgerpb.Command_Extend{Extend: ec}}
	res, err := s.proposeVia(ctx, req.ShowId, cmd, opOther, via)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.ExtendResponse{HoldId: res.HoldId, ExpiresAt: ms(res.ExpiresAtMs), MaxExpiresAt: ms(res.MaxExpiresAtMs),
		Revision: res.Revision, AppliedAt: ms(res.AppliedAtMs), Replayed: res.Replayed}, nil
}

// Refund cancels a confirmed booking and frees its seats.
func (s *Server) Refund(ctx context.Context, req *ledgerpb.RefundRequest) (*ledgerpb.RefundResponse, error) {
	return s.refund(ctx, req, s.proposeBounded)
}

// refund is Refund with the command sent by via (a Batch's calls, batch.go).
func (s *Server) refund(ctx context.Context, req *ledgerpb.RefundRequest, via send) (*ledgerpb.RefundResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	rc := &ledgerpb.RefundCmd{ShowId: req.ShowId, HoldId: req.HoldId, HoldToken: req.HoldToken, Reason: req.Reason}
	if fe := fsm.ValidateRefund(rc); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &ledgerpb.Command_Refund{Refund: rc}}
	res, err := s.proposeVia(ctx, req.ShowId, cmd, opOther, via)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.RefundResponse{HoldId: res.HoldId, State: res.HoldState, SeatIds: res.SeatIds,
		AmountMinor: res.AmountMinor, Currency: res.Currency, Revision: res.Revision,
		AppliedAt: ms(res.AppliedAtMs), Replayed: res.Replayed}, nil
}

// GetQueueEntry returns a waiter's entry: its place in line, or the hold
// offered to it with the hold's token.
func (s *Server) GetQueueEntry(ctx context.Context, req *ledgerpb.GetQueueEntryRequest) (*ledgerpb.QueueEntry, error) {
	if fe := fsm.ValidateLeaveQueue(&ledgerpb.LeaveQueueCmd{ShowId: req.ShowId, EntryId: req.EntryId, QueueToken: req.QueueToken}); fe != nil {
		return nil, fieldError(fe)
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	e, err := s.router.QueueEntry(ctx, req.ShowId, req.EntryId, req.QueueToken)
	if err != nil {
		return nil, routeError(err)
	}
	return e, nil
}

// LeaveQueue takes a waiter out of a show's queue.
func (s *Server) LeaveQueue(ctx context.Context, req *ledgerpb.LeaveQueueRequest) (*ledgerpb.LeaveQueueResponse, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	lc := &ledgerpb.LeaveQueueCmd{ShowId: req.ShowId, EntryId: req.EntryId, QueueToken: req.QueueToken}
	if fe := fsm.ValidateLeaveQueue(lc); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &ledgerpb.Command_LeaveQueue{LeaveQueue: lc}}
	res, err := s.propose(ctx, req.ShowId, cmd, opOther)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.LeaveQueueResponse{EntryId: res.QueueEntryId, State: "LEFT", Revision: res.Revision,
		AppliedAt: ms(res.AppliedAtMs), Replayed: res.Replayed}, nil
}

// GetHold returns a hold or booking. Its owner and payment (client_id,
// payment_ref) go only to a caller with the hold's token or a backend
// credential (auth.go); anyone else gets the public fields, the ones the
// seat map and the watch stream show anyway, marked redacted. Hold ids are
// not secret (they are sequential), so the id alone must not reveal more.
func (s *Server) GetHold(ctx context.Context, req *ledgerpb.GetHoldRequest) (*ledgerpb.HoldInfo, error) {
	if fe := fsm.ValidateHoldRef(req.ShowId, req.HoldId); fe != nil {
		return nil, fieldError(fe)
	}
	if req.HoldToken != "" {
		// The token proves ownership whatever bearer the caller sends.
		if fe := fsm.ValidateHoldToken(req.HoldToken); fe != nil {
			return nil, fieldError(fe)
		}
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		h, _, err := s.router.OwnedHold(ctx, req.ShowId, req.HoldId, req.HoldToken)
		if err != nil {
			return nil, routeError(err)
		}
		return h, nil
	}
	backend, err := s.auth.backend(ctx)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	h, err := s.router.Hold(ctx, req.ShowId, req.HoldId, req.Consistency)
	if err != nil {
		return nil, routeError(err)
	}
	if !backend {
		redact(h)
	}
	return h, nil
}

// redact leaves out of h what only its owner or the backend may read.
func redact(h *ledgerpb.HoldInfo) {
	h.ClientId, h.PaymentRef, h.Redacted = "", "", true
}
