package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// release gives a live hold's seats back. Releasing a released hold succeeds
// again; a confirmed booking cannot be released (refund.go cancels one).
func (tx *txn) release(client string, c *ledgerpb.ReleaseCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED, ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, h, "hold %s is a booking and cannot be released: refund it")
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return holdResult(h)
	}
	tx.closeHold(h, ledgerpb.HoldState_HOLD_STATE_CANCELLED)
	return holdResult(h)
}
