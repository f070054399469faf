// This file proves that catalog queries answer with the listing or the
// code of the record they name that is missing, reading dates in the
// city's zone, and that each code reads back as its error.
package catalog

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestCatalogQuery(t *testing.T) {
	db, err := fsm.OpenDB(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m, err := fsm.NewMachine(db, 0)
	if err != nil {
		t.Fatal(err)
	}
	tokyo := func(d, h int) int64 {
		return time.Date(2026, 5, d, h, 0, 0, 0, time.FixedZone("JST", 9*3600)).UnixMilli()
	}
	cmds := []*ledgerpb.CatalogCmd{
		{Op: &ledgerpb.CatalogCmd_CreateCity{CreateCity: &ledgerpb.CreateCityCmd{City: &ledgerpb.City{CityId: "tyo", Name: "Tokyo", TimeZone: "Asia/Tokyo"}}}},
		{Op: &ledgerpb.CatalogCmd_CreateCinema{CreateCinema: &ledgerpb.CreateCinemaCmd{Cinema: &ledgerpb.Cinema{CinemaId: "toho", CityId: "tyo", Name: "Toho Shinjuku",
			Screens: []*ledgerpb.Screen{{ScreenId: "s1", Rows: []*ledgerpb.Row{{Name: "A", Seats: 4, Category: "std"}}, Categories: []*ledgerpb.Category{{Name: "std", Currency: "JPY"}}}}}}}},
		{Op: &ledgerpb.CatalogCmd_CreateMovie{CreateMovie: &ledgerpb.CreateMovieCmd{Movie: &ledgerpb.Movie{MovieId: "totoro", Title: "My Neighbor Totoro"}}}},
		// 08:00 and 23:00 on May 2 in Tokyo are May 1 and May 2 in UTC.
		{Op: &ledgerpb.CatalogCmd_ListShow{ListShow: &ledgerpb.ListShowCmd{ShowId: "early", CinemaId: "toho", ScreenId: "s1", MovieId: "totoro", StartsAtMs: tokyo(2, 8)}}},
		{Op: &ledgerpb.CatalogCmd_ListShow{ListShow: &ledgerpb.ListShowCmd{ShowId: "late", CinemaId: "toho", ScreenId: "s1", MovieId: "totoro", StartsAtMs: tokyo(2, 23)}}},
		{Op: &ledgerpb.CatalogCmd_ListShow{ListShow: &ledgerpb.ListShowCmd{ShowId: "next", CinemaId: "toho", ScreenId: "s1", MovieId: "totoro", StartsAtMs: tokyo(3, 1)}}},
	}
	for i, cc := range cmds {
		res := m.Apply(uint64(i+1), &ledgerpb.Command{ClientId: "admin", RequestId: string(rune('a' + i)), Op: &ledgerpb.Command_Catalog{Catalog: cc}})
		if res[0].Code != ledgerpb.Code_CODE_OK {
			t.Fatalf("Apply(%d) = %v, want OK", i+1, res[0])
		}
	}
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	tests := []struct {
		name string
		q    *ledgerpb.CatalogQuery
		code ledgerpb.Code
		want []string
	}{
		{"shows on May 2 in Tokyo", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, CinemaId: "toho", Date: "2026-05-02"}, ledgerpb.Code_CODE_OK, []string{"early", "late"}},
		{"shows today in Tokyo", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, CinemaId: "toho", NowMs: tokyo(3, 0)}, ledgerpb.Code_CODE_OK, []string{"next"}},
		{"search on May 2 in Tokyo", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH, CityId: "tyo", Query: "totoro", Date: "2026-05-02"}, ledgerpb.Code_CODE_OK, []string{"early", "late"}},
		{"search on May 2 in UTC", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH, Query: "neighbor", Date: "2026-05-02"}, ledgerpb.Code_CODE_OK, []string{"late", "next"}},
		{"search from now on", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH, NowMs: tokyo(2, 9)}, ledgerpb.Code_CODE_OK, []string{"late", "next"}},
		{"shows at an unknown cinema", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, CinemaId: "nope"}, ledgerpb.Code_CODE_CINEMA_NOT_FOUND, nil},
		{"search in an unknown city", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH, CityId: "nope"}, ledgerpb.Code_CODE_CITY_NOT_FOUND, nil},
		{"movies of an unknown city", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIES_IN_CITY, CityId: "nope"}, ledgerpb.Code_CODE_CITY_NOT_FOUND, nil},
		{"cinemas of an unknown movie", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMAS_IN_CITY, CityId: "tyo", MovieId: "nope"}, ledgerpb.Code_CODE_MOVIE_NOT_FOUND, nil},
		{"an unlisted show", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_LISTING, ShowId: "nope"}, ledgerpb.Code_CODE_SHOW_NOT_FOUND, nil},
		{"a bad date", &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, CinemaId: "toho", Date: "May 2"}, ledgerpb.Code_CODE_INVALID_ARGUMENT, nil},
	}
	for _, tt := range tests {
		ans, code, err := Query(v, tt.q)
		if err != nil {
			t.Fatalf("%s: Query = %v", tt.name, err)
		}
		var got []string
		if ans != nil {
			for _, l := range ans.Listings {
				got = append(got, l.ShowId)
			}
		}
		if code != tt.code || !slices.Equal(got, tt.want) {
			t.Errorf("%s: Query = %v %v, want %v %v", tt.name, code, got, tt.code, tt.want)
		}
	}
}

func TestErr(t *testing.T) {
	for code, want := range map[ledgerpb.Code]error{
		ledgerpb.Code_CODE_OK:               nil,
		ledgerpb.Code_CODE_CITY_NOT_FOUND:   ErrCityNotFound,
		ledgerpb.Code_CODE_CINEMA_NOT_FOUND: ErrCinemaNotFound,
		ledgerpb.Code_CODE_MOVIE_NOT_FOUND:  ErrMovieNotFound,
		ledgerpb.Code_CODE_SHOW_NOT_FOUND:   ErrNotListed,
		ledgerpb.Code_CODE_INVALID_ARGUMENT: ErrInvalidQuery,
	} {
		if got := Err(code); got != want {
			t.Errorf("Err(%v) = %v, want %v", code, got, want)
		}
		if want != nil && want != ErrInvalidQuery && !errors.Is(want, fsm.ErrNotFound) {
			t.Errorf("%v does not wrap fsm.ErrNotFound", want)
		}
	}
}
