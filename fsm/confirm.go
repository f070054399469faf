package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// confirm turns a live hold into a booking: its seats become BOOKED and stay
// so until a refund (S2). A hold whose expiry has passed by the log clock
// can never be confirmed.
func (tx *txn) confirm(client string, c *ledgerpb.ConfirmCmd) *ledgerpb.Result {
	r, ended, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	if ended != nil {
		switch ended.State {
		case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
			return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, ended.HoldId, ended.State, "hold %s was confirmed and then refunded")
		case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
			return stateReject(ledgerpb.Code_CODE_HOLD_CANCELLED, ended.HoldId, ended.State, "hold %s was released")
		}
		endedUnexpected(ended)
	}
	led := &tx.m.led
	if h := led.holds.at(r); h.state == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		if led.holds.payment(r) == c.PaymentRef {
			return tx.slotResult(r, false) // the same payment confirmed it: same booking
		}
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, c.HoldId, h.state, "hold %s is already confirmed with another payment")
	}
	s := led.showOf(r)
	sc := tx.changesOf(s.id)
	tx.eachHeldSeat(r, func(seat string, _ uint16) {
		sc.seatChanged(seat, ledgerpb.SeatState_BOOKED)
	})
	led.untrack(r)
	led.undue(r) // its seats can no longer be taken
	led.live--
	// The booking keeps its seats in the ledger (and its record stays
	// under its show's live holds); they now read BOOKED, so the show's
	// seat states must be built again.
	s.dropStates()
	led.holds.setPayment(r, c.PaymentRef) // a copy: not the entry's bytes (decodeEntry)
	h := led.holds.at(r)
	h.state = ledgerpb.HoldState_HOLD_STATE_CONFIRMED
	h.closedAt = tx.now
	v := tx.view(r)
	tx.holdChanged(v, ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED)
	tx.putHold(tx.liveKey(s.id, v.HoldId), v)
	tx.set(tx.bookingKey(v.ClientId, tx.index, v.HoldId), nil)
	return tx.slotResult(r, false)
}
