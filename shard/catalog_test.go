// This file proves the catalog's routing pieces that are pure: the catalog
// group is fixed by the reserved key; a browse date is one calendar day in
// the city's time zone (23 or 25 hours across a DST change, never a
// shifted day); and catalog queries answer with the listing or the code of
// the record they name that is missing, reading dates in the city's zone.
package shard

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestCatalogGroup(t *testing.T) {
	for _, groups := range []uint32{1, 8, 1024} {
		m := Map{Groups: groups}
		if got, want := m.CatalogGroup(), m.GroupFor(CatalogKey); got != want {
			t.Errorf("Map{%d}.CatalogGroup() = %d, want GroupFor(%q) = %d", groups, got, CatalogKey, want)
		}
	}
	// The catalog's group is part of the on-disk format.
	if got := (Map{Groups: 8}).CatalogGroup(); got != 3 {
		t.Errorf("Map{8}.CatalogGroup() = %d, want 3 (moving the catalog strands existing data)", got)
	}
}

func TestDayWindow(t *testing.T) {
	london, err := time.LoadLocation("Europe/London")
	if err != nil {
		t.Fatal(err)
	}
	hour := int64(time.Hour / time.Millisecond)
	now := time.Date(2026, 3, 29, 12, 0, 0, 0, london).UnixMilli()
	tests := []struct {
		date     string
		loc      *time.Location
		today    bool
		from, to int64
		ok       bool
	}{
		{"2026-01-10", time.UTC, false, time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 1, 11, 0, 0, 0, 0, time.UTC).UnixMilli(), true},
		// London's clocks go forward on 2026-03-29: a day of 23 hours.
		{"2026-03-29", london, false, time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli() + 23*hour, true},
		// ... and back on 2026-10-25: 25 hours, starting at 23:00 UTC.
		{"2026-10-25", london, false, time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 10, 24, 23, 0, 0, 0, time.UTC).UnixMilli() + 25*hour, true},
		{"", london, true, time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli(), time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC).UnixMilli() + 23*hour, true},
		{"", london, false, now, math.MaxInt64, true},
		{"2026-02-30", time.UTC, false, 0, 0, false},
		{"29/03/2026", time.UTC, false, 0, 0, false},
	}
	for _, tt := range tests {
		from, to, ok := DayWindow(tt.date, tt.loc, now, tt.today)
		if from != tt.from || to != tt.to || ok != tt.ok {
			t.Errorf("DayWindow(%q, %v, today=%v) = %d, %d, %v, want %d, %d, %v", tt.date, tt.loc, tt.today, from, to, ok, tt.from, tt.to, tt.ok)
		}
	}
	if Zone("") != time.UTC || Zone("Not/AZone") != time.UTC || Zone("Europe/London").String() != "Europe/London" {
		t.Errorf(`Zone("") = %v, Zone("Not/AZone") = %v, Zone("Europe/London") = %v, want UTC, UTC, Europe/London`, Zone(""), Zone("Not/AZone"), Zone("Europe/London"))
	}
}

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
		ans, code, err := catalogQuery(v, tt.q)
		if err != nil {
			t.Fatalf("%s: catalogQuery = %v", tt.name, err)
		}
		var got []string
		if ans != nil {
			for _, l := range ans.Listings {
				got = append(got, l.ShowId)
			}
		}
		if code != tt.code || !slices.Equal(got, tt.want) {
			t.Errorf("%s: catalogQuery = %v %v, want %v %v", tt.name, code, got, tt.code, tt.want)
		}
	}
}
