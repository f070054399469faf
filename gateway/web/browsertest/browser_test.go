// This file proves, in a real browser against a real `seatd dev` cluster,
// that the booking and operator pages work for people:
//
//   - a fan who runs `seatd dev` and opens the URL it prints can browse
//     city → movie → cinema → show and see the seat map;
//   - two fans on the same show see each other's holds and bookings live
//     (Server-Sent Events), without reloading;
//   - a fan who asks for a seat someone else holds is told so in plain words
//     with the ledger's best alternatives, which one click holds;
//   - a fan pays (simulated), confirms, and gets tickets with QR codes;
//   - a confirm whose answer is lost (503 OUTCOME_UNKNOWN after the ledger
//     applied it) is retried by the page with the same request_id and
//     books once;
//   - a hold with a short TTL expires: its holder is told, and the other
//     fan sees the seats come back;
//   - a fan who finds a show sold out joins the waiting line, sees their
//     place, and is offered the seats live when they free up;
//   - a fan whose connection drops resumes the live map from the last
//     revision seen (no new snapshot, no reload) and misses no change;
//   - the operator page shows nodes, groups, leaders and per-show
//     counters, and notices a leader change;
//   - a show opened by a direct link names its movie, cinema and time, and
//     at phone width (390 px) no page scrolls sideways and the seat map
//     shows every row letter (phone_test.go).
//
// Screenshots of the key states are saved in the directory the test logs
// (go test -v), $SEATLEDGER_SCREENSHOTS if set.
package browsertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// seatsAre is a page expression: every seat in ids is drawn in state cls
// (s-free, s-selected, s-mine, s-held, s-booked).
func seatsAre(cls string, ids ...string) string {
	return fmt.Sprintf(`%q.split(",").every((id) => {
		const b = document.querySelector('#map [data-seat="' + id + '"]');
		return b && b.classList.contains(%q);
	})`, strings.Join(ids, ","), cls)
}

func seat(id string) chromedp.CSS { return chromedp.CSS(fmt.Sprintf(`#map [data-seat=%q]`, id)) }

// noticeHas is a page expression: the notice is shown and contains text.
func noticeHas(text string) string {
	return fmt.Sprintf(`!document.getElementById("notice").hidden && document.getElementById("notice").textContent.includes(%q)`, text)
}

// showOpen is a page expression: the show's map came from the live stream.
const showOpen = `Number(document.getElementById("map").dataset.snapshots) >= 1 && document.getElementById("live").dataset.state === "live"`

// markPage and samePage tell whether a page was reloaded in between.
const (
	markPage = `window.__sameDocument = true`
	samePage = `window.__sameDocument === true`
)

func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests start a cluster and Chromium: not in -short")
	}
	b := startBrowser(t)
	s := startSeatd(t)
	start := time.Now()
	t.Run("LiveHoldConflictConfirm", func(t *testing.T) { testLiveHoldConflictConfirm(t, b, s) })
	t.Run("UnknownOutcomeRetried", func(t *testing.T) { testUnknownOutcomeRetried(t, b, s) })
	t.Run("HoldExpires", func(t *testing.T) { testHoldExpires(t, b, s) })
	t.Run("SoldOutQueueOffer", func(t *testing.T) { testSoldOutQueueOffer(t, b, s) })
	t.Run("ResumeAfterDrop", func(t *testing.T) { testResumeAfterDrop(t, b, s) })
	t.Run("Operator", func(t *testing.T) { testOperator(t, b, s) })
	t.Run("CrossOrigin", func(t *testing.T) { testCrossOrigin(t, b, s) })
	t.Run("PhoneDirectLink", func(t *testing.T) { testPhoneDirectLink(t, b, s) })
	t.Run("WaitingRoom", func(t *testing.T) { testWaitingRoom(t, b, s) }) // room_test.go
	t.Logf("browser scenarios took %v", time.Since(start).Round(time.Millisecond))
}

// browseToShow takes a fan from the front page to a Dune show at the Grand
// Rex by clicking, and returns the show id.
func browseToShow(f *fan, base string) string {
	f.open(base + "/")
	for _, href := range []string{"#/city/paris", "#/city/paris/movie/dune-part-two", "#/city/paris/movie/dune-part-two/cinema/le-grand-rex"} {
		f.do("click "+href, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#browse-list a[href=%q]`, href))))
	}
	f.waitFor("the cinema lists its shows", `document.querySelector('#browse-list a[href^="#/show/"]') !== null`)
	f.shot("01-a-browse-shows")
	f.do("open the first show", chromedp.Click(chromedp.CSS(`#browse-list a[href^="#/show/"]`)))
	f.waitFor("the show is live", showOpen)
	hash := eval[string](f, `location.hash`)
	id, ok := strings.CutPrefix(hash, "#/show/")
	if !ok || id == "" {
		f.t.Fatalf("after opening a show the page is at %q", hash)
	}
	if got := f.text("#show-title"); got != "Dune: Part Two" {
		f.t.Errorf("show title = %q, want Dune: Part Two", got)
	}
	return id
}

func testLiveHoldConflictConfirm(t *testing.T, b *browser, s *seatd) {
	a, bob := b.newFan(t, "A"), b.newFan(t, "B")
	show := browseToShow(a, s.base)
	bob.open(s.base + "/#/show/" + show)
	bob.waitFor("B's map is live", showOpen)
	eval[bool](bob, markPage)

	// A picks E10 with the mouse and E11 with the keyboard (the arrow
	// keys move along the map), and holds them.
	a.do("pick E10 and E11", chromedp.Click(seat("E10")), chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent("\r"))
	a.waitFor("E10, E11 are chosen", seatsAre("s-selected", "E10", "E11"))
	if got := a.text("#hold-btn"); got != "Hold 2 seats" {
		t.Errorf("A's hold button says %q, want Hold 2 seats", got)
	}
	a.do("hold", chromedp.Click(chromedp.ID("hold-btn")))
	a.waitFor("A holds E10, E11", seatsAre("s-mine", "E10", "E11")+` && document.querySelector("#holds .hold .left").textContent !== ""`)
	a.shot("02-a-holds-two-seats")

	// B sees them held without reloading.
	bob.waitFor("B sees E10, E11 held", seatsAre("s-held", "E10", "E11"))
	bob.shot("03-b-sees-them-held")

	// B asks for E10 anyway: a plain conflict message and alternatives.
	bob.do("click A's seat E10", chromedp.Click(seat("E10")))
	bob.waitFor("B is told E10 is taken", noticeHas("E10 was just taken by someone else"))
	alt := bob.text("#notice .actions button")
	if !strings.HasPrefix(alt, "Hold ") || !strings.HasSuffix(alt, " instead") {
		t.Fatalf("B's conflict notice offers %q, want a button Hold <seats> instead", alt)
	}
	if n := eval[int](bob, `document.querySelectorAll("#map .seat.suggested").length`); n != 1 {
		t.Errorf("B's map marks %d suggested seats, want 1", n)
	}
	bob.shot("04-b-conflict-with-alternatives")

	// A pays and confirms; A gets tickets with QR codes.
	a.do("pay", chromedp.Click(chromedp.CSS("#holds .pay-btn")),
		chromedp.SendKeys(chromedp.CSS(`#holds form input[name="name"]`), "Alice Fan"),
		chromedp.Click(chromedp.CSS("#holds .confirm-btn")))
	a.waitFor("A is booked", noticeHas("Booked!")+` && `+seatsAre("s-booked", "E10", "E11"))
	if msg := a.text("#notice"); !strings.Contains(msg, "payment sim-") {
		t.Errorf("A's confirmation %q does not name the payment reference", msg)
	}
	a.waitFor("A's two QR codes load", `(() => {
		const imgs = [...document.querySelectorAll("#booked .ticket img")];
		return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth > 0);
	})()`)
	a.shot("05-a-booked-with-tickets")

	// B sees them booked, live, and takes the alternative in one click.
	bob.waitFor("B sees E10, E11 booked", seatsAre("s-booked", "E10", "E11"))
	bob.do("hold the alternative", chromedp.Click(chromedp.CSS("#notice .actions button")))
	bob.waitFor("B holds the alternative", `document.querySelectorAll("#map .seat.s-mine").length === 1`)
	if !eval[bool](bob, samePage) {
		t.Error("B's page was reloaded; the map must update in place")
	}
	bob.shot("06-b-sees-booked-and-holds-alternative")
	a.waitFor("A sees B's seat held", `document.querySelectorAll("#map .seat.s-held").length === 1`)
}

// lostAnswer is the body of a 503 OUTCOME_UNKNOWN, as the gateway writes it.
const lostAnswer = `{"code":14,"message":"the outcome is unknown: retry with the same request_id","details":[` +
	`{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"OUTCOME_UNKNOWN","domain":"seatledger","metadata":{}}]}`

// loseFirstAnswer makes the browser lose the answer to the first request
// whose URL matches pattern: the request reaches the server, which applies
// it, and the page gets a 503 OUTCOME_UNKNOWN instead of the answer. It
// returns the bodies of every matching request, as they are sent.
func loseFirstAnswer(f *fan, pattern string) func() []string {
	var mu sync.Mutex
	var bodies []string
	f.do("intercept "+pattern, chromedp.Func(func(ctx context.Context, tgt *chromedp.Target) error {
		paused := cdp.Events(f.ctx, tgt, fetch.RequestPaused)
		go func() {
			for ev, err := range paused {
				if err != nil {
					return
				}
				var body strings.Builder
				for _, e := range ev.Request.PostDataEntries {
					body.Write(e.Bytes)
				}
				mu.Lock()
				bodies = append(bodies, body.String())
				first := len(bodies) == 1
				mu.Unlock()
				if first {
					cdp.Call(f.ctx, tgt, fetch.FulfillRequest, fetch.FulfillRequestParams{RequestID: ev.RequestID, ResponseCode: 503,
						ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: "application/json"}, {Name: "Retry-After", Value: "1"}},
						Body:            []byte(lostAnswer)})
					continue
				}
				cdp.Call(f.ctx, tgt, fetch.ContinueResponse, fetch.ContinueResponseParams{RequestID: ev.RequestID})
			}
		}()
		_, err := cdp.Call(ctx, tgt, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{
			{URLPattern: pattern, RequestStage: fetch.RequestStageResponse}}})
		return err
	}))
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}

func testUnknownOutcomeRetried(t *testing.T, b *browser, s *seatd) {
	a := b.newFan(t, "A")
	a.open(s.base + "/#/show/demo")
	a.waitFor("A's map is live", showOpen)
	a.do("hold D1, D2", chromedp.Click(seat("D1")), chromedp.Click(seat("D2")), chromedp.Click(chromedp.ID("hold-btn")))
	a.waitFor("A holds D1, D2", seatsAre("s-mine", "D1", "D2"))
	confirms := loseFirstAnswer(a, "*/holds/*:confirm")
	a.do("pay", chromedp.Click(chromedp.CSS("#holds .pay-btn")), chromedp.Click(chromedp.CSS("#holds .confirm-btn")))
	a.waitFor("A is booked after the retry", noticeHas("Booked!")+` && `+seatsAre("s-booked", "D1", "D2"))
	sent := confirms()
	if len(sent) != 2 {
		t.Fatalf("the page sent %d confirms, want 2 (the lost one and one retry): %q", len(sent), sent)
	}
	var first, again struct {
		ClientID   string `json:"client_id"`
		RequestID  string `json:"request_id"`
		PaymentRef string `json:"payment_ref"`
	}
	if err := json.Unmarshal([]byte(sent[0]), &first); err != nil {
		t.Fatalf("confirm body %q: %v", sent[0], err)
	}
	if err := json.Unmarshal([]byte(sent[1]), &again); err != nil {
		t.Fatalf("confirm body %q: %v", sent[1], err)
	}
	if first.RequestID == "" || again != first {
		t.Errorf("retried confirm = %+v, want the first one's ids and payment %+v", again, first)
	}
	a.shot("07-a-booked-after-lost-answer")
}

func testHoldExpires(t *testing.T, b *browser, s *seatd) {
	a, bob := b.newFan(t, "A"), b.newFan(t, "B")
	// ?hold_ttl=2: A's holds last 2 s (the page's Options offer the same).
	a.open(s.base + "/?hold_ttl=2#/show/demo")
	bob.open(s.base + "/#/show/demo")
	a.waitFor("A's map is live", showOpen)
	bob.waitFor("B's map is live", showOpen)
	eval[bool](bob, markPage)
	a.do("hold C5, C6 for 2 s", chromedp.Click(seat("C5")), chromedp.Click(seat("C6")), chromedp.Click(chromedp.ID("hold-btn")))
	a.waitFor("A holds C5, C6", seatsAre("s-mine", "C5", "C6"))
	bob.waitFor("B sees C5, C6 held", seatsAre("s-held", "C5", "C6"))
	bob.shot("08-b-sees-short-hold")
	a.waitFor("A is told the hold expired", noticeHas("expired"))
	a.shot("09-a-hold-expired")
	bob.waitFor("B sees C5, C6 free again", seatsAre("s-free", "C5", "C6"))
	a.waitFor("A sees C5, C6 free again", seatsAre("s-free", "C5", "C6"))
	if !eval[bool](bob, samePage) {
		t.Error("B's page was reloaded; the map must update in place")
	}
	bob.shot("10-b-sees-seats-back")
}

func testSoldOutQueueOffer(t *testing.T, b *browser, s *seatd) {
	s.api(t, "POST", "/v1/shows", map[string]any{"show": map[string]any{
		"show_id": "tiny", "title": "A tiny screening",
		"rows":       []map[string]any{{"name": "A", "seats": 2, "category": "std"}},
		"categories": []map[string]any{{"name": "std", "price_minor": 500, "currency": "EUR"}},
	}}, 200, nil)
	a, bob := b.newFan(t, "A"), b.newFan(t, "B")
	a.open(s.base + "/#/show/tiny")
	bob.open(s.base + "/#/show/tiny")
	a.waitFor("A's map is live", showOpen)
	bob.waitFor("B's map is live", showOpen)
	a.do("hold both seats", chromedp.Click(seat("A1")), chromedp.Click(seat("A2")), chromedp.Click(chromedp.ID("hold-btn")))
	a.waitFor("A holds A1, A2", seatsAre("s-mine", "A1", "A2"))
	bob.waitFor("B sees the show full", seatsAre("s-held", "A1", "A2"))

	// B asks for the best seat: sold out, and the line is one click away.
	bob.do("ask for 1 seat", chromedp.SetValue(chromedp.ID("best-count"), "1"), chromedp.Click(chromedp.ID("best-btn")))
	bob.waitFor("B is told it is sold out", noticeHas("Sold out"))
	bob.do("join the line", chromedp.Click(chromedp.CSS("#notice .actions button")))
	bob.waitFor("B is first in line", `!document.getElementById("queue").hidden && document.querySelector("#queue .queue-pos").textContent.includes("number 1")`)
	bob.shot("11-b-waiting-in-line")

	// A releases; the ledger offers B a seat and B's page shows it live.
	a.do("release", chromedp.Click(chromedp.CSS("#holds .release-btn")))
	bob.waitFor("B is offered a seat", noticeHas("Good news")+` && document.querySelectorAll("#map .seat.s-mine").length === 1 && document.getElementById("queue").hidden`)
	bob.shot("12-b-offered-a-seat")
	bob.do("pay for the offer", chromedp.Click(chromedp.CSS("#holds .pay-btn")), chromedp.Click(chromedp.CSS("#holds .confirm-btn")))
	bob.waitFor("B is booked", noticeHas("Booked!"))
}

func testResumeAfterDrop(t *testing.T, b *browser, s *seatd) {
	p := startProxy(t, strings.TrimPrefix(s.base, "http://"))
	bob := b.newFan(t, "B")
	bob.open(p.url() + "/#/show/demo")
	bob.waitFor("B's map is live", showOpen)
	eval[bool](bob, markPage)

	// Drop B's connections and keep B off the network while someone
	// holds seats; then let B back on.
	p.setDown(true)
	bob.waitFor("B's page notices the drop", `document.getElementById("live").dataset.state !== "live"`)
	bob.shot("13-b-connection-lost")
	var held struct {
		SeatIDs []string `json:"seat_ids"`
	}
	s.api(t, "POST", "/v1/shows/demo/holds", map[string]any{"seat_ids": []string{"J1", "J2"},
		"client_id": "carol", "request_id": "while-b-was-away"}, 200, &held)
	time.Sleep(300 * time.Millisecond) // the change is applied everywhere, B still away
	if got := eval[bool](bob, seatsAre("s-held", "J1", "J2")); got {
		t.Fatal("B saw the hold while cut off: the proxy did not cut B")
	}
	before := len(p.requests())
	p.setDown(false)
	bob.waitFor("B's map shows the hold made while B was away", seatsAre("s-held", "J1", "J2")+` && `+showOpen)
	// The stream that brought the change resumed from B's last revision.
	resumed := false
	for _, head := range p.requests()[before:] {
		if strings.HasPrefix(head, "GET /v1/shows/demo/events") &&
			(strings.Contains(strings.ToLower(head), "\r\nlast-event-id: ") || strings.Contains(head, "from_revision=")) {
			resumed = true
			for _, line := range strings.Split(head, "\r\n") {
				if strings.HasPrefix(line, "GET ") || strings.HasPrefix(strings.ToLower(line), "last-event-id:") {
					t.Logf("B resumed: %s", line)
				}
			}
		}
	}
	if !resumed {
		t.Errorf("no resumed stream request (Last-Event-ID or from_revision) after the drop; requests: %q", p.requests()[before:])
	}
	if n := eval[string](bob, `document.getElementById("map").dataset.snapshots`); n != "1" {
		t.Errorf("B's page got %s snapshots, want 1: a resume must send only the changes after the last revision", n)
	}
	if !eval[bool](bob, samePage) {
		t.Error("B's page was reloaded; it must resume in place")
	}
	bob.shot("14-b-resumed")
}

func testOperator(t *testing.T, b *browser, s *seatd) {
	op := b.newFan(t, "operator")
	op.do("open /admin", chromedp.Navigate(s.admin))
	// The operator pastes the admin token, as the page asks.
	op.waitFor("the token form", `document.getElementById("token-form") !== null`)
	eval[bool](op, fmt.Sprintf(`(() => {
		document.getElementById("token").value = %q;
		document.getElementById("token-form").requestSubmit();
		return true;
	})()`, s.token))
	if hint := op.text("#token-form + .hint"); !strings.Contains(hint, "refuses calls without it") {
		t.Errorf("the credential hint says %q, want that the Admin API refuses calls without the token", hint)
	}
	op.waitFor("nodes and groups are listed", `document.querySelectorAll("#nodes tr").length === 3 && document.querySelectorAll("#groups tr").length === 4`)
	op.waitFor("the demo show's counters are listed", `(() => {
		const r = document.querySelector('#shows tr[data-show="demo"]');
		return r && r.querySelector("td.free") !== null;
	})()`)
	op.waitFor("catalog shows are listed", `document.querySelectorAll("#shows tr").length > 3`)

	// Move one group's leadership away from n1 (the node with HTTP): the
	// page lists the change.
	var st struct {
		Groups []struct {
			Group    uint32 `json:"group"`
			LeaderID string `json:"leader_id"`
		} `json:"groups"`
	}
	s.api(t, "GET", "/v1/admin/status", nil, 200, &st)
	group := -1
	for _, g := range st.Groups {
		if g.LeaderID == "n1" {
			group = int(g.Group)
		}
	}
	if group < 0 {
		t.Fatalf("n1 leads no group: %+v", st.Groups)
	}
	s.api(t, "POST", fmt.Sprintf("/v1/admin/groups/%d:transfer-leader", group), map[string]any{}, 200, nil)
	op.waitFor("the leader change is listed", fmt.Sprintf(`document.getElementById("changes").textContent.includes("group %d: n1 → n")`, group))
	op.shot("15-operator")

	// The operator opens a catalog show's waiting room, closes it, and
	// opens it again: each click is its own request.
	show := eval[string](op, `[...document.querySelectorAll("#shows tr[data-show]")].map((r) => r.dataset.show).find((id) => id !== "demo") || ""`)
	if show == "" {
		t.Fatal("no catalog show listed besides demo")
	}
	room := func(open bool, button string) {
		t.Helper()
		eval[bool](op, fmt.Sprintf(`(() => {
			document.getElementById("room-show").value = %q;
			document.getElementById("room-rate").value = "50";
			document.getElementById("room-status").dataset.open = "";
			%s;
			return true;
		})()`, show, button))
		op.waitFor(fmt.Sprintf("the room of %s reads open=%t", show, open), fmt.Sprintf(`document.getElementById("room-status").dataset.open === "%t"`, open))
		var st struct {
			Open           bool   `json:"open"`
			AdmitPerSecond uint32 `json:"admit_per_second"`
		}
		s.api(t, "GET", "/v1/shows/"+show+"/waiting_room", nil, 200, &st)
		if st.Open != open || (open && st.AdmitPerSecond != 50) {
			t.Errorf("after the page's %s, the API reads the room of %s as %+v", button, show, st)
		}
	}
	openRoom := `document.getElementById("room-form").requestSubmit()`
	closeRoom := `document.getElementById("room-close").click()`
	room(true, openRoom)
	if txt := op.text("#room-status"); !strings.Contains(txt, "open at 50/s") {
		t.Errorf("room status reads %q, want it open at 50/s", txt)
	}
	op.shot("16-operator-room")
	room(false, closeRoom)
	room(true, openRoom)
	room(false, closeRoom)
	// Closing with a threshold arms the room; closing without disarms.
	eval[bool](op, `(() => { document.getElementById("room-auto").value = "5000"; return true; })()`)
	room(false, closeRoom)
	if txt := op.text("#room-status"); !strings.Contains(txt, "opens by itself at 5000 holds/s (admitting 50/s)") {
		t.Errorf("room status after arming reads %q, want it armed at 5000 holds/s", txt)
	}
	eval[bool](op, `(() => { document.getElementById("room-auto").value = "0"; return true; })()`)
	room(false, closeRoom)
	if txt := op.text("#room-status"); strings.Contains(txt, "opens by itself") {
		t.Errorf("room status after disarming reads %q", txt)
	}
}
