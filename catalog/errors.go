package catalog

import (
	"errors"
	"fmt"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Errors of catalog reads that name something the catalog lacks; each
// wraps fsm.ErrNotFound.
var (
	ErrCityNotFound   = fmt.Errorf("catalog: city %w", fsm.ErrNotFound)
	ErrCinemaNotFound = fmt.Errorf("catalog: cinema %w", fsm.ErrNotFound)
	ErrMovieNotFound  = fmt.Errorf("catalog: movie %w", fsm.ErrNotFound)
	ErrNotListed      = fmt.Errorf("catalog: show listing %w", fsm.ErrNotFound)
	// ErrInvalidQuery: the query's kind or date cannot be read (the
	// gateway validates both first).
	ErrInvalidQuery = errors.New("catalog: invalid query")
)

// Err is the error a query's result code stands for (Query's code, carried
// back in a forwarded read's answer); nil for CODE_OK and for the codes
// Query never answers.
func Err(code ledgerpb.Code) error {
	switch code {
	case ledgerpb.Code_CODE_CITY_NOT_FOUND:
		return ErrCityNotFound
	case ledgerpb.Code_CODE_CINEMA_NOT_FOUND:
		return ErrCinemaNotFound
	case ledgerpb.Code_CODE_MOVIE_NOT_FOUND:
		return ErrMovieNotFound
	case ledgerpb.Code_CODE_SHOW_NOT_FOUND:
		return ErrNotListed
	case ledgerpb.Code_CODE_INVALID_ARGUMENT:
		return ErrInvalidQuery
	}
	return nil
}
