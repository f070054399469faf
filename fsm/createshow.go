package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// createShow stores a show with its layout (fields checked by validateOp)
// and the key of its hold tokens. Seats start FREE (no hold owns them) and
// are not stored, so a show costs two keys however large it is.
func (tx *txn) createShow(c *ledgerpb.CreateShowCmd) *ledgerpb.Result {
	if tx.layout(c.Show.ShowId) != nil {
		return reject(ledgerpb.Code_CODE_SHOW_EXISTS, "show %s already exists", c.Show.ShowId)
	}
	tx.put(tx.m.showKey(c.Show.ShowId), c.Show)
	tx.set(tx.m.showTokenKey(c.Show.ShowId), c.TokenKey)
	l := tx.m.led.sharedLayout(c.Show)
	l.tokenKey = append([]byte(nil), c.TokenKey...)
	tx.m.led.addShow(l)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}
