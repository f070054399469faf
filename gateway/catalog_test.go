// This file proves the catalog's gateway rules that need no cluster: every
// catalog rejection and lookup failure maps to its documented reason, gRPC
// code and HTTP status; a schedule without a show id derives the same id
// every time (so a retry repairs the same show); page tokens round-trip and
// garbage is a 400 naming page_token; and an existing show is adopted only
// when its seat map has exactly the screen's layout.
package gateway

import (
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/catalog"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestCatalogErrorTable(t *testing.T) {
	tests := []struct {
		err    error
		reason string
		grpc   codes.Code
		http   int
	}{
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_CITY_NOT_FOUND}, opOther), "CITY_NOT_FOUND", codes.NotFound, 404},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_CINEMA_NOT_FOUND}, opOther), "CINEMA_NOT_FOUND", codes.NotFound, 404},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_SCREEN_NOT_FOUND}, opOther), "SCREEN_NOT_FOUND", codes.NotFound, 404},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_MOVIE_NOT_FOUND}, opOther), "MOVIE_NOT_FOUND", codes.NotFound, 404},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_CITY_EXISTS}, opOther), "CITY_EXISTS", codes.AlreadyExists, 409},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_CINEMA_EXISTS}, opOther), "CINEMA_EXISTS", codes.AlreadyExists, 409},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_MOVIE_EXISTS}, opOther), "MOVIE_EXISTS", codes.AlreadyExists, 409},
		{resultError(&ledgerpb.Result{Code: ledgerpb.Code_CODE_SHOW_LISTED}, opOther), "SHOW_LISTED", codes.AlreadyExists, 409},
		{routeError(catalog.ErrCityNotFound), "CITY_NOT_FOUND", codes.NotFound, 404},
		{routeError(catalog.ErrCinemaNotFound), "CINEMA_NOT_FOUND", codes.NotFound, 404},
		{routeError(catalog.ErrMovieNotFound), "MOVIE_NOT_FOUND", codes.NotFound, 404},
		{routeError(catalog.ErrNotListed), "SHOW_NOT_FOUND", codes.NotFound, 404},
	}
	for _, tt := range tests {
		s := status.Convert(tt.err)
		if got := reasonOf(s); got != tt.reason || s.Code() != tt.grpc || httpStatus(s) != tt.http {
			t.Errorf("error %q = %s %v %d, want %s %v %d", s.Message(), got, s.Code(), httpStatus(s), tt.reason, tt.grpc, tt.http)
		}
	}
	// Every code the catalog adds has a reason: none becomes a bare 500.
	for c := ledgerpb.Code_CODE_CITY_NOT_FOUND; c <= ledgerpb.Code_CODE_SHOW_LISTED; c++ {
		if _, ok := codeReasons[c]; !ok {
			t.Errorf("codeReasons[%v] is missing", c)
		}
	}
}

func TestListShowCmd(t *testing.T) {
	at := timestamppb.New(time.Date(2026, 5, 2, 18, 30, 0, 0, time.UTC))
	ls, err := listShowCmd(&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "s1", MovieId: "dune2", StartsAt: at})
	if err != nil || ls.ShowId != "odeon.s1.20260502T1830Z" || ls.StartsAtMs != at.AsTime().UnixMilli() {
		t.Errorf("listShowCmd(no show_id) = %v, %v, want show_id odeon.s1.20260502T1830Z", ls, err)
	}
	long := strings.Repeat("c", fsm.CatalogIDLenMax)
	a, err := listShowCmd(&ledgerpb.ScheduleShowRequest{CinemaId: long, ScreenId: "s1", MovieId: "m", StartsAt: at})
	if err != nil || !fsm.ValidID(a.ShowId, fsm.ShowIDLenMax) {
		t.Fatalf("listShowCmd(long cinema id) = %v, %v, want a valid derived show id", a, err)
	}
	b, _ := listShowCmd(&ledgerpb.ScheduleShowRequest{CinemaId: long, ScreenId: "s1", MovieId: "m", StartsAt: at})
	c, _ := listShowCmd(&ledgerpb.ScheduleShowRequest{CinemaId: long, ScreenId: "s2", MovieId: "m", StartsAt: at})
	if a.ShowId != b.ShowId || a.ShowId == c.ShowId {
		t.Errorf("derived show ids %s, %s (same request), %s (other screen): want the first two equal, the third not", a.ShowId, b.ShowId, c.ShowId)
	}
	for _, tt := range []struct {
		req   *ledgerpb.ScheduleShowRequest
		field string
	}{
		{&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "s1", MovieId: "m"}, "starts_at"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "s1", MovieId: "m", StartsAt: &timestamppb.Timestamp{Seconds: -1}}, "starts_at"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "a/b", ScreenId: "s1", MovieId: "m", StartsAt: at}, "cinema_id"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "s1", MovieId: "m", StartsAt: at, ShowId: "a b"}, "show_id"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "a/b", ScreenId: "s1", MovieId: "m", StartsAt: at, ShowId: "x"}, "cinema_id"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "", MovieId: "m", StartsAt: at, ShowId: "x"}, "screen_id"},
		{&ledgerpb.ScheduleShowRequest{CinemaId: "odeon", ScreenId: "s1", MovieId: "", StartsAt: at}, "movie_id"},
	} {
		_, err := listShowCmd(tt.req)
		if got := fieldOf(err); got != tt.field {
			t.Errorf("listShowCmd(%v) = %v, want a 400 naming %s", tt.req, err, tt.field)
		}
	}
}

// fieldOf is the field a 400 names.
func fieldOf(err error) string {
	s, _ := status.FromError(err)
	if s.Code() != codes.InvalidArgument {
		return ""
	}
	f, _, _ := strings.Cut(s.Message(), ":")
	return f
}

func TestPageToken(t *testing.T) {
	after := []byte{0, 0, 1, 0x9c, 'a', 0xff}
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITIES, 0, pageToken(after))
	if err != nil || string(q.PageAfter) != string(after) || q.PageSize != fsm.PageSizeDefault {
		t.Errorf("pageQuery(pageToken(%x)) = %v, %v, want the same bytes and the default size", after, q, err)
	}
	if pageToken(nil) != "" {
		t.Errorf("pageToken(nil) = %q, want empty (no next page)", pageToken(nil))
	}
	for _, tt := range []struct {
		size  uint32
		token string
		field string
	}{
		{fsm.PageSizeMax + 1, "", "page_size"},
		{0, "not base64!", "page_token"},
		{0, strings.Repeat("A", fsm.PageTokenLenMax+4), "page_token"},
	} {
		if _, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITIES, tt.size, tt.token); fieldOf(err) != tt.field {
			t.Errorf("pageQuery(%d, %.10q) = %v, want a 400 naming %s", tt.size, tt.token, err, tt.field)
		}
	}
	if _, err := validDate("2026-02-30"); fieldOf(err) != "date" {
		t.Errorf("validDate(2026-02-30) = %v, want a 400 naming date", err)
	}
}

func TestSameLayout(t *testing.T) {
	show := &ledgerpb.Show{Rows: []*ledgerpb.Row{{Name: "A", Seats: 2, Category: "std"}, {Name: "B", Seats: 1, Category: "vip"}},
		Categories: []*ledgerpb.Category{{Name: "std", PriceMinor: 100, Currency: "EUR"}, {Name: "vip", PriceMinor: 200, Currency: "EUR"}}}
	seat := func(row, cat string) *ledgerpb.Seat { return &ledgerpb.Seat{Row: row, Category: cat} }
	sm := func(seats []*ledgerpb.Seat, cats []*ledgerpb.Category) *ledgerpb.SeatMap {
		return &ledgerpb.SeatMap{Seats: seats, Categories: cats}
	}
	same := []*ledgerpb.Seat{seat("A", "std"), seat("A", "std"), seat("B", "vip")}
	tests := []struct {
		name string
		sm   *ledgerpb.SeatMap
		want bool
	}{
		{"same", sm(same, show.Categories), true},
		{"a seat more", sm(append(same, seat("B", "vip")), show.Categories), false},
		{"another row", sm([]*ledgerpb.Seat{seat("A", "std"), seat("A", "std"), seat("C", "vip")}, show.Categories), false},
		{"another category", sm([]*ledgerpb.Seat{seat("A", "std"), seat("A", "std"), seat("B", "std")}, show.Categories), false},
		{"another price", sm(same, []*ledgerpb.Category{show.Categories[0], {Name: "vip", PriceMinor: 201, Currency: "EUR"}}), false},
	}
	for _, tt := range tests {
		if got := sameLayout(tt.sm, show); got != tt.want {
			t.Errorf("sameLayout(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
