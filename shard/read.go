package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// SeatMap reads a show's seat map. Linearizable reads go to the group's
// leader; stale reads are served by this node's replica when it has one.
func (r *Router) SeatMap(ctx context.Context, showID string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	return r.seatMap(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_SEAT_MAP, ShowId: showID}, c)
}

// SeatStates reads a show's seat map without its layout (fsm.View.SeatStates),
// as SeatMap does.
func (r *Router) SeatStates(ctx context.Context, showID string, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	return r.seatMap(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_SEAT_MAP, ShowId: showID, StatesOnly: true}, c)
}

func (r *Router) seatMap(ctx context.Context, req *ledgerpb.ReadRequest, c ledgerpb.Consistency) (*ledgerpb.SeatMap, error) {
	resp, err := r.read(ctx, req, c)
	if err != nil {
		return nil, err
	}
	return resp.SeatMap, nil
}

// Hold reads a hold of a show.
func (r *Router) Hold(ctx context.Context, showID, holdID string, c ledgerpb.Consistency) (*ledgerpb.HoldInfo, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_HOLD, ShowId: showID, HoldId: holdID}, c)
	if err != nil {
		return nil, err
	}
	return resp.Hold, nil
}

// Revocations reads up to limit of a show's refunded bookings after
// revision after, oldest first (the door scanners' feed).
func (r *Router) Revocations(ctx context.Context, showID string, after uint64, limit uint32) ([]*ledgerpb.Revocation, bool, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_REVOCATIONS, ShowId: showID,
		AfterRevision: after, Limit: limit}, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return nil, false, err
	}
	return resp.Revocations, resp.More, nil
}

// revocations serves READ_KIND_REVOCATIONS from view v.
func revocations(v *fsm.View, req *ledgerpb.ReadRequest, resp *ledgerpb.ReadResponse) (*ledgerpb.ReadResponse, error) {
	revs, more, err := v.Revocations(req.ShowId, req.AfterRevision, int(req.Limit))
	if err != nil {
		return nil, err
	}
	if ok, err := v.ShowExists(req.ShowId); err != nil || !ok {
		resp.Code = ledgerpb.Code_CODE_SHOW_NOT_FOUND
		return resp, err
	}
	for _, r := range revs {
		resp.Revocations = append(resp.Revocations, &ledgerpb.Revocation{HoldId: r.Hold.HoldId, SeatIds: r.Hold.SeatIds,
			Revision: r.Revision, RefundedAt: timestamppb.New(time.UnixMilli(r.Hold.RefundedAtMs))})
	}
	resp.More = more
	return resp, nil
}

// QueueEntry reads a waiter's queue entry for the holder of its token.
func (r *Router) QueueEntry(ctx context.Context, showID, entryID, token string) (*ledgerpb.QueueEntry, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_QUEUE_ENTRY, ShowId: showID,
		EntryId: entryID, QueueToken: token}, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return nil, err
	}
	return resp.QueueEntry, nil
}

// ClientBookings lists a client's bookings in every group, up to limit per
// group. Each group is read linearizably, one after the other (a booking is
// rare next to a hold, and the list is not on the booking path).
func (r *Router) ClientBookings(ctx context.Context, client string, limit uint32) ([]*ledgerpb.HoldInfo, bool, error) {
	var out []*ledgerpb.HoldInfo
	truncated := false
	for g := range r.smap.Groups {
		resp, err := r.readGroup(ctx, &ledgerpb.ReadRequest{GroupId: g, Kind: ledgerpb.ReadKind_READ_KIND_CLIENT_BOOKINGS,
			ClientId: client, Limit: limit}, ledgerpb.Consistency_LINEARIZABLE)
		if err != nil {
			return nil, false, err
		}
		out = append(out, resp.Bookings...)
		truncated = truncated || resp.More
	}
	return out, truncated, nil
}

func (r *Router) read(ctx context.Context, req *ledgerpb.ReadRequest, c ledgerpb.Consistency) (*ledgerpb.ReadResponse, error) {
	req.GroupId = r.smap.GroupFor(req.ShowId)
	return r.readGroup(ctx, req, c)
}

// readGroup reads from req.GroupId. Where this node's replica has known no
// leader for a while (checkLeader), a linearizable read fails fast with
// raftnode.ErrNoLeader; a stale read is still served from the replica, and
// fails so only when the replica cannot serve it alone (a show it does not
// have, readOnce).
func (r *Router) readGroup(ctx context.Context, req *ledgerpb.ReadRequest, c ledgerpb.Consistency) (*ledgerpb.ReadResponse, error) {
	stale := c == ledgerpb.Consistency_STALE
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, retryBackoffMax) {
		if !stale {
			if err := r.checkLeader(req.GroupId); err != nil {
				return nil, err
			}
		}
		resp, err := r.readOnce(ctx, req, stale)
		if err == nil {
			return resp, readErr(resp)
		}
		if !retryable(err) {
			return nil, err
		}
		if lerr := r.checkLeader(req.GroupId); lerr != nil {
			return nil, fmt.Errorf("%w (%v)", lerr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", raftnode.ErrUnavailable, err)
		case <-time.After(backoff):
		}
	}
}

func readErr(resp *ledgerpb.ReadResponse) error {
	switch resp.Code {
	case ledgerpb.Code_CODE_SHOW_NOT_FOUND:
		return ErrShowNotFound
	case ledgerpb.Code_CODE_HOLD_NOT_FOUND:
		return ErrHoldNotFound
	case ledgerpb.Code_CODE_NOT_QUEUED:
		return ErrNotQueued
	case ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID:
		return ErrQueueToken
	case ledgerpb.Code_CODE_HOLD_TOKEN_INVALID:
		return ErrHoldToken
	}
	return roomErr(resp.Code)
}

func (r *Router) readOnce(ctx context.Context, req *ledgerpb.ReadRequest, stale bool) (*ledgerpb.ReadResponse, error) {
	if g, err := r.node.Group(req.GroupId); err == nil && (stale || g.IsLeader()) {
		resp, err := r.readLocal(ctx, g, req, !stale)
		if err == nil && stale && resp.Code == ledgerpb.Code_CODE_SHOW_NOT_FOUND && !g.IsLeader() {
			// A follower learns that an entry committed with the next
			// append or heartbeat frame (raftnode/heartbeat.go), 0.1-0.3 s
			// later when no write follows: a show created a moment ago
			// is not yet here. Not found is not an answer a stale
			// replica can give; its leader can.
			return r.forwardRead(ctx, req, "read")
		}
		return resp, err
	} else if err == nil && r.faults.staleReads() {
		resp, err := r.readLocal(ctx, g, req, false)
		if err == nil && resp.SeatMap != nil {
			resp.SeatMap.Consistency = ledgerpb.Consistency_LINEARIZABLE
		}
		return resp, err
	}
	return r.forwardRead(ctx, req, "read")
}

// forwardRead sends a read to the node believed to lead its group, once,
// and learns the leader from the answer.
func (r *Router) forwardRead(ctx context.Context, req *ledgerpb.ReadRequest, what string) (*ledgerpb.ReadResponse, error) {
	target := r.leaderNode(req.GroupId)
	if target == "" {
		return nil, fmt.Errorf("%w: group %d has no known leader", raftnode.ErrUnavailable, req.GroupId)
	}
	client, err := r.peer(target)
	if err != nil {
		r.setHint(req.GroupId, "") // a node that left the peer table: ask another
		return nil, err
	}
	fctx, cancel := context.WithTimeout(ctx, forwardTimeoutMax)
	defer cancel()
	fwd := proto.Clone(req).(*ledgerpb.ReadRequest)
	fwd.Hops = 1
	resp, err := client.Read(fctx, fwd)
	if err != nil {
		r.setHint(req.GroupId, "")
		return nil, fmt.Errorf("%w: %s from %s: %v", errForward, what, target, err)
	}
	r.setHint(req.GroupId, resp.LeaderId)
	return resp, forwardErr(resp.Status, resp.Message)
}

// readLocal serves a read from this node's replica.
func (r *Router) readLocal(ctx context.Context, g *raftnode.Group, req *ledgerpb.ReadRequest, linearizable bool) (*ledgerpb.ReadResponse, error) {
	v, err := g.View(ctx, linearizable)
	if err != nil {
		return nil, err
	}
	defer v.Close()
	consistency := ledgerpb.Consistency_LINEARIZABLE
	if !linearizable {
		consistency = ledgerpb.Consistency_STALE
	}
	resp := &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK, Code: ledgerpb.Code_CODE_OK}
	switch req.Kind {
	case ledgerpb.ReadKind_READ_KIND_SEAT_MAP:
		read := v.SeatMap
		if req.StatesOnly {
			read = v.SeatStates
		}
		sm, err := read(req.ShowId)
		if errors.Is(err, fsm.ErrNotFound) {
			resp.Code = ledgerpb.Code_CODE_SHOW_NOT_FOUND
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		sm.AsOf = timestamppb.New(time.UnixMilli(v.Clock()))
		sm.Consistency = consistency
		sm.ServedBy = r.node.ID()
		resp.SeatMap = sm
	case ledgerpb.ReadKind_READ_KIND_HOLD:
		if req.HoldToken != "" {
			return r.ownedHold(v, req, resp)
		}
		h, err := v.Hold(req.HoldId)
		if errors.Is(err, fsm.ErrNotFound) || (err == nil && h.ShowId != req.ShowId) {
			resp.Code = ledgerpb.Code_CODE_HOLD_NOT_FOUND
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		resp.Hold = holdInfo(h, v)
	case ledgerpb.ReadKind_READ_KIND_QUEUE_ENTRY:
		q, err := v.QueueEntry(req.ShowId, req.EntryId, req.QueueToken)
		switch {
		case errors.Is(err, fsm.ErrNotFound):
			resp.Code = ledgerpb.Code_CODE_NOT_QUEUED
			return resp, nil
		case errors.Is(err, fsm.ErrBadToken):
			resp.Code = ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID
			return resp, nil
		case err != nil:
			return nil, err
		}
		resp.QueueEntry = queueEntry(q, v)
	case ledgerpb.ReadKind_READ_KIND_CLIENT_BOOKINGS:
		hs, more, err := v.ClientBookings(req.ClientId, int(req.Limit))
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			resp.Bookings = append(resp.Bookings, holdInfo(h, v))
		}
		resp.More = more
	case ledgerpb.ReadKind_READ_KIND_REVOCATIONS:
		return revocations(v, req, resp)
	case ledgerpb.ReadKind_READ_KIND_ROOM, ledgerpb.ReadKind_READ_KIND_ROOM_ENTRY:
		return readRoom(v, req, resp) // waitroom.go
	default:
		return nil, fmt.Errorf("shard: unknown read kind %v", req.Kind)
	}
	return resp, nil
}

func holdInfo(h *ledgerpb.HoldRecord, v *fsm.View) *ledgerpb.HoldInfo {
	return &ledgerpb.HoldInfo{
		HoldId:       h.HoldId,
		ShowId:       h.ShowId,
		SeatIds:      h.SeatIds,
		ClientId:     h.ClientId,
		State:        h.State,
		ExpiresAt:    timestamppb.New(time.UnixMilli(h.ExpiresAtMs)),
		PaymentRef:   h.PaymentRef,
		AmountMinor:  h.AmountMinor,
		Currency:     h.Currency,
		Revision:     v.Applied(),
		AsOf:         timestamppb.New(time.UnixMilli(v.Clock())),
		CreatedAt:    timestamppb.New(time.UnixMilli(h.CreatedAtMs)),
		MaxExpiresAt: timestamppb.New(time.UnixMilli(h.CreatedAtMs + fsm.HoldLifetimeMaxMs)),
		RefundedAt:   refundedAt(h),
		ClosedAt:     closedAt(h),
	}
}

// closedAt is when a hold was confirmed, released or expired; nil while
// it is held.
func closedAt(h *ledgerpb.HoldRecord) *timestamppb.Timestamp {
	if h.ClosedAtMs == 0 {
		return nil
	}
	return timestamppb.New(time.UnixMilli(h.ClosedAtMs))
}

// refundedAt is a booking's refund time, nil unless it was refunded.
func refundedAt(h *ledgerpb.HoldRecord) *timestamppb.Timestamp {
	if h.State != ledgerpb.HoldState_HOLD_STATE_REFUNDED {
		return nil
	}
	return timestamppb.New(time.UnixMilli(h.RefundedAtMs))
}

// ownedHold answers a hold read that presents the hold's token.
func (r *Router) ownedHold(v *fsm.View, req *ledgerpb.ReadRequest, resp *ledgerpb.ReadResponse) (*ledgerpb.ReadResponse, error) {
	h, seats, err := v.HoldForOwner(req.ShowId, req.HoldId, req.HoldToken)
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		resp.Code = ledgerpb.Code_CODE_HOLD_NOT_FOUND
		return resp, nil
	case errors.Is(err, fsm.ErrBadToken):
		resp.Code = ledgerpb.Code_CODE_HOLD_TOKEN_INVALID
		return resp, nil
	case err != nil:
		return nil, err
	}
	resp.Hold, resp.Seats = holdInfo(h, v), seats
	return resp, nil
}

// OwnedHold reads a hold with its seats for the holder of its token.
func (r *Router) OwnedHold(ctx context.Context, showID, holdID, token string) (*ledgerpb.HoldInfo, []*ledgerpb.Seat, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_HOLD, ShowId: showID, HoldId: holdID,
		HoldToken: token}, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return nil, nil, err
	}
	return resp.Hold, resp.Seats, nil
}

// queueEntry is a waiter's entry as its owner sees it.
func queueEntry(q *fsm.QueueView, v *fsm.View) *ledgerpb.QueueEntry {
	e := q.Entry
	out := &ledgerpb.QueueEntry{
		EntryId: e.EntryId, ShowId: e.ShowId, ClientId: e.ClientId, Count: e.Count, Category: e.Category,
		State:    strings.TrimPrefix(e.State.String(), "QUEUE_STATE_"),
		Position: q.Position, SeatsAhead: q.SeatsAhead, JoinedAt: timestamppb.New(time.UnixMilli(e.JoinedAtMs)),
		Revision: v.Applied(), AsOf: timestamppb.New(time.UnixMilli(v.Clock())),
	}
	if h := q.Hold; h != nil {
		out.HoldId, out.HoldToken, out.HoldState, out.SeatIds = h.HoldId, q.HoldToken, h.State, h.SeatIds
		out.OfferExpiresAt = timestamppb.New(time.UnixMilli(h.ExpiresAtMs))
	}
	return out
}
