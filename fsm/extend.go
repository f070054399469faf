package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// extend moves a live hold's expiry to clock + ttl, for the payment step. It
// never moves it earlier, and never past created_at + HoldLifetimeMaxMs: a
// hold at its cap is answered OK with the unchanged expiry (the response
// carries both), so a client that extends on a timer learns where it stands.
func (tx *txn) extend(client string, c *ledgerpb.ExtendCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED, ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, h, "hold %s is a booking: nothing to extend")
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return stateReject(ledgerpb.Code_CODE_HOLD_CANCELLED, h, "hold %s was released")
	}
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = HoldTTLDefaultMs
	}
	at := min(max(h.ExpiresAtMs, tx.now+ttl), h.CreatedAtMs+HoldLifetimeMaxMs)
	if at < h.ExpiresAtMs {
		violated("extend of hold %s moves its expiry earlier", h.HoldId)
	}
	if at != h.ExpiresAtMs {
		h.ExpiresAtMs = at
		tx.putHold(tx.liveKey(h.ShowId, h.HoldId), h)
		tx.m.led.due(h) // its entry at the old expiry is stale now
		s := tx.m.led.shows[h.ShowId]
		var ref uint32 // the owners' reference of h, through a seat of it
		for _, id := range h.SeatIds[:min(len(h.SeatIds), 1)] {
			if n, ok := s.l.seatIndex(id); ok {
				ref = s.owners.ref(int(n))
			}
		}
		s.owners.refresh(h, ref)
		s.states.Store(nil) // its seats are held longer
	}
	return holdResult(h)
}
