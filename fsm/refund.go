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
	l := tx.layout(h.ShowId)
	assertf(l != nil, "booking %s names missing show %s", h.HoldId, h.ShowId)
	for _, s := range h.SeatIds {
		n, ok := l.seatIndex(s)
		assertf(ok, "booking %s names unknown seat %s", h.HoldId, s)
		key := tx.m.seatKey(h.ShowId, n)
		rec := &ledgerpb.SeatRecord{}
		booked := tx.get(key, rec) && rec.HoldId == h.HoldId && rec.State == ledgerpb.SeatState_BOOKED
		assertf(booked || tx.m.unsafe.SkipSeatCheck, "S2: seat %s of booking %s is not booked by it", s, h.HoldId)
		if booked {
			tx.del(key)
			tx.seatChanged(h.ShowId, s, ledgerpb.SeatState_FREE)
		}
	}
	tx.seatsFreed(h.ShowId)
	h.State = ledgerpb.HoldState_HOLD_STATE_REFUNDED
	h.RefundedAtMs = tx.now
	h.RefundReason = c.Reason
	tx.put(tx.m.holdKey(h.HoldId), h)
	return holdResult(h)
}
