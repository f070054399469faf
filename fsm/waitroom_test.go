// This file proves the waiting room's rules in the state machine: joins get
// random places within their arrival window and never ahead of an earlier
// window; a client joins once; Admit admits in place order at the room's
// rate in log time; holds need a valid admission token of their client
// while the room is open; sold out pauses admission and freed seats resume
// it; an admission expires; closing the room lifts the check; and all of it
// survives a restart with the same positions and digest.
package fsm

import (
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func cmdSetRoom(show string, open bool, rate uint32) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: "admin", RequestId: fmt.Sprintf("room-%s-%t-%d", show, open, rate),
		Op: &ledgerpb.Command_SetRoom{SetRoom: &ledgerpb.SetRoomCmd{ShowId: show, Open: open, AdmitPerSecond: rate}}}
}

func cmdJoin(client, request, show string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_JoinRoom{JoinRoom: &ledgerpb.JoinRoomCmd{ShowId: show, Seed: []byte(client + request)}}}
}

func cmdAdmit(upto int64) *ledgerpb.Command {
	return &ledgerpb.Command{Op: &ledgerpb.Command_Admit{Admit: &ledgerpb.AdmitCmd{UptoMs: upto}}}
}

func cmdHoldAdmitted(client, request, show, token string, seats ...string) *ledgerpb.Command {
	c := cmdHold(client, request, show, 0, seats...)
	c.GetHold().AdmissionToken = token
	return c
}

// roomEntry reads an entry through a view, with its token.
func readEntry(t *testing.T, m *Machine, show, id string) *RoomEntryView {
	t.Helper()
	v := m.ReadView()
	defer v.Close()
	e, err := v.RoomEntry(show, id, roomEntryToken(nil, id))
	if err != nil {
		t.Fatalf("RoomEntry(%s) = %v", id, err)
	}
	return e
}

// roomTest applies entries at increasing indexes.
type roomTest struct {
	t     *testing.T
	m     *Machine
	index uint64
}

func (rt *roomTest) apply(ms int64, cmd *ledgerpb.Command) *ledgerpb.Result {
	rt.t.Helper()
	rt.index++
	return mustApply(rt.t, rt.m, rt.index, at(ms, cmd), 1)[0]
}

func (rt *roomTest) want(ms int64, cmd *ledgerpb.Command, code ledgerpb.Code) *ledgerpb.Result {
	rt.t.Helper()
	r := rt.apply(ms, cmd)
	if r.Code != code {
		rt.t.Fatalf("%s at %d = %s, want %s", opName(cmd), ms, resultString(r), code)
	}
	return r
}

func TestWaitingRoom(t *testing.T) {
	db := newTestDB(t)
	rt := &roomTest{t: t, m: newTestMachine(t, db, 0)}
	ok := ledgerpb.Code_CODE_OK
	rt.want(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR")), ok)
	rt.want(1000, cmdJoin("c1", "j0", "s1"), ledgerpb.Code_CODE_ROOM_CLOSED)
	rt.want(1000, cmdSetRoom("s1", true, 2), ok)
	rt.want(1000, cmdHold("c1", "h1", "s1", 0, "A1"), ledgerpb.Code_CODE_ADMISSION_REQUIRED)

	// Six arrivals in window 1, one in window 2.
	ids := map[string]string{}
	var first []string
	for i := range 6 {
		c := fmt.Sprintf("c%d", i+1)
		r := rt.want(1000+int64(i)*100, cmdJoin(c, "j1", "s1"), ok)
		ids[c] = r.RoomEntry.EntryId
		first = append(first, r.RoomEntry.EntryId)
	}
	again := rt.want(1600, cmdJoin("c1", "j2", "s1"), ok)
	if again.RoomEntry.EntryId != ids["c1"] {
		t.Fatalf("second join of c1 = entry %s, want its entry %s", again.RoomEntry.EntryId, ids["c1"])
	}
	late := rt.want(2100, cmdJoin("c7", "j1", "s1"), ok)
	if late.RoomPosition != 7 {
		t.Fatalf("join of c7 in the second window = position %d, want 7 (after all of window 1)", late.RoomPosition)
	}
	positions := map[uint64]string{}
	for _, id := range first {
		e := readEntry(t, rt.m, "s1", id)
		if e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING || e.Position < 1 || e.Position > 6 || positions[e.Position] != "" {
			t.Fatalf("entry %s = %s at position %d, want a unique WAITING position in 1..6", id, e.State, e.Position)
		}
		positions[e.Position] = id
	}

	// Admission: 2/s from the opening at 1000; at 2000 two are due.
	r := rt.want(2100, cmdAdmit(2100), ok)
	if r.Admitted != 2 {
		t.Fatalf("Admit(2100) admitted %d, want 2 at 2/s from 1000 (one second of credit at most)", r.Admitted)
	}
	for p := uint64(1); p <= 6; p++ {
		e := readEntry(t, rt.m, "s1", positions[p])
		admitted := e.State == ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED
		if admitted != (p <= 2) {
			t.Fatalf("entry at place %d is %s after two admissions", p, e.State)
		}
	}
	// The admissions are on the show's change log, in place order, for
	// webhooks: entry and client, never the token.
	v, err := rt.m.View()
	if err != nil {
		t.Fatal(err)
	}
	evs, err := v.SeatEvents("s1", rt.index-1, 10)
	v.Close()
	if err != nil || len(evs) != 1 || len(evs[0].Admissions) != 2 {
		t.Fatalf("change log at the Admit entry = %+v (%v), want one record with 2 admissions", evs, err)
	}
	for i, a := range evs[0].Admissions {
		if a.EntryId != positions[uint64(i+1)] || a.ClientId == "" || a.AdmissionExpiresAtMs != 2100+RoomAdmissionTTLDefaultMs {
			t.Errorf("admission %d = %v, want entry %s (place %d) of its client, expiring at %d", i, a, positions[uint64(i+1)], i+1, 2100+RoomAdmissionTTLDefaultMs)
		}
	}
	c1 := positions[1]
	tok := admissionToken(nil, c1)
	owner := ""
	for c, id := range ids {
		if id == c1 {
			owner = c
		}
	}
	other := "c7"
	rt.want(2200, cmdHoldAdmitted(other, "h10", "s1", tok, "A1"), ledgerpb.Code_CODE_ADMISSION_REQUIRED)
	rt.want(2200, cmdHoldAdmitted(owner, "h11", "s1", "bad", "A1"), ledgerpb.Code_CODE_ADMISSION_REQUIRED)
	h := rt.want(2200, cmdHoldAdmitted(owner, "h12", "s1", tok, "A1", "A2", "A3"), ok)

	// A restart keeps every position, and the digest equals a machine
	// that applied the same log.
	before := map[string]uint64{}
	for _, id := range append(first, late.RoomEntry.EntryId) {
		before[id] = readEntry(t, rt.m, "s1", id).Position
	}
	d := mustDigest(t, rt.m)
	rt.m.reload()
	for id, p := range before {
		if got := readEntry(t, rt.m, "s1", id).Position; got != p {
			t.Fatalf("after reload entry %s at position %d, want %d", id, got, p)
		}
	}
	if got := mustDigest(t, rt.m); got != d {
		t.Fatalf("digest after reload %v, want %v", got, d)
	}

	// Sold out: the last seat goes; waiting entries read SOLD_OUT and
	// admission pauses until a seat is free again.
	tok2 := admissionToken(nil, positions[2])
	var owner2 string
	for c, id := range ids {
		if id == positions[2] {
			owner2 = c
		}
	}
	rt.want(2300, cmdHoldAdmitted(owner2, "h13", "s1", tok2, "A4"), ok)
	if r := rt.want(5000, cmdAdmit(5000), ok); r.Admitted != 0 {
		t.Fatalf("Admit of a sold-out show admitted %d", r.Admitted)
	}
	if e := readEntry(t, rt.m, "s1", positions[3]); e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_SOLD_OUT {
		t.Fatalf("waiting entry of a sold-out show reads %s, want SOLD_OUT", e.State)
	}
	rt.want(5100, cmdRelease(owner, "rel", "s1", h.HoldId), ok)
	if r := rt.want(5200, cmdAdmit(5200), ok); r.Admitted != 1 {
		t.Fatalf("Admit after seats were freed admitted %d, want 1 (one admission banked while sold out)", r.Admitted)
	}
	if e := readEntry(t, rt.m, "s1", positions[3]); e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED {
		t.Fatalf("entry at place 3 reads %s after admission resumed", e.State)
	}

	// The admission lapses after its TTL: the hold is refused and the
	// client joins again at the back.
	lapse := int64(2100 + RoomAdmissionTTLDefaultMs)
	rt.want(lapse, cmdHoldAdmitted(owner, "h14", "s1", tok, "A1"), ledgerpb.Code_CODE_ADMISSION_REQUIRED)
	if e := readEntry(t, rt.m, "s1", c1); e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_EXPIRED {
		t.Fatalf("entry %s after its TTL reads %s, want EXPIRED", c1, e.State)
	}
	re := rt.want(lapse, cmdJoin(owner, "j3", "s1"), ok)
	if re.RoomEntry.EntryId == c1 || re.RoomEntry.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_WAITING {
		t.Fatalf("rejoin after expiry = %s, want a new WAITING entry", resultString(re))
	}

	// Closing lifts the check; entries read CLOSED.
	rt.want(lapse+1, cmdSetRoom("s1", false, 0), ok)
	rt.want(lapse+1, cmdHold("c9", "h1", "s1", 0, "A1"), ok)
	if e := readEntry(t, rt.m, "s1", positions[4]); e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_CLOSED {
		t.Fatalf("entry of a closed room reads %s, want CLOSED", e.State)
	}
}

// TestWaitingRoomRate: over 60 s of Admit entries every 100 ms of log time,
// a room admits its rate times 60, within one admission.
func TestWaitingRoomRate(t *testing.T) {
	rt := &roomTest{t: t, m: newTestMachine(t, newTestDB(t), 0)}
	ok := ledgerpb.Code_CODE_OK
	rt.want(0, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR")), ok)
	rt.want(0, cmdSetRoom("s1", true, 37), ok)
	var joins []*ledgerpb.Command
	for i := range 3000 {
		joins = append(joins, cmdJoin(fmt.Sprintf("c%d", i), "j", "s1"))
	}
	rt.index++
	mustApply(t, rt.m, rt.index, at(0, cmdBatch(joins...)), len(joins))
	total := 0
	for ms := int64(1000); ms <= 61000; ms += 100 {
		total += int(rt.want(ms, cmdAdmit(ms), ok).Admitted)
	}
	// Credit runs from the opening at 0; window 0 closes at 1000, with
	// one second of credit (the cap) waiting for it.
	if want := 37 * 61; total < want-1 || total > want {
		t.Fatalf("admitted %d over 61 s at 37/s, want %d", total, want)
	}
}

// TestWaitingRoomWindows: every entry of an earlier window is placed, and
// admitted, before any of a later one, and arrival order within a window
// does not decide the place.
func TestWaitingRoomWindows(t *testing.T) {
	rt := &roomTest{t: t, m: newTestMachine(t, newTestDB(t), 0)}
	ok := ledgerpb.Code_CODE_OK
	rt.want(0, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR")), ok)
	rt.want(0, cmdSetRoom("s1", true, 1000), ok)
	var arrivals []string
	for w := range 3 {
		for i := range 50 {
			r := rt.want(int64(w*1000+i*10), cmdJoin(fmt.Sprintf("c%d-%d", w, i), "j", "s1"), ok)
			arrivals = append(arrivals, r.RoomEntry.EntryId)
		}
	}
	rt.want(3500, cmdAdmit(3500), ok)
	var byPlace []string
	rt.m.mu.RLock()
	for _, e := range rt.m.led.rooms["s1"].line {
		byPlace = append(byPlace, e.EntryId)
	}
	rt.m.mu.RUnlock()
	if len(byPlace) != 150 {
		t.Fatalf("placed %d entries, want 150", len(byPlace))
	}
	for w := range 3 {
		got := slices.Clone(byPlace[w*50 : w*50+50])
		want := slices.Clone(arrivals[w*50 : w*50+50])
		if slices.Equal(got, want) {
			t.Fatalf("window %d placed in arrival order", w)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Fatalf("places %d..%d hold entries of another window", w*50+1, w*50+50)
		}
	}
	if e := readEntry(t, rt.m, "s1", byPlace[149]); e.State != ledgerpb.RoomEntryState_ROOM_ENTRY_STATE_ADMITTED {
		t.Fatalf("last entry reads %s after 3.5 s at 1000/s", e.State)
	}
}

// TestJoinReplay: a join retried with the same request id returns the
// first result, whatever seed the retry carries.
func TestJoinReplay(t *testing.T) {
	rt := &roomTest{t: t, m: newTestMachine(t, newTestDB(t), 0)}
	ok := ledgerpb.Code_CODE_OK
	rt.want(0, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR")), ok)
	rt.want(0, cmdSetRoom("s1", true, 10), ok)
	first := rt.want(10, cmdJoin("c1", "j", "s1"), ok)
	retry := cmdJoin("c1", "j", "s1")
	retry.GetJoinRoom().Seed = []byte("other bytes")
	again := rt.want(20, retry, ok)
	if !again.Replayed || !proto.Equal(again.RoomEntry, first.RoomEntry) {
		t.Fatalf("retried join = %s, want the replay of %s", resultString(again), resultString(first))
	}
}
