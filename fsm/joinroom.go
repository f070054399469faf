package fsm

import (
	"fmt"
	"strconv"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// joinRoom puts client in show's open room. A client has one entry at a
// time: joining again answers with it, unless its admission expired, when
// the client joins anew at the back. The entry's rank in its arrival window
// comes from the command's seed (the proposer's random bytes).
func (tx *txn) joinRoom(client string, c *ledgerpb.JoinRoomCmd, pos int) *ledgerpb.Result {
	if tx.layout(c.ShowId) == nil {
		return reject(ledgerpb.Code_CODE_SHOW_NOT_FOUND, "show %s does not exist", c.ShowId)
	}
	r := tx.room(c.ShowId)
	if r == nil {
		return reject(ledgerpb.Code_CODE_ROOM_CLOSED, "show %s has no open waiting room: hold seats directly", c.ShowId)
	}
	if e := r.byClient[client]; e != nil && r.entryState(e, tx.now) != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_EXPIRED {
		return tx.roomEntryResult(c.ShowId, r, e)
	}
	if len(r.entries) >= RoomEntriesMax {
		return reject(ledgerpb.Code_CODE_ROOM_FULL, "the waiting room of show %s holds %d entries", c.ShowId, RoomEntriesMax)
	}
	id := roomEntryID(tx.m.group, tx.index, pos)
	e := &roomEntry{RoomEntryRecord: &ledgerpb.RoomEntryRecord{
		EntryId: id, ClientId: client, JoinedAtMs: tx.now, Window: tx.now / RoomWindowMs,
		Rank: roomRank(c.Seed, id), State: ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING,
	}}
	r.add(e)
	tx.putRoomEntry(c.ShowId, e)
	return tx.roomEntryResult(c.ShowId, r, e)
}

// roomEntryResult answers a join with the entry, its token and, while it
// waits, its position.
func (tx *txn) roomEntryResult(show string, r *room, e *roomEntry) *ledgerpb.Result {
	res := &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, RoomEntry: cloneOf(e.RoomEntryRecord),
		RoomEntryToken: roomEntryToken(tx.showTokenKey(show), e.EntryId)}
	res.RoomEntry.State = r.entryState(e, tx.now)
	if e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
		res.RoomPosition = r.position(e)
		res.RoomPeopleAhead = res.RoomPosition - 1
	}
	res.Message = fmt.Sprintf("entry %s in the waiting room of show %s", e.EntryId, show)
	return res
}

// roomEntryID names entry pos of the entry at index in group:
// w<group>-<index>-<pos>, unique like a hold id.
func roomEntryID(group uint32, index uint64, pos int) string {
	b := make([]byte, 0, 32)
	b = append(b, 'w')
	b = strconv.AppendUint(b, uint64(group), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, index, 10)
	b = append(b, '-')
	b = strconv.AppendInt(b, int64(pos), 10)
	return string(b)
}
