// This file proves the catalog end to end over HTTP/JSON on a real 3-node
// in-process cluster: an admin creates a city, a cinema with screens and
// movies, and schedules shows from a screen (the show is bookable with the
// screen's layout, and scheduling again is harmless); every browse listing
// finds them, pages through them and states its staleness bound; a show's
// free-seat count drops after a hold (eventually: the counts are stale
// reads); search finds shows by keyword, city and date; a city, a movie
// (with or without shows) and a listed show are read by id; bad input is
// 400 naming the field, unknown ids 404, conflicts 409; and a show that exists
// but is not listed — what a schedule cut off half way leaves, or the demo
// show — is listed by scheduling it (again), unless its layout differs.
package main

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/shard"
)

// catalogCity is the test city's zone: dates are read there.
const catalogZone = "Europe/London"

func TestCatalogHTTP(t *testing.T) {
	c := startCluster(t, true)
	base := "http://" + c.httpAddr[0]
	loc, err := time.LoadLocation(catalogZone)
	if err != nil {
		t.Fatal(err)
	}
	// Shows tomorrow and the day after, in London.
	day1 := time.Now().In(loc).AddDate(0, 0, 1)
	day2 := day1.AddDate(0, 0, 1)
	at := func(day time.Time, hour int) time.Time {
		return time.Date(day.Year(), day.Month(), day.Day(), hour, 0, 0, 0, loc)
	}
	date1, date2 := day1.Format("2006-01-02"), day2.Format("2006-01-02")

	catalogCreate(t, base)
	shows := catalogSchedule(t, base, at(day1, 18), at(day1, 21), at(day2, 14))
	catalogBrowse(t, base, date1, date2, shows)
	catalogSeatsAfterHold(t, base, date1, shows[0])
	catalogBadInput(t, base)
	catalogAdopt(t, base, at(day2, 10))
}

// catalogCreate creates London, the Odeon (two screens) and two movies.
func catalogCreate(t *testing.T, base string) {
	city := `{"city":{"city_id":"lon","name":"London","time_zone":"` + catalogZone + `"}}`
	r := httpCall(t, "POST", base+"/v1/cities", city).wantStatus(t, "POST /v1/cities", http.StatusOK)
	if r.str("city_id") != "lon" || r.str("revision") == "" {
		t.Errorf("POST /v1/cities = %s, want city_id lon and a revision", r.raw)
	}
	// The same city again is harmless; another under its id is a conflict.
	httpCall(t, "POST", base+"/v1/cities", city).wantStatus(t, "POST /v1/cities again", http.StatusOK)
	r = httpCall(t, "POST", base+"/v1/cities", `{"city":{"city_id":"lon","name":"Londinium"}}`)
	wantReason(t, "POST /v1/cities (other name)", r, http.StatusConflict, "CITY_EXISTS")
	httpCall(t, "POST", base+"/v1/cities", `{"city":{"city_id":"par","name":"Paris","time_zone":"Europe/Paris"}}`).
		wantStatus(t, "POST /v1/cities par", http.StatusOK)

	cinema := `{"cinema":{"cinema_id":"odeon","city_id":"lon","name":"Odeon Leicester Square","screens":[
	  {"screen_id":"s1","name":"Screen 1","rows":[{"name":"A","seats":10,"category":"std"},{"name":"B","seats":10,"category":"vip"}],
	   "categories":[{"name":"std","price_minor":1200,"currency":"GBP"},{"name":"vip","price_minor":1800,"currency":"GBP"}]},
	  {"screen_id":"s2","name":"Screen 2","rows":[{"name":"A","seats":5,"category":"std"}],
	   "categories":[{"name":"std","price_minor":900,"currency":"GBP"}]}]}}`
	r = httpCall(t, "POST", base+"/v1/cinemas", cinema).wantStatus(t, "POST /v1/cinemas", http.StatusOK)
	if r.body["screen_count"] != float64(2) || r.body["seat_count"] != float64(25) {
		t.Errorf("POST /v1/cinemas = %s, want screen_count 2 and seat_count 25", r.raw)
	}
	for _, m := range []string{`{"movie":{"movie_id":"dune2","title":"Dune: Part Two","duration_minutes":166}}`,
		`{"movie":{"movie_id":"alien","title":"Alien","duration_minutes":117}}`,
		`{"movie":{"movie_id":"nosferatu","title":"Nosferatu","duration_minutes":94}}`} {
		httpCall(t, "POST", base+"/v1/movies", m).wantStatus(t, "POST /v1/movies", http.StatusOK)
	}
	r = httpCall(t, "GET", base+"/v1/cinemas/odeon", "").wantStatus(t, "GET /v1/cinemas/odeon", http.StatusOK)
	if screens, _ := r.body["screens"].([]any); len(screens) != 2 || len(screens[0].(map[string]any)["rows"].([]any)) != 2 {
		t.Errorf("GET /v1/cinemas/odeon = %s, want 2 screens, the first with 2 rows", r.raw)
	}
}

// catalogSchedule schedules dune2 on s1 and s2 on day 1 and alien on s1 on
// day 2, and returns their show ids.
func catalogSchedule(t *testing.T, base string, d1a, d1b, d2 time.Time) []string {
	schedule := func(screen, movie, showID string, at time.Time) httpResult {
		body := fmt.Sprintf(`{"movie_id":%q,"starts_at":%q,"show_id":%q}`, movie, at.Format(time.RFC3339), showID)
		return httpCall(t, "POST", base+"/v1/cinemas/odeon/screens/"+screen+"/shows", body)
	}
	r := schedule("s1", "dune2", "", d1a).wantStatus(t, "schedule dune2 on s1", http.StatusOK)
	show, _ := r.body["show"].(map[string]any)
	first, _ := show["show_id"].(string)
	if want := "odeon.s1." + d1a.UTC().Format("20060102T1504Z"); first != want {
		t.Errorf("schedule without show_id = show_id %q, want %q derived from cinema, screen and start", first, want)
	}
	if show["total_seats"] != float64(20) || show["movie_title"] != "Dune: Part Two" || show["city_id"] != "lon" {
		t.Errorf("schedule dune2 on s1 = %s, want 20 seats, the movie's title and city lon", r.raw)
	}
	// Scheduling the same show again replays every step.
	schedule("s1", "dune2", "", d1a).wantStatus(t, "schedule dune2 on s1 again", http.StatusOK)
	schedule("s2", "dune2", "dune-late", d1b).wantStatus(t, "schedule dune2 on s2", http.StatusOK)
	schedule("s1", "alien", "alien-1", d2).wantStatus(t, "schedule alien on s1", http.StatusOK)
	// The show exists in its own group with the screen's layout.
	if seats := httpSeatCount(t, base, first); seats != 20 {
		t.Errorf("GET /v1/shows/%s/seats lists %d seats, want the screen's 20", first, seats)
	}
	if seats := httpSeatCount(t, base, "dune-late"); seats != 5 {
		t.Errorf("GET /v1/shows/dune-late/seats lists %d seats, want the screen's 5", seats)
	}
	// Conflicts and unknown ids.
	wantReason(t, "schedule another movie as dune-late", schedule("s2", "alien", "dune-late", d1b), http.StatusConflict, "SHOW_LISTED")
	wantReason(t, "schedule on screen s9", schedule("s9", "dune2", "x1", d1a), http.StatusNotFound, "SCREEN_NOT_FOUND")
	wantReason(t, "schedule movie nope", schedule("s1", "nope", "x1", d1a), http.StatusNotFound, "MOVIE_NOT_FOUND")
	r = httpCall(t, "POST", base+"/v1/cinemas/nope/screens/s1/shows", fmt.Sprintf(`{"movie_id":"dune2","starts_at":%q}`, d1a.Format(time.RFC3339)))
	wantReason(t, "schedule at cinema nope", r, http.StatusNotFound, "CINEMA_NOT_FOUND")
	return []string{first, "dune-late", "alien-1"}
}

// catalogBrowse reads every listing; a listing is stale, so each read is
// polled until the catalog's writes show (they must, within the bound).
func catalogBrowse(t *testing.T, base, date1, date2 string, shows []string) {
	r := httpCall(t, "GET", base+"/v1/cities", "").wantStatus(t, "GET /v1/cities", http.StatusOK)
	if got := ids(r, "cities", "city_id"); !slices.Equal(got, []string{"lon", "par"}) {
		t.Errorf("GET /v1/cities lists %v, want [lon par]", got)
	}
	fresh, _ := r.body["freshness"].(map[string]any)
	asOf, err := time.Parse(time.RFC3339Nano, fmt.Sprint(fresh["as_of"]))
	if err != nil || fresh["max_staleness"] != "2s" || fresh["served_by"] == "" || time.Since(asOf) > 3*time.Second {
		t.Errorf("GET /v1/cities freshness = %v, want as_of within the bound, max_staleness 2s and served_by", fresh)
	}
	r = httpCall(t, "GET", base+"/v1/cities?page_size=1", "").wantStatus(t, "GET /v1/cities page 1", http.StatusOK)
	next := r.str("next_page_token")
	if got := ids(r, "cities", "city_id"); !slices.Equal(got, []string{"lon"}) || next == "" {
		t.Fatalf("GET /v1/cities?page_size=1 = %s, want [lon] and a next_page_token", r.raw)
	}
	r = httpCall(t, "GET", base+"/v1/cities?page_size=1&page_token="+next, "").wantStatus(t, "GET /v1/cities page 2", http.StatusOK)
	if got := ids(r, "cities", "city_id"); !slices.Equal(got, []string{"par"}) || r.str("next_page_token") != "" {
		t.Errorf("GET /v1/cities page 2 = %s, want [par] and no next_page_token", r.raw)
	}
	wantList(t, base+"/v1/cities/lon/movies", "movies", "movie_id", []string{"alien", "dune2"})
	wantList(t, base+"/v1/cities/par/movies", "movies", "movie_id", nil)
	wantList(t, base+"/v1/cities/lon/movies/dune2/cinemas", "cinemas", "cinema_id", []string{"odeon"})
	wantList(t, base+"/v1/cities/lon/cinemas", "cinemas", "cinema_id", []string{"odeon"})
	wantList(t, base+"/v1/cinemas/odeon/shows?date="+date1, "shows", "show_id", shows[:2])
	wantList(t, base+"/v1/cinemas/odeon/shows?date="+date2, "shows", "show_id", shows[2:])
	wantList(t, base+"/v1/search?q=dune", "shows", "show_id", shows[:2])
	wantList(t, base+"/v1/search?q=ODEON+leic&city_id=lon&date="+date2, "shows", "show_id", shows[2:])
	wantList(t, base+"/v1/search?q=dune&city_id=par", "shows", "show_id", nil)
	wantList(t, base+"/v1/search?city_id=lon", "shows", "show_id", shows)
	catalogPointReads(t, base, shows[2])

	// Shows page by page; each carries its free seats.
	r = httpCall(t, "GET", base+"/v1/cinemas/odeon/shows?page_size=1&date="+date1, "").wantStatus(t, "GET shows page 1", http.StatusOK)
	list, _ := r.body["shows"].([]any)
	if len(list) != 1 || r.str("next_page_token") == "" {
		t.Fatalf("GET shows?page_size=1 = %s, want 1 show and a next_page_token", r.raw)
	}
	s := list[0].(map[string]any)
	if s["show_id"] != shows[0] || s["free_seats_known"] != true || s["free_seats"] != float64(20) || s["total_seats"] != float64(20) {
		t.Errorf("GET shows page 1 = %v, want %s with 20 of 20 seats free", s, shows[0])
	}
	r = httpCall(t, "GET", base+"/v1/cinemas/odeon/shows?page_size=1&date="+date1+"&page_token="+r.str("next_page_token"), "").
		wantStatus(t, "GET shows page 2", http.StatusOK)
	if got := ids(r, "shows", "show_id"); !slices.Equal(got, shows[1:2]) {
		t.Errorf("GET shows page 2 lists %v, want %v", got, shows[1:2])
	}
}

// catalogPointReads reads a city, a movie with no show (which no listing
// finds) and a listed show by id, after the listings showed them (the
// reads are as stale as those, from the same node).
func catalogPointReads(t *testing.T, base, show string) {
	r := httpCall(t, "GET", base+"/v1/cities/lon", "").wantStatus(t, "GET /v1/cities/lon", http.StatusOK)
	if r.str("name") != "London" || r.str("time_zone") != catalogZone {
		t.Errorf("GET /v1/cities/lon = %s, want London in %s", r.raw, catalogZone)
	}
	r = httpCall(t, "GET", base+"/v1/movies/nosferatu", "").wantStatus(t, "GET /v1/movies/nosferatu", http.StatusOK)
	if r.str("title") != "Nosferatu" || r.body["duration_minutes"] != float64(94) {
		t.Errorf("GET /v1/movies/nosferatu = %s, want Nosferatu, 94 minutes", r.raw)
	}
	r = httpCall(t, "GET", base+"/v1/shows/"+show+"/listing", "").wantStatus(t, "GET /v1/shows/"+show+"/listing", http.StatusOK)
	if r.str("show_id") != show || r.str("movie_id") != "alien" || r.str("screen_id") != "s1" || r.body["total_seats"] != float64(20) {
		t.Errorf("GET /v1/shows/%s/listing = %s, want alien on odeon s1 with 20 seats", show, r.raw)
	}
}

// catalogSeatsAfterHold holds three seats of a show and waits for its
// listing's free-seat count to drop by three.
func catalogSeatsAfterHold(t *testing.T, base, date, show string) {
	httpCall(t, "POST", base+"/v1/shows/"+show+"/holds", `{"seat_ids":["A1","A2","B3"],"client_id":"fan","request_id":"r1"}`).
		wantStatus(t, "POST holds", http.StatusOK)
	deadline := time.Now().Add(clusterWaitMax)
	for {
		r := httpCall(t, "GET", base+"/v1/cinemas/odeon/shows?date="+date, "").wantStatus(t, "GET shows", http.StatusOK)
		list, _ := r.body["shows"].([]any)
		s := list[0].(map[string]any)
		if s["show_id"] == show && s["free_seats"] == float64(17) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET shows after a hold of 3 seats of %s = %v, want 17 free seats within %v", show, s, clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
}

// catalogBadInput: 400 naming the field, 404 for unknown ids.
func catalogBadInput(t *testing.T, base string) {
	tests := []struct {
		method, path, body, field string
	}{
		{"POST", "/v1/cities", `{"city":{"city_id":"a/b","name":"X"}}`, "city.city_id"},
		{"POST", "/v1/cities", `{"city":{"city_id":"ber","name":"Berlin","time_zone":"Europe/Nowhere"}}`, "city.time_zone"},
		{"POST", "/v1/cities", `{}`, "city"},
		{"POST", "/v1/cinemas", `{"cinema":{"cinema_id":"rex","city_id":"lon","name":"Rex","screens":[{"screen_id":"s1","rows":[{"name":"A","seats":501,"category":"std"}],"categories":[{"name":"std","currency":"GBP"}]}]}}`, "cinema.screens[0].rows[0].seats"},
		{"POST", "/v1/cinemas", `{"cinema":{"cinema_id":"rex","city_id":"lon","name":"Rex","screens":[]}}`, "cinema.screens"},
		{"POST", "/v1/movies", `{"movie":{"movie_id":"m","title":""}}`, "movie.title"},
		{"POST", "/v1/cinemas/odeon/screens/s1/shows", `{"movie_id":"dune2"}`, "starts_at"},
		{"POST", "/v1/cinemas/odeon/screens/s1/shows", `{"movie_id":"dune2","starts_at":"2030-01-01T10:00:00Z","show_id":"a b"}`, "show_id"},
		{"GET", "/v1/cinemas/odeon/shows?date=2030-13-01", "", "date"},
		{"GET", "/v1/search?q=" + url.QueryEscape(strings.Repeat("x", 101)), "", "q"},
		{"GET", "/v1/cities?page_size=101", "", "page_size"},
		{"GET", "/v1/cities?page_token=***", "", "page_token"},
		{"GET", "/v1/search?city_id=" + url.QueryEscape("a/b"), "", "city_id"},
	}
	for _, tt := range tests {
		call := tt.method + " " + tt.path
		r := httpCall(t, tt.method, base+tt.path, tt.body)
		wantReason(t, call, r, http.StatusBadRequest, "INVALID_ARGUMENT")
		if got := badRequestField(r); got != tt.field {
			t.Errorf("%s = %s: BadRequest names %q, want %q", call, r.raw, got, tt.field)
		}
	}
	for _, tt := range []struct{ path, reason string }{
		{"/v1/cities/nope/movies", "CITY_NOT_FOUND"},
		{"/v1/cities/nope/cinemas", "CITY_NOT_FOUND"},
		{"/v1/cities/lon/movies/nope/cinemas", "MOVIE_NOT_FOUND"},
		{"/v1/cinemas/nope/shows", "CINEMA_NOT_FOUND"},
		{"/v1/cinemas/nope", "CINEMA_NOT_FOUND"},
		{"/v1/cities/nope", "CITY_NOT_FOUND"},
		{"/v1/movies/nope", "MOVIE_NOT_FOUND"},
		{"/v1/shows/nope/listing", "SHOW_NOT_FOUND"},
		{"/v1/search?city_id=nope", "CITY_NOT_FOUND"},
	} {
		wantReason(t, "GET "+tt.path, httpCall(t, "GET", base+tt.path, ""), http.StatusNotFound, tt.reason)
	}
	r := httpCall(t, "POST", base+"/v1/cinemas", `{"cinema":{"cinema_id":"rex","city_id":"nope","name":"Rex","screens":[{"screen_id":"s1","rows":[{"name":"A","seats":5,"category":"std"}],"categories":[{"name":"std","currency":"GBP"}]}]}}`)
	wantReason(t, "POST /v1/cinemas in city nope", r, http.StatusNotFound, "CITY_NOT_FOUND")
}

// catalogAdopt: a show created in its group but not listed (a schedule cut
// off half way, or one created with POST /v1/shows) is listed by
// scheduling it, when its layout is the screen's; otherwise 409.
func catalogAdopt(t *testing.T, base string, at time.Time) {
	same := `{"show":{"show_id":"pre-1","title":"Made earlier","rows":[{"name":"A","seats":5,"category":"std"}],"categories":[{"name":"std","price_minor":900,"currency":"GBP"}]}}`
	other := `{"show":{"show_id":"pre-2","title":"Made earlier","rows":[{"name":"A","seats":6,"category":"std"}],"categories":[{"name":"std","price_minor":900,"currency":"GBP"}]}}`
	httpCall(t, "POST", base+"/v1/shows", same).wantStatus(t, "POST /v1/shows pre-1", http.StatusOK)
	httpCall(t, "POST", base+"/v1/shows", other).wantStatus(t, "POST /v1/shows pre-2", http.StatusOK)
	body := func(show string) string {
		return fmt.Sprintf(`{"movie_id":"alien","starts_at":%q,"show_id":%q}`, at.Format(time.RFC3339), show)
	}
	httpCall(t, "POST", base+"/v1/cinemas/odeon/screens/s2/shows", body("pre-1")).wantStatus(t, "schedule pre-1 on s2", http.StatusOK)
	r := httpCall(t, "POST", base+"/v1/cinemas/odeon/screens/s2/shows", body("pre-2"))
	wantReason(t, "schedule pre-2 (6 seats) on s2 (5 seats)", r, http.StatusConflict, "SHOW_EXISTS")
	// pre-2 exists in its group but is not listed: no listing to read.
	wantReason(t, "GET /v1/shows/pre-2/listing", httpCall(t, "GET", base+"/v1/shows/pre-2/listing", ""), http.StatusNotFound, "SHOW_NOT_FOUND")
	wantList(t, base+"/v1/search?q=alien", "shows", "show_id", []string{"pre-1", "alien-1"})
}

// badRequestField is the field a 400's BadRequest names ("" if none).
func badRequestField(r httpResult) string {
	br := r.details("BadRequest")
	if len(br) != 1 {
		return ""
	}
	fvs, _ := br[0]["field_violations"].([]any)
	if len(fvs) != 1 {
		return ""
	}
	fv, _ := fvs[0].(map[string]any)
	f, _ := fv["field"].(string)
	return f
}

// wantReason fails unless r has the status and ErrorInfo reason.
func wantReason(t *testing.T, call string, r httpResult, code int, reason string) {
	t.Helper()
	info := r.details("ErrorInfo")
	if r.code != code || len(info) != 1 || info[0]["reason"] != reason {
		t.Errorf("%s = %d %s, want %d %s", call, r.code, r.raw, code, reason)
	}
}

// wantList polls a listing until it lists want (in order): browse reads
// are stale by at most the bound.
func wantList(t *testing.T, url, list, key string, want []string) {
	t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		r := httpCall(t, "GET", url, "").wantStatus(t, "GET "+url, http.StatusOK)
		got := ids(r, list, key)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("GET %s lists %v, want %v", url, got, want)
			return
		}
		time.Sleep(pollInterval)
	}
}

// ids returns the key of each object of a top-level list.
func ids(r httpResult, list, key string) []string {
	var out []string
	items, _ := r.body[list].([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		s, _ := m[key].(string)
		out = append(out, s)
	}
	return out
}

// httpSeatCount is the number of seats a show's seat map lists.
func httpSeatCount(t *testing.T, base, show string) int {
	t.Helper()
	r := httpCall(t, "GET", base+"/v1/shows/"+show+"/seats", "").wantStatus(t, "GET seats of "+show, http.StatusOK)
	seats, _ := r.body["seats"].([]any)
	return len(seats)
}

// TestCatalogStalenessBound: a node cut off from every other replica keeps
// answering browse reads from its own replica only while its last contact
// with a leader is within the stated bound; every answer's as_of is within
// it, and once the bound has passed the node answers 503, never older data.
func TestCatalogStalenessBound(t *testing.T) {
	c := startCluster(t, true)
	base := "http://" + c.httpAddr[0]
	httpCall(t, "POST", base+"/v1/cities", `{"city":{"city_id":"lon","name":"London"}}`).wantStatus(t, "POST /v1/cities", http.StatusOK)
	wantList(t, base+"/v1/cities", "cities", "city_id", []string{"lon"})
	c.kill(1)
	c.kill(2)
	deadline := time.Now().Add(clusterWaitMax)
	for served := 0; ; served++ {
		start := time.Now()
		r := httpCallOnce(t, "GET", base+"/v1/cities", "")
		if r.code == http.StatusServiceUnavailable {
			t.Logf("n1 alone served %d browse reads, then 503", served)
			return
		}
		r.wantStatus(t, "GET /v1/cities on n1 alone", http.StatusOK)
		fresh, _ := r.body["freshness"].(map[string]any)
		asOf, err := time.Parse(time.RFC3339Nano, fmt.Sprint(fresh["as_of"]))
		if err != nil {
			t.Fatalf("GET /v1/cities = %s: freshness.as_of: %v", r.raw, err)
		}
		if oldest := start.Add(-shard.BrowseStalenessMax - time.Millisecond); asOf.Before(oldest) {
			t.Fatalf("GET /v1/cities at %v on n1 alone served as_of %v, older than the %v bound", start, asOf, shard.BrowseStalenessMax)
		}
		if time.Now().After(deadline) {
			t.Fatalf("n1 alone still serves browse reads %v after losing its peers, want 503 once %v have passed", clusterWaitMax, shard.BrowseStalenessMax)
		}
		time.Sleep(pollInterval)
	}
}
