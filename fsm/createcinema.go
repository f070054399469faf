package fsm

import (
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// createCinema stores a cinema of an existing city with its screens
// (fields and layouts checked by validateOp), and indexes it under the
// city. Each screen's seat_count is computed here, whatever the request
// said, so that equal layouts make equal records.
func (tx *txn) createCinema(c *ledgerpb.Cinema) *ledgerpb.Result {
	if !tx.get(tx.m.cityKey(c.CityId), &ledgerpb.City{}) {
		return reject(ledgerpb.Code_CODE_CITY_NOT_FOUND, "city %s not found", c.CityId)
	}
	rec := proto.Clone(c).(*ledgerpb.Cinema)
	for _, s := range rec.Screens {
		s.SeatCount = 0
		for _, r := range s.Rows {
			s.SeatCount += r.Seats
		}
	}
	if !tx.putOnce(tx.m.cinemaKey(c.CinemaId), rec, &ledgerpb.Cinema{}) {
		return reject(ledgerpb.Code_CODE_CINEMA_EXISTS, "cinema %s already exists with other fields", c.CinemaId)
	}
	tx.mark(append(tx.m.cityCinemaPrefix(c.CityId), c.CinemaId...))
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
