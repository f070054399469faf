package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// release gives a live hold's seats back. Releasing a released hold succeeds
// again; a confirmed booking cannot be released (refunds are their own
// command).
func (tx *txn) release(client string, c *ledgerpb.ReleaseCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
		r := reject(ledgerpb.Code_CODE_HOLD_CONFIRMED, "hold %s is confirmed and cannot be released", h.HoldId)
		r.HoldState = h.State
		return r
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return holdResult(h)
	}
	tx.closeHold(h, ledgerpb.HoldState_HOLD_STATE_CANCELLED)
	return holdResult(h)
}
