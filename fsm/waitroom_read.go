package fsm

import (
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// RoomView is a show's waiting room as a read sees it.
type RoomView struct {
	Open                    bool
	AdmitPerSecond          uint32
	AdmissionTTLMs          int64
	SoldOut                 bool
	Waiting, Admitted       uint64
	Joined, AdmittedThrough uint64
	// The room opens by itself at AutoOpenAdmitPerSecond once
	// AutoOpenArrivalsPerSecond holds arrive within a second (0: not
	// armed); read whether the room is open or not.
	AutoOpenArrivalsPerSecond, AutoOpenAdmitPerSecond uint32
}

// RoomEntryView is an entry as a read sees it: its state by the view's
// clock and, while it waits, its position; once admitted, its token.
type RoomEntryView struct {
	Entry *ledgerpb.RoomEntryRecord
	State ledgerpb.RoomEntryState
	// Position (1 = next) among the waiting, while WAITING or SOLD_OUT,
	// and its place once its window closed (0 before).
	Position, Place uint64
	// AdmitPerSecond is the room's rate, for the estimated wait.
	AdmitPerSecond uint32
	// AdmissionToken while ADMITTED.
	AdmissionToken string
}

// inRooms runs fn on the group's rooms between apply batches. A view
// without a snapshot moves to the ledger's point (inLedger); one with a
// snapshot reads the ledger as it is now, which is as fresh.
func (v *View) inRooms(fn func(led *ledger)) {
	if v.snap == nil {
		v.inLedger(fn)
		return
	}
	v.m.mu.RLock()
	defer v.m.mu.RUnlock()
	fn(&v.m.led)
}

// Room reads show's waiting room; Open is false when it has none.
// ErrNotFound when the show does not exist.
func (v *View) Room(show string) (*RoomView, error) {
	var out *RoomView
	v.inRooms(func(led *ledger) {
		if led.shows[show] == nil {
			return
		}
		out = &RoomView{}
		if r := led.rooms[show]; r != nil {
			*out = RoomView{Open: true, AdmitPerSecond: r.rec.AdmitPerSecond, AdmissionTTLMs: r.rec.AdmissionTtlMs,
				SoldOut: r.rec.SoldOut, Waiting: uint64(r.waiting()), Admitted: uint64(r.head),
				Joined: uint64(len(r.entries)), AdmittedThrough: r.admittedThrough()}
		}
		if a := led.roomAuto[show]; a != nil {
			out.AutoOpenArrivalsPerSecond, out.AutoOpenAdmitPerSecond = a.ArrivalsPerSecond, a.AdmitPerSecond
		}
	})
	if out == nil {
		return nil, ErrNotFound
	}
	return out, nil
}

// RoomEntry reads an entry of show's room for the holder of its token.
// A closed room has no entries: an entry of it reads CLOSED if the token
// is the entry's (the token is the show's key over the id, so it is
// checked without the entry). ErrNotFound for an unknown show or entry,
// ErrBadToken for another entry's token.
func (v *View) RoomEntry(show, entryID, token string) (*RoomEntryView, error) {
	var out *RoomEntryView
	err := ErrNotFound
	v.inRooms(func(led *ledger) {
		s := led.shows[show]
		if s == nil {
			return
		}
		if !hmacEqualString(roomEntryToken(s.l.tokenKey, entryID), token) {
			err = ErrBadToken
			return
		}
		r := led.rooms[show]
		if r == nil {
			out, err = &RoomEntryView{Entry: &ledgerpb.RoomEntryRecord{EntryId: entryID}, State: ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_CLOSED}, nil
			return
		}
		e := r.entries[entryID]
		if e == nil {
			return
		}
		out, err = &RoomEntryView{Entry: cloneOf(e.RoomEntryRecord), State: r.entryState(e, v.clock), AdmitPerSecond: r.rec.AdmitPerSecond}, nil
		out.Place = e.place
		switch e.State {
		case ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING:
			out.Position = r.position(e)
		case ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED:
			if out.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED {
				out.AdmissionToken = admissionToken(s.l.tokenKey, entryID)
			}
		}
	})
	return out, err
}

// RoomsWaiting reports whether an open room of the group has an entry
// waiting, so the leader's admission driver proposes Admit entries only
// then.
func (m *Machine) RoomsWaiting() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for _, r := range m.led.rooms {
		if r.waiting() > 0 {
			return true
		}
	}
	return false
}
