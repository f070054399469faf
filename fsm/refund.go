package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// refund cancels a confirmed booking: CONFIRMED -> REFUNDED, and its seats
// become FREE for the next hold. Refunding a refunded booking succeeds
// again; a hold that was never confirmed cannot be refunded.
func (tx *txn) refund(client string, c *ledgerpb.RefundCmd) *ledgerpb.Result {
	r, ended, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	const notConfirmed = "hold %s is not a confirmed booking"
	if ended != nil {
		switch ended.State {
		case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
			return holdResult(ended)
		case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
			return stateReject(ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED, ended.HoldId, ended.State, notConfirmed)
		}
		endedUnexpected(ended)
	}
	led := &tx.m.led
	h := led.holds.at(r)
	if h.state == ledgerpb.HoldState_HOLD_STATE_HELD {
		return stateReject(ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED, c.HoldId, h.state, notConfirmed)
	}
	s := led.showOf(r)
	var seats [SeatsPerHoldMax]string
	for i, id := range led.holds.seatIDs(seats[:0], r) {
		n := h.seat[i]
		booked := s.owners.ref(int(n)) == r
		if !(booked || tx.m.unsafe.skipSeatCheck()) {
			violated("S2: seat %s of booking %s is not booked by it", id, c.HoldId)
		}
		if booked {
			tx.clearSeat(s, n)
			tx.seatChanged(s.id, id, ledgerpb.SeatState_FREE)
		}
	}
	b := led.holds.record(r, s.id) // the booking's own copy: the slot goes
	led.holds.remove(r)
	tx.del(tx.liveKey(s.id, b.HoldId))
	tx.seatsFreed(s.id)
	b.State = ledgerpb.HoldState_HOLD_STATE_REFUNDED
	b.RefundedAtMs = tx.now
	b.RefundReason = c.Reason
	tx.holdChanged(b, ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_REFUNDED)
	tx.putHold(tx.holdKey(b.HoldId), b)
	// Door scanners that check tickets offline follow the show's refunds.
	tx.set(tx.m.revokedKey(s.id, tx.index, b.HoldId), nil)
	return holdResult(b)
}
