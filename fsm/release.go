package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// release gives a live hold's seats back. Releasing a released hold succeeds
// again; a confirmed booking cannot be released (refund.go cancels one).
func (tx *txn) release(client string, c *ledgerpb.ReleaseCmd) *ledgerpb.Result {
	r, ended, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	const booking = "hold %s is a booking and cannot be released: refund it"
	if ended != nil {
		switch ended.State {
		case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
			return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, ended.HoldId, ended.State, booking)
		case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
			return holdResult(ended)
		}
		endedUnexpected(ended)
	}
	if h := tx.m.led.holds.at(r); h.state == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, c.HoldId, h.state, booking)
	}
	return tx.closeHold(r, ledgerpb.HoldState_HOLD_STATE_CANCELLED, true)
}
