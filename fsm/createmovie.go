package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// createMovie stores a movie (fields checked by validateOp).
func (tx *txn) createMovie(m *ledgerpb.Movie) *ledgerpb.Result {
	if !tx.putOnce(tx.m.movieKey(m.MovieId), m, &ledgerpb.Movie{}) {
		return reject(ledgerpb.Code_CODE_MOVIE_EXISTS, "movie %s already exists with other fields", m.MovieId)
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
