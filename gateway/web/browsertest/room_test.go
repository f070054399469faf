package browsertest

// testWaitingRoom: three fans open a hot show whose waiting room is open;
// each page shows its place in line instead of the seat map; a reload
// keeps the fan's place (the same entry); a hold without admission is
// refused (403 ADMISSION_REQUIRED); as the room admits them, each page
// moves on to the seat map by itself, and each fan holds a seat with the
// admission token the page carries.

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// inRoom is a page expression: the page shows the fan's place in line.
const inRoom = `!document.getElementById("room").hidden && document.getElementById("room-pos").textContent.includes("in line")`

// roomEntry is a page expression: the fan's stored entry id of show hot.
const roomEntry = `(JSON.parse(localStorage.getItem("seatledger.room") || "{}").hot || {}).entry_id || ""`

func testWaitingRoom(t *testing.T, b *browser, s *seatd) {
	s.api(t, "POST", "/v1/shows", map[string]any{"show": map[string]any{
		"show_id": "hot", "title": "A premiere",
		"rows":       []map[string]any{{"name": "A", "seats": 6, "category": "std"}},
		"categories": []map[string]any{{"name": "std", "price_minor": 900, "currency": "EUR"}},
	}}, 200, nil)
	s.api(t, "POST", "/v1/admin/shows/hot/waiting_room", map[string]any{"open": true, "admit_per_second": 1}, 200, nil)
	fans := []*fan{b.newFan(t, "A"), b.newFan(t, "B"), b.newFan(t, "C")}
	for _, f := range fans {
		f.open(s.base + "/#/show/hot")
		f.waitFor(f.name+" waits in the room", inRoom)
	}
	fans[0].shot("20-a-in-the-waiting-room")

	// A reload keeps C's place: the same entry, still in line.
	c := fans[2]
	before := eval[string](c, roomEntry)
	if before == "" {
		t.Fatal("C's page stored no room entry")
	}
	c.open(s.base + "/#/show/hot")
	c.waitFor("C waits in the room after a reload", inRoom+` || document.getElementById("room").hidden`)
	if after := eval[string](c, roomEntry); after != before {
		t.Fatalf("after a reload C's entry is %q, was %q", after, before)
	}

	// Holding without admission is refused, with the way to join.
	s.api(t, "POST", "/v1/shows/hot/holds", map[string]any{"seat_ids": []string{"A1"}, "client_id": "nobody", "request_id": "r1"}, 403, nil)

	// The room admits one fan a second: each page moves on to the seats by
	// itself, and the hold carries the admission token.
	for i, f := range fans {
		seatID := []string{"A1", "A3", "A5"}[i]
		f.waitFor(f.name+" is admitted to the seat map", `document.getElementById("room").hidden && `+showOpen)
		f.do(f.name+" holds "+seatID, chromedp.Click(seat(seatID)), chromedp.Click(chromedp.ID("hold-btn")))
		f.waitFor(f.name+" holds "+seatID, seatsAre("s-mine", seatID))
	}
	fans[2].shot("21-c-admitted-and-holding")
	s.api(t, "POST", "/v1/admin/shows/hot/waiting_room", map[string]any{"open": false}, 200, nil)
}
