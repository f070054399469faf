package fsm

import (
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Field numbers of SeatEventRecord.room and .admissions, and of
// RoomAdmission.
const (
	eventRoomField       protowire.Number = 50
	eventAdmissionsField protowire.Number = 51
	admEntryField        protowire.Number = 1
	admClientField       protowire.Number = 2
	admExpiresField      protowire.Number = 3
)

// entryAdmitted puts an admission on the show's change log at the entry
// being applied, for webhooks (room.admitted); never its token.
func (tx *txn) entryAdmitted(show string, e *ledgerpb.RoomEntryRecord) {
	size := sizeString(admEntryField, e.EntryId) + sizeString(admClientField, e.ClientId)
	if e.AdmissionExpiresAtMs != 0 {
		size += protowire.SizeTag(admExpiresField) + protowire.SizeVarint(uint64(e.AdmissionExpiresAtMs))
	}
	sc := tx.changesOf(show)
	b := protowire.AppendTag(sc.changes, eventAdmissionsField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = appendString(b, admEntryField, e.EntryId)
	b = appendString(b, admClientField, e.ClientId)
	if e.AdmissionExpiresAtMs != 0 {
		b = appendVarintField(b, admExpiresField, uint64(e.AdmissionExpiresAtMs))
	}
	sc.changes = b
}

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

func appendBoolField(b []byte, n protowire.Number, v bool) []byte {
	return appendVarintField(b, n, protowire.EncodeBool(v))
}
