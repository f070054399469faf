package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// listShow lists a show (created in its own group by the gateway first) on
// a screen of a cinema, for a movie, at a start time. Rejections, in order:
// CODE_CINEMA_NOT_FOUND, CODE_SCREEN_NOT_FOUND, CODE_MOVIE_NOT_FOUND, then
// CODE_SHOW_LISTED when the show is listed with other fields. The listing
// is written with every browse index that must find it.
func (tx *txn) listShow(c *ledgerpb.ListShowCmd) *ledgerpb.Result {
	cinema := &ledgerpb.Cinema{}
	if !tx.get(tx.m.cinemaKey(c.CinemaId), cinema) {
		return reject(ledgerpb.Code_CODE_CINEMA_NOT_FOUND, "cinema %s not found", c.CinemaId)
	}
	var screen *ledgerpb.Screen
	for _, s := range cinema.Screens {
		if s.ScreenId == c.ScreenId {
			screen = s
		}
	}
	if screen == nil {
		return reject(ledgerpb.Code_CODE_SCREEN_NOT_FOUND, "cinema %s has no screen %s", c.CinemaId, c.ScreenId)
	}
	movie := &ledgerpb.Movie{}
	if !tx.get(tx.m.movieKey(c.MovieId), movie) {
		return reject(ledgerpb.Code_CODE_MOVIE_NOT_FOUND, "movie %s not found", c.MovieId)
	}
	rec := &ledgerpb.ListingRecord{
		ShowId: c.ShowId, MovieId: c.MovieId, MovieTitle: movie.Title,
		CinemaId: c.CinemaId, CinemaName: cinema.Name, ScreenId: c.ScreenId, ScreenName: screen.Name,
		CityId: cinema.CityId, StartsAtMs: c.StartsAtMs, TotalSeats: screen.SeatCount,
	}
	if !tx.putOnce(tx.m.listingKey(c.ShowId), rec, &ledgerpb.ListingRecord{}) {
		return reject(ledgerpb.Code_CODE_SHOW_LISTED, "show %s is listed with another screen, movie or start time", c.ShowId)
	}
	at := timeSuffix(c.StartsAtMs, c.ShowId)
	tx.mark(append(tx.m.cinemaShowPrefix(c.CinemaId), at...))
	tx.mark(append(tx.m.cityShowPrefix(cinema.CityId), at...))
	tx.mark(append(tx.m.showTimePrefix(), at...))
	tx.raiseLast(append(tx.m.cityMoviePrefix(cinema.CityId), c.MovieId...), c.StartsAtMs)
	tx.raiseLast(append(tx.m.cityMovieCinemaPrefix(cinema.CityId, c.MovieId), c.CinemaId...), c.StartsAtMs)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
