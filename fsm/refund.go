package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// refund cancels a confirmed booking: CONFIRMED -> REFUNDED, and its seats
// become FREE for the next hold. Refunding a refunded booking succeeds
// again; a hold that was never confirmed cannot be refunded.
func (tx *txn) refund(client string, c *ledgerpb.RefundCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return holdResult(h)
	case ledgerpb.HoldState_HOLD_STATE_HELD, ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return stateReject(ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED, h, "hold %s is not a confirmed booking")
	}
	s := tx.m.led.shows[h.ShowId]
	if !(s != nil && tx.m.led.holds[h.HoldId] == h) {
		violated("booking %s of show %s is not in the ledger", h.HoldId, h.ShowId)
	}
	var ref uint32
	for _, id := range h.SeatIds {
		n, ok := s.l.seatIndex(id)
		if !ok {
			violated("booking %s names unknown seat %s", h.HoldId, id)
		}
		booked := s.owners.at(int(n)) == h
		if !(booked || tx.m.unsafe.skipSeatCheck()) {
			violated("S2: seat %s of booking %s is not booked by it", id, h.HoldId)
		}
		if booked {
			ref = s.owners.ref(int(n))
			tx.clearSeat(s, n)
			tx.seatChanged(h.ShowId, id, ledgerpb.SeatState_FREE)
		}
	}
	s.owners.drop(h, ref)
	delete(tx.m.led.holds, h.HoldId)
	tx.del(tx.liveKey(h.ShowId, h.HoldId))
	tx.seatsFreed(h.ShowId)
	h.State = ledgerpb.HoldState_HOLD_STATE_REFUNDED
	h.RefundedAtMs = tx.now
	h.RefundReason = c.Reason
	tx.holdChanged(h, ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_REFUNDED)
	tx.putHold(tx.holdKey(h.HoldId), h)
	// Door scanners that check tickets offline follow the show's refunds.
	tx.set(tx.m.revokedKey(h.ShowId, tx.index, h.HoldId), nil)
	return holdResult(h)
}
