package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// extend moves a live hold's expiry to clock + ttl, for the payment step. It
// never moves it earlier, and never past created_at + HoldLifetimeMaxMs: a
// hold at its cap is answered OK with the unchanged expiry (the response
// carries both), so a client that extends on a timer learns where it stands.
func (tx *txn) extend(client string, c *ledgerpb.ExtendCmd) *ledgerpb.Result {
	r, ended, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	if ended != nil {
		switch ended.State {
		case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
			return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, ended.HoldId, ended.State, "hold %s is a booking: nothing to extend")
		case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
			return stateReject(ledgerpb.Code_CODE_HOLD_CANCELLED, ended.HoldId, ended.State, "hold %s was released")
		}
		endedUnexpected(ended)
	}
	led := &tx.m.led
	h := led.holds.at(r)
	if h.state == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, c.HoldId, h.state, "hold %s is a booking: nothing to extend")
	}
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = HoldTTLDefaultMs
	}
	at := min(max(h.expiresAt, tx.now+ttl), h.createdAt+HoldLifetimeMaxMs)
	if at < h.expiresAt {
		violated("extend of hold %s moves its expiry earlier", c.HoldId)
	}
	if at != h.expiresAt {
		h.expiresAt = at
		led.due(r) // it moves in the expiry queue
		s := led.showOf(r)
		v := tx.view(r)
		tx.putHold(tx.liveKey(s.id, v.HoldId), v)
		s.dropStates() // its seats are held longer
	}
	return tx.slotResult(r, false)
}
