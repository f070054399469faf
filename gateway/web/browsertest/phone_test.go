// This file proves that the booking page works at a phone's width and from
// a direct link: a show opened by its URL alone names its movie, cinema and
// time; no page scrolls sideways at 390 px; the seat map keeps its row
// letters in view and scrolls its seats inside itself.
package browsertest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Phone viewport: an iPhone 12-15's CSS width.
const phoneWidth, phoneHeight = 390, 844

// timeShown matches a time of day in the show's subtitle.
var timeShown = regexp.MustCompile(`\d{1,2}:\d{2}`)

// noSideways is a page expression: the page is no wider than the phone. (A
// mobile viewport zooms out to fit a page that is too wide, so the
// window's own width would grow with the page.)
var noSideways = fmt.Sprintf(`document.documentElement.scrollWidth <= %d`, phoneWidth)

// rowNamesShown is a page expression: every row letter of the seat map lies
// inside the map's scroll box at its start, not cut off on the left.
const rowNamesShown = `(() => {
	const wrap = document.querySelector(".map-wrap").getBoundingClientRect();
	const names = [...document.querySelectorAll("#map .row-name")];
	return names.length > 0 && names.every((n) => {
		const r = n.getBoundingClientRect();
		return r.left >= wrap.left && r.right <= wrap.right && n.textContent !== "";
	});
})()`

// testPhoneDirectLink opens a show by a direct link, with nothing
// remembered from browsing, in a phone-sized window: the page names the
// movie, cinema and time from the catalog, does not scroll sideways, and
// shows every row letter; the seats scroll inside the map. The front page
// and the operator page fit too.
func testPhoneDirectLink(t *testing.T, b *browser, s *seatd) {
	// seatd dev lists the demo show at the Grand Rex just before its banner;
	// the catalog's browse reads may lag that by up to their bound (2 s).
	var l struct {
		MovieTitle string `json:"movie_title"`
		CinemaName string `json:"cinema_name"`
	}
	for deadline := time.Now().Add(stepMax); ; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(s.base + "/v1/shows/demo/listing")
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&l)
			resp.Body.Close()
		}
		if err == nil && resp.StatusCode == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/shows/demo/listing: %v, status %v; want the demo show listed", err, resp)
		}
	}
	f := b.newFan(t, "phone")
	f.do("a phone's viewport", chromedp.EmulateViewport(phoneWidth, phoneHeight, chromedp.EmulateMobile))
	f.open(s.base + "/#/show/demo")
	f.waitFor("the show is live", showOpen)
	f.waitFor("the show is named from the catalog", fmt.Sprintf(`document.getElementById("show-title").textContent === %q &&
		document.getElementById("show-sub").textContent.includes(%q)`, l.MovieTitle, l.CinemaName))
	if sub := f.text("#show-sub"); !timeShown.MatchString(sub) {
		t.Errorf("show subtitle %q names no time", sub)
	}
	if !eval[bool](f, noSideways) {
		t.Errorf("the show page is %d px wide in a %d px window: it scrolls sideways",
			eval[int](f, `document.documentElement.scrollWidth`), phoneWidth)
	}
	if !eval[bool](f, rowNamesShown) {
		t.Errorf("the seat map hides row letters at %d px", phoneWidth)
	}
	if !eval[bool](f, `(() => { const w = document.querySelector(".map-wrap"); return w.scrollWidth > w.clientWidth; })()`) {
		t.Logf("the seat map fits %d px without scrolling", phoneWidth)
	}
	f.shot("16-phone-direct-link")
	for _, page := range []string{s.base + "/", s.admin} {
		f.do("open "+page, chromedp.Navigate(page))
		f.waitFor("the page has loaded", `document.readyState === "complete"`)
		if !eval[bool](f, noSideways) {
			t.Errorf("%s is %d px wide in a %d px window: it scrolls sideways", page,
				eval[int](f, `document.documentElement.scrollWidth`), phoneWidth)
		}
	}
	f.shot("17-phone-operator")
}
