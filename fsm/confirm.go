package fsm

import (
	"strings"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// confirm turns a live hold into a booking: its seats become BOOKED and stay
// so until a refund (S2). A hold whose expiry has passed by the log clock
// can never be confirmed.
func (tx *txn) confirm(client string, c *ledgerpb.ConfirmCmd) *ledgerpb.Result {
	h, rej := tx.liveHold(client, c.ShowId, c.HoldId, c.HoldToken)
	if rej != nil {
		return rej
	}
	switch h.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
		if h.PaymentRef == c.PaymentRef {
			return holdResult(h) // the same payment confirmed it: same booking
		}
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, h, "hold %s is already confirmed with another payment")
	case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return stateReject(ledgerpb.Code_CODE_HOLD_CONFIRMED, h, "hold %s was confirmed and then refunded")
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return stateReject(ledgerpb.Code_CODE_HOLD_CANCELLED, h, "hold %s was released")
	}
	s := tx.m.led.shows[h.ShowId]
	var ref uint32
	tx.eachHeldSeat(h, func(seat string, n uint16) {
		ref = s.owners.ref(int(n))
		tx.seatChanged(h.ShowId, seat, ledgerpb.SeatState_BOOKED)
	})
	tx.untrackHold(h)
	h.State = ledgerpb.HoldState_HOLD_STATE_CONFIRMED
	s.owners.refresh(h, ref) // its seats can no longer be taken
	tx.m.led.live--
	// The booking keeps its seats in the ledger (and its record stays
	// under its show's live holds); they now read BOOKED, so the show's
	// seat states must be built again.
	s.states.Store(nil)
	h.PaymentRef = strings.Clone(c.PaymentRef) // not the entry's bytes (decodeEntry)
	h.ClosedAtMs = tx.now
	tx.holdChanged(h, ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED)
	tx.putHold(tx.liveKey(h.ShowId, h.HoldId), h)
	tx.set(tx.bookingKey(h.ClientId, tx.index, h.HoldId), nil)
	return holdResult(h)
}
