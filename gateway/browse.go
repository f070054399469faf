package gateway

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/seatledger/seatledger/catalog"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// Browse calls: served by any replica of the catalog group within
// shard.BrowseStalenessMax (stated in each answer's Freshness), and show
// listings carry free-seat counts from bounded-stale reads of the shows'
// groups. None of them proposes or asks a leader to confirm its
// leadership, so browsing never loads the booking path.

// ListCities lists every city.
func (c *Catalog) ListCities(ctx context.Context, req *ledgerpb.ListCitiesRequest) (*ledgerpb.ListCitiesResponse, error) {
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITIES, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	ans, err := c.browse(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.ListCitiesResponse{Cities: ans.Cities, NextPageToken: pageToken(ans.NextAfter), Freshness: freshness(ans)}, nil
}

// ListMovies lists the movies showing in a city from now on.
func (c *Catalog) ListMovies(ctx context.Context, req *ledgerpb.ListMoviesRequest) (*ledgerpb.ListMoviesResponse, error) {
	if fe := fsm.ValidateCatalogID("city_id", req.CityId); fe != nil {
		return nil, fieldError(fe)
	}
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIES_IN_CITY, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	q.CityId = req.CityId
	ans, err := c.browse(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.ListMoviesResponse{Movies: ans.Movies, NextPageToken: pageToken(ans.NextAfter), Freshness: freshness(ans)}, nil
}

// ListCinemas lists a city's cinemas, or those showing a movie from now on.
func (c *Catalog) ListCinemas(ctx context.Context, req *ledgerpb.ListCinemasRequest) (*ledgerpb.ListCinemasResponse, error) {
	if fe := fsm.ValidateCatalogID("city_id", req.CityId); fe != nil {
		return nil, fieldError(fe)
	}
	if req.MovieId != "" {
		if fe := fsm.ValidateCatalogID("movie_id", req.MovieId); fe != nil {
			return nil, fieldError(fe)
		}
	}
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMAS_IN_CITY, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	q.CityId, q.MovieId = req.CityId, req.MovieId
	ans, err := c.browse(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.ListCinemasResponse{Cinemas: ans.Cinemas, NextPageToken: pageToken(ans.NextAfter), Freshness: freshness(ans)}, nil
}

// GetCinema returns a cinema with its screens' layouts.
func (c *Catalog) GetCinema(ctx context.Context, req *ledgerpb.GetCinemaRequest) (*ledgerpb.Cinema, error) {
	if fe := fsm.ValidateCatalogID("cinema_id", req.CinemaId); fe != nil {
		return nil, fieldError(fe)
	}
	ans, err := c.browse(ctx, &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_CINEMA, CinemaId: req.CinemaId})
	if err != nil {
		return nil, err
	}
	return ans.Cinemas[0], nil
}

// GetCity returns a city.
func (c *Catalog) GetCity(ctx context.Context, req *ledgerpb.GetCityRequest) (*ledgerpb.City, error) {
	if fe := fsm.ValidateCatalogID("city_id", req.CityId); fe != nil {
		return nil, fieldError(fe)
	}
	ans, err := c.browse(ctx, &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_CITY, CityId: req.CityId})
	if err != nil {
		return nil, err
	}
	return ans.Cities[0], nil
}

// GetMovie returns a movie. Unlike ListMovies it finds a movie without
// shows from now on, so a client can tell an existing movie from a new one
// before creating it.
func (c *Catalog) GetMovie(ctx context.Context, req *ledgerpb.GetMovieRequest) (*ledgerpb.Movie, error) {
	if fe := fsm.ValidateCatalogID("movie_id", req.MovieId); fe != nil {
		return nil, fieldError(fe)
	}
	ans, err := c.browse(ctx, &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_MOVIE, MovieId: req.MovieId})
	if err != nil {
		return nil, err
	}
	return ans.Movies[0], nil
}

// GetShowListing returns a listed show with its free seats, whatever its
// date. A show that exists but is not listed (made with CreateShow, or a
// schedule cut off half way) is SHOW_NOT_FOUND here.
func (c *Catalog) GetShowListing(ctx context.Context, req *ledgerpb.GetShowListingRequest) (*ledgerpb.ShowListing, error) {
	if !fsm.ValidID(req.ShowId, fsm.ShowIDLenMax) {
		return nil, fieldError(&fsm.FieldError{Field: "show_id", Message: fmt.Sprintf("must be 1..%d characters of [A-Za-z0-9._:-]", fsm.ShowIDLenMax)})
	}
	ans, err := c.browse(ctx, &ledgerpb.CatalogQuery{Kind: ledgerpb.CatalogQueryKind_CATALOG_QUERY_LISTING, ShowId: req.ShowId})
	if err != nil {
		return nil, err
	}
	return c.withSeats(ctx, ans.Listings)[0], nil
}

// ListShows lists a cinema's shows on a date, with free seats.
func (c *Catalog) ListShows(ctx context.Context, req *ledgerpb.ListShowsRequest) (*ledgerpb.ListShowsResponse, error) {
	if fe := fsm.ValidateCatalogID("cinema_id", req.CinemaId); fe != nil {
		return nil, fieldError(fe)
	}
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_SHOWS_AT_CINEMA, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	if q.Date, err = validDate(req.Date); err != nil {
		return nil, err
	}
	q.CinemaId = req.CinemaId
	ans, err := c.browse(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.ListShowsResponse{Shows: c.withSeats(ctx, ans.Listings), NextPageToken: pageToken(ans.NextAfter), Freshness: freshness(ans)}, nil
}

// Search finds shows by keywords, city and date, with free seats.
func (c *Catalog) Search(ctx context.Context, req *ledgerpb.SearchRequest) (*ledgerpb.SearchResponse, error) {
	if fe := fsm.ValidateSearchQuery(req.Q); fe != nil {
		return nil, fieldError(fe)
	}
	if req.CityId != "" {
		if fe := fsm.ValidateCatalogID("city_id", req.CityId); fe != nil {
			return nil, fieldError(fe)
		}
	}
	q, err := pageQuery(ledgerpb.CatalogQueryKind_CATALOG_QUERY_SEARCH, req.PageSize, req.PageToken)
	if err != nil {
		return nil, err
	}
	if q.Date, err = validDate(req.Date); err != nil {
		return nil, err
	}
	q.Query, q.CityId = req.Q, req.CityId
	ans, err := c.browse(ctx, q)
	if err != nil {
		return nil, err
	}
	return &ledgerpb.SearchResponse{Shows: c.withSeats(ctx, ans.Listings), NextPageToken: pageToken(ans.NextAfter), Freshness: freshness(ans)}, nil
}

// browse runs a bounded-stale catalog query, "from now on" by this
// gateway's clock.
func (c *Catalog) browse(ctx context.Context, q *ledgerpb.CatalogQuery) (*ledgerpb.CatalogAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	q.NowMs = c.now().UnixMilli()
	ans, err := c.router.Catalog(ctx, q, false)
	if err != nil {
		return nil, routeError(err)
	}
	return ans, nil
}

// withSeats turns listings into the API's shows with their free seats.
func (c *Catalog) withSeats(ctx context.Context, ls []*ledgerpb.ListingRecord) []*ledgerpb.ShowListing {
	ids := make([]string, len(ls))
	for i, l := range ls {
		ids[i] = l.ShowId
	}
	counts := c.router.SeatCounts(ctx, ids)
	out := make([]*ledgerpb.ShowListing, len(ls))
	for i, l := range ls {
		out[i] = showListing(l, counts[l.ShowId])
	}
	return out
}

// showListing is a listed show with its seat count (nil: unknown).
func showListing(l *ledgerpb.ListingRecord, count *ledgerpb.ShowSeatCount) *ledgerpb.ShowListing {
	s := &ledgerpb.ShowListing{ShowId: l.ShowId, MovieId: l.MovieId, MovieTitle: l.MovieTitle,
		CinemaId: l.CinemaId, CinemaName: l.CinemaName, ScreenId: l.ScreenId, ScreenName: l.ScreenName,
		CityId: l.CityId, StartsAt: ms(l.StartsAtMs), TotalSeats: l.TotalSeats}
	if count != nil && count.Found {
		s.FreeSeats, s.FreeSeatsKnown, s.FreeSeatsAsOf = count.Free, true, ms(count.AsOfMs)
	}
	return s
}

func freshness(ans *ledgerpb.CatalogAnswer) *ledgerpb.Freshness {
	return &ledgerpb.Freshness{Revision: ans.Revision, AsOf: ms(ans.AsOfMs),
		MaxStaleness: durationpb.New(shard.BrowseStalenessMax), ServedBy: ans.ServedBy}
}

// pageQuery checks a page's size and token.
func pageQuery(kind ledgerpb.CatalogQueryKind, size uint32, token string) (*ledgerpb.CatalogQuery, error) {
	if size > fsm.PageSizeMax {
		return nil, fieldError(&fsm.FieldError{Field: "page_size", Message: fmt.Sprintf("must be at most %d", fsm.PageSizeMax)})
	}
	if size == 0 {
		size = fsm.PageSizeDefault
	}
	q := &ledgerpb.CatalogQuery{Kind: kind, PageSize: size}
	if token == "" {
		return q, nil
	}
	after, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(token) > fsm.PageTokenLenMax || len(after) == 0 {
		return nil, fieldError(&fsm.FieldError{Field: "page_token", Message: "is not a page token of this listing"})
	}
	q.PageAfter = after
	return q, nil
}

// pageToken is the opaque token of the page after one ("" for none).
func pageToken(after []byte) string {
	if after == nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(after)
}

// validDate checks a YYYY-MM-DD date ("" is allowed).
func validDate(d string) (string, error) {
	if d == "" {
		return "", nil
	}
	if _, err := time.Parse(catalog.DateLayout, d); err != nil {
		return "", fieldError(&fsm.FieldError{Field: "date", Message: "must be a date YYYY-MM-DD"})
	}
	return d, nil
}

func isNotListed(err error) bool { return errors.Is(err, catalog.ErrNotListed) }
