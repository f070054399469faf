package fsm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// joinRoom puts c's client in show's open room. A client has one entry at
// a time: joining again answers with it, unless its admission expired,
// when the client joins anew at the back. The entry's rank in its arrival
// window comes from the command's seed (the proposer's random bytes).
//
// A join that makes an entry is recorded by the entry, not by a request
// record: the entry keeps the join's request id, payload hash and what its
// answer said, so joinReplay answers a retry exactly as the join was
// answered, with no second record per join to write (joinRecorded tells
// applyOne so). Every other answer (a rejection, or a second join that
// answers with the client's entry) is recorded as any request is.
func (tx *txn) joinRoom(c *ledgerpb.Command, j *ledgerpb.JoinRoomCmd, pos int, hash []byte) *ledgerpb.Result {
	if tx.layout(j.ShowId) == nil {
		return reject(ledgerpb.Code_CODE_SHOW_NOT_FOUND, "show %s does not exist", j.ShowId)
	}
	r := tx.room(j.ShowId)
	if r == nil {
		return reject(ledgerpb.Code_CODE_ROOM_CLOSED, "show %s has no open waiting room: hold seats directly", j.ShowId)
	}
	if e := r.byClient[c.ClientId]; e != nil && r.entryState(e, tx.now) != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_EXPIRED {
		return tx.roomEntryResult(j.ShowId, r, e)
	}
	if len(r.entries) >= RoomEntriesMax {
		return reject(ledgerpb.Code_CODE_ROOM_FULL, "the waiting room of show %s holds %d entries", j.ShowId, RoomEntriesMax)
	}
	id := roomEntryID(tx.m.group, tx.index, pos)
	client, request := clonePair(c.ClientId, c.RequestId) // not the entry's bytes (decodeEntry)
	e := &roomEntry{RoomEntryRecord: &ledgerpb.RoomEntryRecord{
		EntryId: id, ClientId: client, JoinedAtMs: tx.now, Window: tx.now / RoomWindowMs,
		Rank: roomRank(j.Seed, id), State: ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING,
		RequestId: request, PayloadHash: append([]byte(nil), hash...),
	}}
	e.JoinedPosition, e.JoinedSoldOut, e.JoinedAdmitPerSecond = r.add(e), r.rec.SoldOut, r.rec.AdmitPerSecond
	tx.putRoomEntry(j.ShowId, e)
	return joinAnswer(tx.showTokenKey(j.ShowId), j.ShowId, e)
}

// joinAnswer is the answer of the join that made e, from e alone: the
// join's own answer and every replay of it are this.
func joinAnswer(tokenKey []byte, show string, e *roomEntry) *ledgerpb.Result {
	state := ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING
	if e.JoinedSoldOut {
		state = ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_SOLD_OUT
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK,
		RoomEntry:      answerEntry(e.RoomEntryRecord, state, false),
		RoomEntryToken: roomEntryToken(tokenKey, e.EntryId),
		RoomPosition:   e.JoinedPosition, RoomPeopleAhead: e.JoinedPosition - 1,
		RoomAdmitPerSecond: e.JoinedAdmitPerSecond,
		Message:            "entry " + e.EntryId + " in the waiting room of show " + show,
		Revision:           roomEntryIndex(e.EntryId), AppliedAtMs: e.JoinedAtMs}
}

// joinReplay answers a request that made a room entry: with the join's
// answer when c retries it, with CODE_REQUEST_ID_REUSED when c asks for
// something else under its id. nil when no entry was made by c's id.
// applyOne asks it before the request records, which hold no such join.
func (tx *txn) joinReplay(c *ledgerpb.Command, hash []byte) *ledgerpb.Result {
	show, e := tx.m.led.joinOf(c.ClientId, c.RequestId)
	if e == nil {
		return nil
	}
	if string(e.PayloadHash) != string(hash) {
		return tx.stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_REQUEST_ID_REUSED,
			Message: fmt.Sprintf("request_id %q of client %q was used for a different request", c.RequestId, c.ClientId)})
	}
	r := joinAnswer(tx.showTokenKey(show), show, e)
	r.Replayed = true
	return r
}

// joinRecorded reports whether c's result r is a join's that made an
// entry, which is its record: applyOne then writes no request record.
func (tx *txn) joinRecorded(c *ledgerpb.Command, r *ledgerpb.Result) bool {
	j := c.GetJoinRoom()
	if j == nil || r.Code != ledgerpb.Code_CODE_OK || r.RoomEntry == nil {
		return false
	}
	rm := tx.m.led.rooms[j.ShowId]
	if rm == nil {
		return false
	}
	e := rm.entries[r.RoomEntry.EntryId]
	return e != nil && e.ClientId == c.ClientId && e.RequestId == c.RequestId
}

// joinOf finds the entry that client's request made, in any open room:
// at most one has it (a later request under the id is a replay). The
// rooms' order does not show, so the map is walked as it comes: a
// client has an entry in few rooms, and every command asks.
func (led *ledger) joinOf(client, request string) (string, *roomEntry) {
	for show, r := range led.rooms {
		for e := r.byClient[client]; e != nil; e = e.prev {
			if e.RequestId == request {
				return show, e
			}
		}
	}
	return "", nil
}

// recordJoins writes a request record for every join that made one of
// r's entries within the exactly-once retention, as the room closes and
// its entries, which were their records, go.
func (tx *txn) recordJoins(r *room) {
	key := tx.showTokenKey(r.rec.ShowId)
	for _, list := range [][]*roomEntry{r.line, r.open} {
		for _, e := range list {
			if e.RequestId == "" || tx.now-e.JoinedAtMs >= RequestRetentionMs {
				continue
			}
			tx.putRequest(e.ClientId, e.RequestId, &ledgerpb.RequestRecord{PayloadHash: e.PayloadHash,
				Result: joinAnswer(key, r.rec.ShowId, e), AppliedAtMs: e.JoinedAtMs})
		}
	}
}

// roomEntryResult answers a second join with the client's entry as it
// stands, its token and, while it waits, its position.
func (tx *txn) roomEntryResult(show string, r *room, e *roomEntry) *ledgerpb.Result {
	res := &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, RoomEntry: answerEntry(e.RoomEntryRecord, r.entryState(e, tx.now), true),
		RoomEntryToken: roomEntryToken(tx.showTokenKey(show), e.EntryId), RoomAdmitPerSecond: r.rec.AdmitPerSecond}
	if e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
		res.RoomPosition = r.position(e)
		res.RoomPeopleAhead = res.RoomPosition - 1
	}
	res.Message = fmt.Sprintf("entry %s in the waiting room of show %s", e.EntryId, show)
	return res
}

// answerEntry is an entry as a join's answer shows it, in state: never
// the join's record fields, and its admission only if admitted (a first
// join's answer, rebuilt for a replay, predates it).
func answerEntry(e *ledgerpb.RoomEntryRecord, state ledgerpb.RoomEntryState, admitted bool) *ledgerpb.RoomEntryRecord {
	out := &ledgerpb.RoomEntryRecord{EntryId: e.EntryId, ClientId: e.ClientId, JoinedAtMs: e.JoinedAtMs,
		Window: e.Window, Rank: e.Rank, State: state}
	if admitted {
		out.AdmittedAtMs, out.AdmissionExpiresAtMs = e.AdmittedAtMs, e.AdmissionExpiresAtMs
	}
	return out
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

// roomEntryIndex is the index of the entry that made the room entry id.
func roomEntryIndex(id string) uint64 {
	_, rest, ok := strings.Cut(id, "-")
	index, _, ok2 := strings.Cut(rest, "-")
	n, err := strconv.ParseUint(index, 10, 64)
	if !ok || !ok2 || err != nil || !strings.HasPrefix(id, "w") {
		violated("room entry id %q is not w<group>-<index>-<pos>", id)
	}
	return n
}
