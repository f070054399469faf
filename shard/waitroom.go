package shard

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Errors of waiting-room reads: an unknown entry, or an entry read with
// another entry's token.
var (
	ErrRoomEntryNotFound = fmt.Errorf("shard: waiting room entry %w", fsm.ErrNotFound)
	ErrRoomToken         = fmt.Errorf("shard: waiting room entry: %w", fsm.ErrBadToken)
)

// RoomEntry reads a waiting-room entry for the holder of its entry token,
// linearizably: an entry just admitted reads ADMITTED.
func (r *Router) RoomEntry(ctx context.Context, showID, entryID, token string) (*ledgerpb.WaitingRoomEntry, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_ROOM_ENTRY, ShowId: showID,
		EntryId: entryID, EntryToken: token}, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return nil, err
	}
	return resp.RoomEntry, nil
}

// Room reads a show's waiting room.
func (r *Router) Room(ctx context.Context, showID string) (*ledgerpb.WaitingRoomStatus, error) {
	resp, err := r.read(ctx, &ledgerpb.ReadRequest{Kind: ledgerpb.ReadKind_READ_KIND_ROOM, ShowId: showID},
		ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return nil, err
	}
	return resp.Room, nil
}

// roomErr is readErr for the waiting room's codes.
func roomErr(code ledgerpb.Code) error {
	switch code {
	case ledgerpb.Code_CODE_ROOM_ENTRY_NOT_FOUND:
		return ErrRoomEntryNotFound
	case ledgerpb.Code_CODE_ROOM_TOKEN_INVALID:
		return ErrRoomToken
	}
	return nil
}

// readRoom serves READ_KIND_ROOM and READ_KIND_ROOM_ENTRY from a view.
func readRoom(v *fsm.View, req *ledgerpb.ReadRequest, resp *ledgerpb.ReadResponse) (*ledgerpb.ReadResponse, error) {
	if req.Kind == ledgerpb.ReadKind_READ_KIND_ROOM {
		rv, err := v.Room(req.ShowId)
		if errors.Is(err, fsm.ErrNotFound) {
			resp.Code = ledgerpb.Code_CODE_SHOW_NOT_FOUND
			return resp, nil
		}
		if err != nil {
			return nil, err
		}
		resp.Room = &ledgerpb.WaitingRoomStatus{ShowId: req.ShowId, Open: rv.Open, AdmitPerSecond: rv.AdmitPerSecond,
			AdmissionTtlSeconds: uint32(rv.AdmissionTTLMs / 1000), SoldOut: rv.SoldOut, Waiting: rv.Waiting,
			Admitted: rv.Admitted, Joined: rv.Joined, AdmittedThrough: rv.AdmittedThrough,
			Revision: v.Applied(), AsOf: timestamppb.New(time.UnixMilli(v.Clock())),
			AutoOpenArrivalsPerSecond: rv.AutoOpenArrivalsPerSecond, AutoOpenAdmitPerSecond: rv.AutoOpenAdmitPerSecond}
		return resp, nil
	}
	e, err := v.RoomEntry(req.ShowId, req.EntryId, req.EntryToken)
	switch {
	case errors.Is(err, fsm.ErrNotFound):
		resp.Code = ledgerpb.Code_CODE_ROOM_ENTRY_NOT_FOUND
		return resp, nil
	case errors.Is(err, fsm.ErrBadToken):
		resp.Code = ledgerpb.Code_CODE_ROOM_TOKEN_INVALID
		return resp, nil
	case err != nil:
		return nil, err
	}
	resp.RoomEntry = RoomEntryOf(req.ShowId, e, v.Clock())
	resp.RoomEntry.Revision, resp.RoomEntry.AsOf = v.Applied(), timestamppb.New(time.UnixMilli(v.Clock()))
	return resp, nil
}

// RoomEntryOf is an entry as the API shows it, as of the log clock now.
func RoomEntryOf(show string, e *fsm.RoomEntryView, now int64) *ledgerpb.WaitingRoomEntry {
	out := &ledgerpb.WaitingRoomEntry{EntryId: e.Entry.EntryId, ShowId: show, State: RoomStateName(e.State),
		Position: e.Position, Place: e.Place, AdmissionToken: e.AdmissionToken}
	if e.Entry.JoinedAtMs != 0 {
		out.JoinedAt = timestamppb.New(time.UnixMilli(e.Entry.JoinedAtMs))
	}
	if e.Position > 0 {
		out.PeopleAhead = e.Position - 1
		out.EstimatedWaitSeconds = EstimatedWait(e.Position, e.AdmitPerSecond, e.Entry.Window, now)
	}
	if e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED {
		out.AdmissionExpiresAt = timestamppb.New(time.UnixMilli(e.Entry.AdmissionExpiresAtMs))
	}
	if e.Entry.AdmittedAtMs != 0 {
		out.AdmittedAt = timestamppb.New(time.UnixMilli(e.Entry.AdmittedAtMs))
	}
	return out
}

// EstimatedWait is how long the entry at position waits at rate: until its
// arrival window closes, then one admission interval per place.
func EstimatedWait(position uint64, rate uint32, window, now int64) uint32 {
	if rate == 0 {
		return 0
	}
	closes := max(0, (window+1)*fsm.RoomWindowMs-now)
	return uint32((uint64(closes) + position*1000/uint64(rate) + 999) / 1000)
}

// RoomStateName is the API's name of an entry state: WAITING, ADMITTED,
// SOLD_OUT, EXPIRED or CLOSED.
func RoomStateName(s ledgerpb.RoomEntryState) string {
	const prefix = len("ROOM_ENTRY_STATE_")
	return s.String()[prefix:]
}
