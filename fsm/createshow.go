package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// createShow stores a show with its layout (fields checked by validateOp). Seats start FREE, which is the
// absence of a seat record, so a show costs one key however large it is.
func (tx *txn) createShow(c *ledgerpb.CreateShowCmd) *ledgerpb.Result {
	if tx.layout(c.Show.ShowId) != nil {
		return reject(ledgerpb.Code_CODE_SHOW_EXISTS, "show %s already exists", c.Show.ShowId)
	}
	tx.put(tx.m.showKey(c.Show.ShowId), c.Show)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
