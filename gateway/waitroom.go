package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// WaitingRoom serves a show's waiting room (issue 18; fsm/waitroom.go):
// the operator opens and closes it, fans join and follow their entries,
// and holds in the show carry the admission token while it is open.
type WaitingRoom struct {
	ledgerpb.UnimplementedWaitingRoomServer
	s *Server
}

// waitingRoom is the WaitingRoom service of s, sharing its credentials,
// rate limits and router.
func (s *Server) waitingRoom() *WaitingRoom { return &WaitingRoom{s: s} }

// roomSeedBytes is how many random bytes a join carries for its place.
const roomSeedBytes = 16

// SetWaitingRoom opens a show's room at a rate, or closes it, and arms it
// to open by itself at a threshold of holds a second, or disarms it
// (admin).
// Without a request_id one is derived from what is asked, so repeating the
// same call is harmless.
func (w *WaitingRoom) SetWaitingRoom(ctx context.Context, req *ledgerpb.SetWaitingRoomRequest) (*ledgerpb.WaitingRoomStatus, error) {
	if err := w.s.auth.admin(ctx); err != nil {
		return nil, err
	}
	c := &ledgerpb.SetRoomCmd{ShowId: req.ShowId, Open: req.Open, AdmitPerSecond: req.AdmitPerSecond,
		AdmissionTtlMs: int64(req.AdmissionTtlSeconds) * 1000, AutoOpenArrivalsPerSecond: req.AutoOpenArrivalsPerSecond}
	if fe := fsm.ValidateSetRoom(c); fe != nil {
		return nil, fieldError(fe)
	}
	client, request := req.ClientId, req.RequestId
	if client == "" {
		client = "admin"
	}
	if request == "" {
		// A request id of its own per call: an id made of the arguments
		// made a second "open at 200/s" after a close a replay of the
		// first, and the room stayed closed. Opening and closing are
		// idempotent in effect, so a resent call without an id is safe.
		var b [12]byte
		rand.Read(b[:])
		request = "waiting-room-" + hex.EncodeToString(b[:])
	}
	if fe := fsm.ValidateIdentity(client, request); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: client, RequestId: request, Op: &ledgerpb.Command_SetRoom{SetRoom: c}}
	if _, err := w.s.propose(ctx, req.ShowId, cmd, opOther); err != nil {
		return nil, err
	}
	return w.GetWaitingRoom(ctx, &ledgerpb.GetWaitingRoomRequest{ShowId: req.ShowId})
}

// GetWaitingRoom reads a show's room.
func (w *WaitingRoom) GetWaitingRoom(ctx context.Context, req *ledgerpb.GetWaitingRoomRequest) (*ledgerpb.WaitingRoomStatus, error) {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"})
	}
	ctx, cancel := context.WithTimeout(ctx, w.s.timeout)
	defer cancel()
	st, err := w.s.router.Room(ctx, req.ShowId)
	if err != nil {
		return nil, routeError(err)
	}
	return st, nil
}

// JoinWaitingRoom puts the client in the show's room, or answers with its
// entry. The seed that draws its place is random here, as a show's token
// key is, so the FSM draws it deterministically from the log.
func (w *WaitingRoom) JoinWaitingRoom(ctx context.Context, req *ledgerpb.JoinWaitingRoomRequest) (*ledgerpb.WaitingRoomEntry, error) {
	if fe := fsm.ValidateIdentity(req.ClientId, req.RequestId); fe != nil {
		return nil, fieldError(fe)
	}
	seed := make([]byte, roomSeedBytes)
	rand.Read(seed)
	c := &ledgerpb.JoinRoomCmd{ShowId: req.ShowId, Seed: seed}
	if fe := fsm.ValidateJoinRoom(c); fe != nil {
		return nil, fieldError(fe)
	}
	cmd := &ledgerpb.Command{ClientId: req.ClientId, RequestId: req.RequestId, Op: &ledgerpb.Command_JoinRoom{JoinRoom: c}}
	res, err := w.s.propose(ctx, req.ShowId, cmd, opOther)
	if err != nil {
		return nil, err
	}
	rec := res.RoomEntry
	// The answer carries the room's rate at the join, so the estimated
	// wait is as of the join, as the position is.
	e := shard.RoomEntryOf(req.ShowId, &fsm.RoomEntryView{Entry: rec, State: rec.State, Position: res.RoomPosition,
		AdmitPerSecond: res.RoomAdmitPerSecond}, res.AppliedAtMs)
	e.EntryToken, e.Replayed, e.Revision, e.AsOf = res.RoomEntryToken, res.Replayed, res.Revision, ms(res.AppliedAtMs)
	return e, nil
}

// GetWaitingRoomEntry reads an entry for the holder of its entry token.
func (w *WaitingRoom) GetWaitingRoomEntry(ctx context.Context, req *ledgerpb.GetWaitingRoomEntryRequest) (*ledgerpb.WaitingRoomEntry, error) {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "show_id", Message: "is not a show id"})
	}
	if !fsm.ValidID(req.EntryId, fsm.HoldIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "entry_id", Message: "is not a waiting room entry id"})
	}
	if req.EntryToken == "" || len(req.EntryToken) > fsm.AdmissionTokenLenMax {
		return nil, fieldError(&fsm.FieldError{Field: "entry_token", Message: "is required: the entry_token the join answered with"})
	}
	ctx, cancel := context.WithTimeout(ctx, w.s.timeout)
	defer cancel()
	e, err := w.s.router.RoomEntry(ctx, req.ShowId, req.EntryId, req.EntryToken)
	if err != nil {
		return nil, routeError(err)
	}
	return e, nil
}
