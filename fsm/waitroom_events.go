package fsm

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// eventRoomField is SeatEventRecord.room.
const eventRoomField protowire.Number = 50

// roomChanged puts the room's state (nil: closed) on the show's change log
// at the entry being applied, so watchers learn it and resume it like seat
// changes. Every field is written, zeros too: a record with two room
// changes (a batch that sets a room twice) decodes as the last, whole.
func (tx *txn) roomChanged(show string, r *room) {
	ev := &ledgerpb.RoomEvent{}
	if r != nil {
		ev = &ledgerpb.RoomEvent{Open: true, AdmitPerSecond: r.rec.AdmitPerSecond, SoldOut: r.rec.SoldOut,
			AdmittedThrough: r.admittedThrough(), Waiting: uint64(r.waiting()), Admitted: uint64(r.head)}
	}
	var body []byte
	body = appendBoolField(body, 1, ev.Open)
	body = appendVarintField(body, 2, uint64(ev.AdmitPerSecond))
	body = appendBoolField(body, 3, ev.SoldOut)
	body = appendVarintField(body, 4, ev.AdmittedThrough)
	body = appendVarintField(body, 5, ev.Waiting)
	body = appendVarintField(body, 6, ev.Admitted)
	sc := tx.changesOf(show)
	b := protowire.AppendTag(sc.changes, eventRoomField, protowire.BytesType)
	sc.changes = protowire.AppendBytes(b, body)
}

func appendVarintField(b []byte, n protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(b, n, protowire.VarintType), v)
}

func appendBoolField(b []byte, n protowire.Number, v bool) []byte {
	return appendVarintField(b, n, protowire.EncodeBool(v))
}
