package catalog

import (
	"errors"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Query runs a catalog query on one view of the catalog group: the
// listing, or the code of the record it names that does not exist (an
// anchor of a listing included: the movies of an unknown city are not an
// empty list). An error is the view's, not the query's.
func Query(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	ans := &ledgerpb.CatalogAnswer{}
	size := int(q.GetPageSize())
	var err error
	switch q.GetKind() {
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITIES:
		ans.Cities, ans.NextAfter, err = v.Cities(q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIES_IN_CITY:
		if _, err := v.City(q.CityId); err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		ans.Movies, ans.NextAfter, err = v.MoviesInCity(q.CityId, q.NowMs, q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMAS_IN_CITY:
		if _, err := v.City(q.CityId); err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		if q.MovieId != "" {
			if _, err := v.Movie(q.MovieId); err != nil {
				return nil, ledgerpb.Code_CODE_MOVIE_NOT_FOUND, notFound(err)
			}
		}
		ans.Cinemas, ans.NextAfter, err = v.CinemasInCity(q.CityId, q.MovieId, q.NowMs, q.PageAfter, size)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH:
		return showsQuery(v, q)
	default:
		return pointQuery(v, q)
	}
	if err != nil {
		return nil, 0, err
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// showsQuery lists shows at a cinema or by search, reading the date in the
// city's time zone.
func showsQuery(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	city := q.CityId
	if q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA {
		c, err := v.Cinema(q.CinemaId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CINEMA_NOT_FOUND, notFound(err)
		}
		city = c.CityId
	}
	loc := time.UTC
	if city != "" {
		c, err := v.City(city)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		loc = Zone(c.TimeZone)
	}
	from, to, ok := DayWindow(q.Date, loc, q.NowMs, q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA)
	if !ok {
		return nil, ledgerpb.Code_CODE_INVALID_ARGUMENT, nil
	}
	ans := &ledgerpb.CatalogAnswer{}
	var err error
	if q.Kind == ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA {
		ans.Listings, ans.NextAfter, err = v.ShowsAtCinema(q.CinemaId, from, to, q.PageAfter, int(q.PageSize))
	} else {
		s := fsm.ShowSearch{Words: fsm.SearchWords(q.Query), City: q.CityId, FromMs: from, ToMs: to}
		ans.Listings, ans.NextAfter, err = v.SearchShows(s, q.PageAfter, int(q.PageSize))
	}
	if err != nil {
		return nil, 0, err
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// pointQuery reads one record.
func pointQuery(v *fsm.View, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, ledgerpb.Code, error) {
	ans := &ledgerpb.CatalogAnswer{}
	switch q.GetKind() {
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITY:
		c, err := v.City(q.CityId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CITY_NOT_FOUND, notFound(err)
		}
		ans.Cities = append(ans.Cities, c)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMA:
		c, err := v.Cinema(q.CinemaId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_CINEMA_NOT_FOUND, notFound(err)
		}
		ans.Cinemas = append(ans.Cinemas, c)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIE:
		m, err := v.Movie(q.MovieId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_MOVIE_NOT_FOUND, notFound(err)
		}
		ans.Movies = append(ans.Movies, m)
	case ledgerpb.CatalogQueryKind_CATALOG_QUERY_LISTING:
		l, err := v.Listing(q.ShowId)
		if err != nil {
			return nil, ledgerpb.Code_CODE_SHOW_NOT_FOUND, notFound(err)
		}
		ans.Listings = append(ans.Listings, l)
	default:
		return nil, ledgerpb.Code_CODE_INVALID_ARGUMENT, nil
	}
	return ans, ledgerpb.Code_CODE_OK, nil
}

// notFound passes on a read error that is not "not found" (a code answers
// that one).
func notFound(err error) error {
	if errors.Is(err, fsm.ErrNotFound) {
		return nil
	}
	return err
}
