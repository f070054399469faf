package runner

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The waiting room in the run (issue 18): one show of its own, whose room
// is open for the whole run, so the booking model never sees it. Room
// clients play fans one after another: a fan joins, reads its entry until
// the room admits it, sometimes tries a hold without its admission token
// (which must be refused), and holds one seat with the token. Faults hit
// them like every client; after healing, every entry a join learned of is
// read back (finalRooms) for jepsen/checker/room.go.

const (
	// roomClients play the fans; roomAdmitPerSecond is the room's rate,
	// slow enough that fans wait and the rate is tested.
	roomClients        = 3
	roomAdmitPerSecond = 4
	// roomPollEvery paces a fan's entry reads.
	roomPollEvery = 150 * time.Millisecond
)

func roomShow(seed int64) string { return fmt.Sprintf("j%d-room", seed) }

// openRoom creates the room's show and opens its room.
func openRoom(ctx context.Context, tc *testCluster, seed int64) error {
	b := ledgerpb.NewBookingClient(tc.adminConns[0])
	w := ledgerpb.NewWaitingRoomClient(tc.adminConns[0])
	show := roomShow(seed)
	var err error
	for try := 0; try < 100; try++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = b.CreateShow(cctx, &ledgerpb.CreateShowRequest{Show: testShow(show), ClientId: "jepsen-admin", RequestId: show})
		if err == nil || reasonOf(err) == "SHOW_EXISTS" {
			_, err = w.SetWaitingRoom(cctx, &ledgerpb.SetWaitingRoomRequest{ShowId: show, Open: true, AdmitPerSecond: roomAdmitPerSecond})
		}
		cancel()
		if err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("open the waiting room of %s: %w", show, err)
}

// runRoom plays fans until ctx ends.
func (c *client) runRoom(ctx context.Context) {
	show := roomShow(c.seed)
	seats := seatIDs()
	for fan := 0; ctx.Err() == nil; fan++ {
		c.as = fmt.Sprintf("jr%d-%d", c.id, fan)
		c.do(ctx, history.Op{Kind: history.KindJoin, Show: show})
		join := c.lastOp()
		if join.Outcome != history.OK {
			continue
		}
		var admitted history.Op
		for ctx.Err() == nil {
			time.Sleep(roomPollEvery)
			c.do(ctx, history.Op{Kind: history.KindRoomEntry, Show: show, RoomEntryID: join.RoomEntryID, RoomToken: join.RoomToken})
			if r := c.lastOp(); r.Outcome == history.OK && r.RoomState == "ADMITTED" {
				admitted = r
				break
			}
		}
		if admitted.AdmissionToken == "" {
			continue
		}
		seat := []string{seats[c.rng.IntN(len(seats))]}
		if c.rng.IntN(3) == 0 {
			c.do(ctx, history.Op{Kind: history.KindRoomHold, Show: show, Seats: seat, TTLms: 2000})
		}
		c.do(ctx, history.Op{Kind: history.KindRoomHold, Show: show, Seats: seat, TTLms: 2000, AdmissionToken: admitted.AdmissionToken})
	}
}

// roomAttempt is attempt for the room's ops, through op.Node's connection.
func (c *client) roomAttempt(ctx context.Context, b ledgerpb.BookingClient, op *history.Op) error {
	w := c.rooms[slices.Index(c.nodeIDs, op.Node)]
	var err error
	switch op.Kind {
	case history.KindJoin:
		var r *ledgerpb.WaitingRoomEntry
		r, err = w.JoinWaitingRoom(ctx, &ledgerpb.JoinWaitingRoomRequest{ShowId: op.Show, ClientId: op.ClientID, RequestId: op.RequestID})
		if err == nil {
			op.RoomEntryID, op.RoomToken, op.RoomState = r.EntryId, r.EntryToken, r.State
			op.Revision, op.AppliedAtMs, op.Replayed = r.Revision, r.AsOf.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindRoomEntry:
		var r *ledgerpb.WaitingRoomEntry
		r, err = w.GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: op.Show, EntryId: op.RoomEntryID, EntryToken: op.RoomToken})
		if err == nil {
			op.RoomState, op.RoomPlace, op.AdmissionToken = r.State, r.Place, r.AdmissionToken
			op.Revision, op.AppliedAtMs = r.Revision, r.AsOf.AsTime().UnixMilli()
			if r.AdmittedAt != nil {
				op.AdmittedAtMs = r.AdmittedAt.AsTime().UnixMilli()
			}
			if r.AdmissionExpiresAt != nil {
				op.AdmissionExpiresAtMs = r.AdmissionExpiresAt.AsTime().UnixMilli()
			}
		}
	case history.KindRoomHold:
		var r *ledgerpb.HoldResponse
		r, err = b.Hold(ctx, &ledgerpb.HoldRequest{ShowId: op.Show, SeatIds: op.Seats, ClientId: op.ClientID, RequestId: op.RequestID,
			TtlSeconds: uint32(op.TTLms / 1000), AdmissionToken: op.AdmissionToken})
		if err == nil {
			op.RoomHoldID, op.Revision, op.AppliedAtMs, op.Replayed = r.HoldId, r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	}
	if err != nil {
		op.Error, op.Reason = err.Error(), reasonOf(err)
	}
	return err
}

// finalRooms reads back every entry a join or a read learned of, and the
// room's rate.
func finalRooms(ctx context.Context, tc *testCluster, h *history.History) (map[string]history.FinalRoom, error) {
	conn := tc.adminConns[0] // on the first node still running, as liveBooking
	for i, id := range tc.ids() {
		if tc.procs.Running(id) {
			conn = tc.adminConns[i]
			break
		}
	}
	w := ledgerpb.NewWaitingRoomClient(conn)
	type known struct{ show, client, token string }
	entries := map[string]known{}
	for _, op := range h.Ops {
		if op.Kind == history.KindJoin && op.RoomEntryID != "" {
			entries[op.RoomEntryID] = known{op.Show, op.ClientID, op.RoomToken}
		}
	}
	out := map[string]history.FinalRoom{}
	for _, id := range sortedKeys(entries) {
		k := entries[id]
		room, ok := out[k.show]
		if !ok {
			st, err := retryRead(ctx, func(ctx context.Context) (*ledgerpb.WaitingRoomStatus, error) {
				return w.GetWaitingRoom(ctx, &ledgerpb.GetWaitingRoomRequest{ShowId: k.show})
			})
			if err != nil {
				return out, fmt.Errorf("final read of the room of %s: %w", k.show, err)
			}
			room = history.FinalRoom{AdmitPerSecond: st.AdmitPerSecond, Entries: map[string]history.FinalRoomEntry{}}
		}
		fe := history.FinalRoomEntry{Client: k.client}
		r, err := retryRead(ctx, func(ctx context.Context) (*ledgerpb.WaitingRoomEntry, error) {
			r, err := w.GetWaitingRoomEntry(ctx, &ledgerpb.GetWaitingRoomEntryRequest{ShowId: k.show, EntryId: id, EntryToken: k.token})
			if reasonOf(err) == "ROOM_ENTRY_NOT_FOUND" {
				return nil, nil
			}
			return r, err
		})
		if err != nil {
			return out, fmt.Errorf("final read of room entry %s: %w", id, err)
		}
		if r != nil {
			fe.Found, fe.State, fe.Place = true, r.State, r.Place
			if r.AdmittedAt != nil {
				fe.AdmittedAtMs = r.AdmittedAt.AsTime().UnixMilli()
			}
		}
		room.Entries[id] = fe
		out[k.show] = room
	}
	return out, nil
}
