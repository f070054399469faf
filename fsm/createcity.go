package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// createCity stores a city (fields checked by validateOp).
func (tx *txn) createCity(c *ledgerpb.City) *ledgerpb.Result {
	if !tx.putOnce(tx.m.cityKey(c.CityId), c, &ledgerpb.City{}) {
		return reject(ledgerpb.Code_CODE_CITY_EXISTS, "city %s already exists with other fields", c.CityId)
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
