package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// confirm turns a live hold into a booking: its seats become BOOKED and stay
// so (S2). A hold whose expiry has passed by the log clock can never be
// confirmed.
func (tx *txn) confirm(client string, c *ledgerpb.ConfirmCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
		if h.PaymentRef == c.PaymentRef {
			return holdResult(h) // the same payment confirmed it: same booking
		}
		r := reject(ledgerpb.Code_CODE_HOLD_CONFIRMED, "hold %s is already confirmed with another payment", h.HoldId)
		r.HoldState = h.State
		return r
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		r := reject(ledgerpb.Code_CODE_HOLD_CANCELLED, "hold %s was released", h.HoldId)
		r.HoldState = h.State
		return r
	}
	tx.eachHeldSeat(h, func(seat string, key []byte, rec *ledgerpb.SeatRecord) {
		rec.State = ledgerpb.SeatState_BOOKED
		tx.put(key, rec)
		tx.seatChanged(h.ShowId, seat, ledgerpb.SeatState_BOOKED)
	})
	tx.del(tx.m.expiryKey(h.ExpiresAtMs, h.HoldId))
	h.State = ledgerpb.HoldState_HOLD_STATE_CONFIRMED
	h.PaymentRef = c.PaymentRef
	h.ClosedAtMs = tx.now
	tx.put(tx.m.holdKey(h.HoldId), h)
	return holdResult(h)
}
