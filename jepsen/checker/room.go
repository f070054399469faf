package checker

import (
	"fmt"
	"sort"

	"github.com/seatledger/seatledger/jepsen/history"
)

// CheckRoom judges the waiting room (issue 18) from its ops and the final
// reads of its entries:
//
//   - nothing lost: every acknowledged join's entry is there at the end,
//     and every admission a read saw is there with the same time;
//   - places are unique;
//   - admissions follow place order: the admitted entries are the lowest
//     places, admitted in place order;
//   - the rate is kept: no span of admissions is faster than the room's
//     rate, with one second of credit and one admission of slack (the
//     state machine banks at most a second of admissions);
//   - no hold without admission: every acknowledged hold of the room's
//     show carried the admission token a read gave its client, and was
//     applied while that admission was valid.
const CheckRoom = "room"

// roomCreditMs is the admission credit the state machine may bank
// (fsm/admit.go): a burst of one second's admissions is allowed.
const roomCreditMs = 1000

func checkRooms(h *history.History, rep *reporter) {
	var ops []*history.Op
	for i := range h.Ops {
		if h.Ops[i].Kind.Room() {
			ops = append(ops, &h.Ops[i])
		}
	}
	if len(ops) == 0 {
		rep.skipped[CheckRoom] = "no waiting room ops"
		return
	}
	admitted := checkRoomHolds(ops, rep)
	if h.Final == nil || h.Final.Rooms == nil {
		rep.notes[CheckRoom] = "history only: no final reads of the room"
		return
	}
	for _, show := range sortedRoomShows(h.Final.Rooms) {
		room := h.Final.Rooms[show]
		checkRoomLost(show, ops, admitted, room, rep)
		checkRoomOrder(show, room, rep)
	}
	rep.notes[CheckRoom] = fmt.Sprintf("%d room ops, %d entries read back", len(ops), roomEntries(h.Final.Rooms))
}

// checkRoomHolds checks every acknowledged hold of a room against the
// admissions reads gave its client; it returns those admissions by entry.
func checkRoomHolds(ops []*history.Op, rep *reporter) map[string]*history.Op {
	admitted := map[string]*history.Op{} // entry -> a read that saw it ADMITTED
	byToken := map[string]*history.Op{}
	joiner := map[string]string{} // entry -> the client whose join made it (reads carry no client)
	for _, op := range ops {
		if op.Kind == history.KindJoin && op.RoomEntryID != "" {
			joiner[op.RoomEntryID] = op.ClientID
		}
		if op.Kind == history.KindRoomEntry && op.Outcome == history.OK && op.RoomState == "ADMITTED" {
			admitted[op.RoomEntryID] = op
			byToken[op.AdmissionToken] = op
		}
	}
	for _, op := range ops {
		if op.Kind != history.KindRoomHold || op.Outcome != history.OK {
			continue
		}
		a := byToken[op.AdmissionToken]
		switch {
		case op.AdmissionToken == "":
			rep.violation(CheckRoom, op.Show, []int{op.ID}, "hold %s of %s was acknowledged without an admission token while the room was open", op.RoomHoldID, op.ClientID)
		case a == nil || joiner[a.RoomEntryID] != op.ClientID:
			rep.violation(CheckRoom, op.Show, []int{op.ID}, "hold %s of %s was acknowledged with an admission token no read gave that client", op.RoomHoldID, op.ClientID)
		case op.AppliedAtMs != 0 && (op.AppliedAtMs < a.AdmittedAtMs || op.AppliedAtMs >= a.AdmissionExpiresAtMs):
			rep.violation(CheckRoom, op.Show, []int{a.ID, op.ID}, "hold %s applied at %d, outside its admission [%d, %d)", op.RoomHoldID, op.AppliedAtMs, a.AdmittedAtMs, a.AdmissionExpiresAtMs)
		}
	}
	return admitted
}

// checkRoomLost: every acknowledged join's entry survives, and every
// admission a read saw survives with its time.
func checkRoomLost(show string, ops []*history.Op, admitted map[string]*history.Op, room history.FinalRoom, rep *reporter) {
	for _, op := range ops {
		if op.Show != show || op.Kind != history.KindJoin || op.Outcome != history.OK {
			continue
		}
		if e, ok := room.Entries[op.RoomEntryID]; !ok || !e.Found {
			rep.violation(CheckRoom, show, []int{op.ID}, "acknowledged join %s of %s is gone at the end", op.RoomEntryID, op.ClientID)
		}
	}
	for id, a := range admitted {
		if a.Show != show {
			continue
		}
		e := room.Entries[id]
		if !e.Found || e.AdmittedAtMs != a.AdmittedAtMs {
			rep.violation(CheckRoom, show, []int{a.ID}, "entry %s was read admitted at %d, and is %s admitted at %d at the end", id, a.AdmittedAtMs, e.State, e.AdmittedAtMs)
		}
	}
}

// checkRoomOrder: places unique, admissions a prefix of the places in
// place order, and no span faster than the rate allows.
func checkRoomOrder(show string, room history.FinalRoom, rep *reporter) {
	type entry struct {
		id string
		history.FinalRoomEntry
	}
	var placed []entry
	seen := map[uint64]string{}
	for id, e := range room.Entries {
		if !e.Found || e.Place == 0 {
			continue
		}
		if o, dup := seen[e.Place]; dup {
			rep.violation(CheckRoom, show, nil, "entries %s and %s share place %d", o, id, e.Place)
		}
		seen[e.Place] = id
		placed = append(placed, entry{id, e})
	}
	sort.Slice(placed, func(i, j int) bool { return placed[i].Place < placed[j].Place })
	var times []int64
	waiting := ""
	for _, e := range placed {
		if e.AdmittedAtMs == 0 {
			if waiting == "" {
				waiting = e.id
			}
			continue
		}
		if waiting != "" {
			rep.violation(CheckRoom, show, nil, "entry %s (place %d) was admitted while %s, placed before it, still waits", e.id, e.Place, waiting)
		}
		if n := len(times); n > 0 && e.AdmittedAtMs < times[n-1] {
			rep.violation(CheckRoom, show, nil, "entry %s (place %d) was admitted at %d, before a lower place (at %d)", e.id, e.Place, e.AdmittedAtMs, times[n-1])
		}
		times = append(times, e.AdmittedAtMs)
	}
	rate := int64(room.AdmitPerSecond)
	if rate == 0 {
		return
	}
	for j := range times {
		for i := 0; i < j; i++ {
			n := int64(j - i + 1)
			if allowed := rate*(times[j]-times[i]+roomCreditMs)/1000 + 1; n > allowed {
				rep.violation(CheckRoom, show, nil, "%d admissions between %d and %d, more than %d at %d/s", n, times[i], times[j], allowed, rate)
				return
			}
		}
	}
}

func sortedRoomShows(m map[string]history.FinalRoom) []string {
	out := make([]string, 0, len(m))
	for s := range m {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func roomEntries(m map[string]history.FinalRoom) int {
	n := 0
	for _, r := range m {
		n += len(r.Entries)
	}
	return n
}

// withoutRooms is h without the room's ops, which the booking model does
// not judge (checkRooms does).
func withoutRooms(h *history.History) *history.History {
	out := *h
	out.Ops = nil
	for _, op := range h.Ops {
		if !op.Kind.Room() {
			out.Ops = append(out.Ops, op)
		}
	}
	return &out
}
