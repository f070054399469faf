package fsm

import (
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// setRoom opens a show's waiting room at a rate, changes the rate of an
// open one (its entries and credit stay), or closes it: the room and every
// entry go, and holds in the show need no admission. Closing a closed room,
// or opening an open one at its rate, succeeds again. Either way it arms
// the room to open by itself at c's threshold, or disarms it (roomauto.go).
func (tx *txn) setRoom(c *ledgerpb.SetRoomCmd) *ledgerpb.Result {
	if tx.layout(c.ShowId) == nil {
		return reject(ledgerpb.Code_CODE_SHOW_NOT_FOUND, "show %s does not exist", c.ShowId)
	}
	ttl := c.AdmissionTtlMs
	if ttl == 0 {
		ttl = RoomAdmissionTTLDefaultMs
	}
	auto := tx.arm(c, ttl)
	r := tx.room(c.ShowId)
	if !c.Open {
		if r != nil {
			tx.recordJoins(r)
			tx.del(tx.m.roomKey(c.ShowId))
			p := tx.m.roomEntryPrefix(c.ShowId)
			tx.deleteRange(p, prefixEnd(p))
			delete(tx.m.led.rooms, c.ShowId)
			tx.roomChanged(c.ShowId, nil)
		}
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, RoomAuto: auto}
	}
	r = tx.openRoom(c.ShowId, c.AdmitPerSecond, ttl)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Room: cloneOf(r.rec), RoomAuto: auto}
}
