// This file proves the room check finds what a broken waiting room would
// do: a hold acknowledged without admission or with another client's, a
// lost join, two entries on one place, an admission out of place order,
// admissions faster than the rate; and that a correct room passes.
package checker

import (
	"strings"
	"testing"

	"github.com/seatledger/seatledger/jepsen/history"
)

// goodRoom is a correct room at 2/s: fans a and b joined, were placed 1
// and 2, admitted 500 ms apart; a held with its token; c waits at place 3.
func goodRoom() *history.History {
	ops := []history.Op{
		{ID: 0, Kind: history.KindJoin, Show: "r", ClientID: "a", Outcome: history.OK, RoomEntryID: "e1", RoomToken: "t1"},
		{ID: 1, Kind: history.KindJoin, Show: "r", ClientID: "b", Outcome: history.OK, RoomEntryID: "e2", RoomToken: "t2"},
		{ID: 2, Kind: history.KindJoin, Show: "r", ClientID: "c", Outcome: history.OK, RoomEntryID: "e3", RoomToken: "t3"},
		{ID: 3, Kind: history.KindRoomEntry, Show: "r", Outcome: history.OK, RoomEntryID: "e1", RoomState: "ADMITTED",
			AdmissionToken: "adm1", AdmittedAtMs: 1000, AdmissionExpiresAtMs: 121000},
		{ID: 4, Kind: history.KindRoomHold, Show: "r", ClientID: "a", Outcome: history.OK, AdmissionToken: "adm1", AppliedAtMs: 1200, RoomHoldID: "h1"},
		{ID: 5, Kind: history.KindRoomHold, Show: "r", ClientID: "b", Outcome: history.Fail, Reason: "ADMISSION_REQUIRED"},
	}
	final := &history.Final{Rooms: map[string]history.FinalRoom{"r": {AdmitPerSecond: 2, Entries: map[string]history.FinalRoomEntry{
		"e1": {Client: "a", Found: true, State: "ADMITTED", Place: 1, AdmittedAtMs: 1000},
		"e2": {Client: "b", Found: true, State: "ADMITTED", Place: 2, AdmittedAtMs: 1500},
		"e3": {Client: "c", Found: true, State: "WAITING", Place: 3},
	}}}}
	return &history.History{Ops: ops, Final: final}
}

func TestCheckRooms(t *testing.T) {
	cases := []struct {
		name  string
		spoil func(h *history.History)
		want  string // in a violation; "" for none
	}{
		{"correct", func(*history.History) {}, ""},
		{"hold without admission", func(h *history.History) { h.Ops[5].Outcome, h.Ops[5].Reason = history.OK, "" }, "without an admission token"},
		{"hold with another's admission", func(h *history.History) { h.Ops[4].ClientID = "b" }, "no read gave that client"},
		{"hold after the admission lapsed", func(h *history.History) { h.Ops[4].AppliedAtMs = 121000 }, "outside its admission"},
		{"lost join", func(h *history.History) { delete(h.Final.Rooms["r"].Entries, "e3") }, "is gone at the end"},
		{"shared place", func(h *history.History) {
			e := h.Final.Rooms["r"].Entries["e3"]
			e.Place = 2
			h.Final.Rooms["r"].Entries["e3"] = e
		}, "share place"},
		{"admitted past a waiter", func(h *history.History) {
			e := h.Final.Rooms["r"].Entries["e2"]
			e.State, e.AdmittedAtMs = "WAITING", 0
			h.Final.Rooms["r"].Entries["e2"] = e
			e = h.Final.Rooms["r"].Entries["e3"]
			e.State, e.AdmittedAtMs = "ADMITTED", 1500
			h.Final.Rooms["r"].Entries["e3"] = e
		}, "still waits"},
		{"faster than the rate", func(h *history.History) {
			r := h.Final.Rooms["r"]
			r.AdmitPerSecond = 1
			e := r.Entries["e3"]
			e.State, e.AdmittedAtMs = "ADMITTED", 1500
			r.Entries["e3"] = e
			h.Final.Rooms["r"] = r
		}, "admissions between"},
	}
	for _, c := range cases {
		h := goodRoom()
		c.spoil(h)
		rep := newReporter()
		checkRooms(h, rep)
		r := rep.finish()
		var got []string
		for _, v := range r.Violations {
			got = append(got, v.Msg)
		}
		all := strings.Join(got, "; ")
		if c.want == "" && len(got) > 0 {
			t.Errorf("%s: violations %s, want none", c.name, all)
		}
		if c.want != "" && !strings.Contains(all, c.want) {
			t.Errorf("%s: violations %q, want one saying %q", c.name, all, c.want)
		}
	}
}
