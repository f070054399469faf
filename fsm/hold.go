package fsm

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// hold takes 1..SeatsPerHoldMax seats of one show for client, all or nothing.
func (tx *txn) hold(client string, c *ledgerpb.HoldCmd, pos int) *ledgerpb.Result {
	l := tx.layout(c.ShowId)
	if l == nil {
		return reject(ledgerpb.Code_CODE_SHOW_NOT_FOUND, "show %s does not exist", c.ShowId)
	}
	idx := make([]uint16, len(c.SeatIds))
	var unknown []string
	for i, s := range c.SeatIds {
		n, ok := l.seatIndex(s)
		if !ok {
			unknown = append(unknown, s)
		}
		idx[i] = n
	}
	if len(unknown) > 0 {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_UNKNOWN_SEAT, SeatIds: unknown,
			Message: fmt.Sprintf("show %s has no seat %v", c.ShowId, unknown)}
	}
	taken, stale := tx.takenSeats(c.ShowId, c.SeatIds, idx)
	if len(taken) > 0 {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SEATS_TAKEN, SeatIds: taken,
			Message: fmt.Sprintf("seats %v are taken", taken)}
	}
	// Holds whose expiry passed by the log clock no longer own their seats.
	for _, h := range stale {
		tx.closeHold(h, ledgerpb.HoldState_HOLD_STATE_EXPIRED)
	}
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = HoldTTLDefaultMs
	}
	h := &ledgerpb.HoldRecord{
		HoldId:      fmt.Sprintf("h%d-%d-%d", tx.m.group, tx.index, pos),
		ShowId:      c.ShowId,
		SeatIds:     c.SeatIds,
		ClientId:    client,
		CreatedAtMs: tx.now,
		ExpiresAtMs: tx.now + ttl,
		State:       ledgerpb.HoldState_HOLD_STATE_HELD,
		Currency:    l.currency(),
		Revision:    tx.index,
	}
	for i, n := range idx {
		row, _ := l.seat(int(n))
		h.AmountMinor += l.price(row)
		key := tx.m.seatKey(c.ShowId, n)
		assertf(tx.m.unsafe.SkipSeatCheck || !tx.exists(key), "S1: seat %s of show %s is not free when hold %s takes it", c.SeatIds[i], c.ShowId, h.HoldId)
		tx.put(key, &ledgerpb.SeatRecord{HoldId: h.HoldId, State: ledgerpb.SeatState_HELD})
		tx.seatChanged(c.ShowId, c.SeatIds[i], ledgerpb.SeatState_HELD)
	}
	assertf(tx.holdRecord(h.HoldId) == nil, "hold id %s reused", h.HoldId)
	tx.put(tx.m.holdKey(h.HoldId), h)
	must(tx.b.Set(tx.m.expiryKey(h.ExpiresAtMs, h.HoldId), nil, nil), "write expiry index")
	tx.minExpiry = min(tx.minExpiry, h.ExpiresAtMs)
	return holdResult(h)
}

// takenSeats returns the seats owned by a live hold or a booking, and the
// expired holds (by the log clock) that still sit on some of the seats.
func (tx *txn) takenSeats(show string, ids []string, idx []uint16) ([]string, []*ledgerpb.HoldRecord) {
	var taken []string
	var stale []*ledgerpb.HoldRecord
	if tx.m.unsafe.SkipSeatCheck {
		return nil, nil
	}
	seen := map[string]bool{}
	for i, n := range idx {
		rec := &ledgerpb.SeatRecord{}
		if !tx.get(tx.m.seatKey(show, n), rec) {
			continue
		}
		h := tx.holdRecord(rec.HoldId)
		assertf(h != nil && h.ShowId == show && containsSeat(h.SeatIds, ids[i]),
			"S1: seat %s of show %s points at hold %s that does not own it", ids[i], show, rec.HoldId)
		if rec.State == ledgerpb.SeatState_HELD && h.State == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.ExpiresAtMs {
			if !seen[h.HoldId] {
				seen[h.HoldId] = true
				stale = append(stale, h)
			}
			continue
		}
		taken = append(taken, ids[i])
	}
	return taken, stale
}

// exists reports whether key is present. A read error panics like any other
// on the apply path: treating it as "absent" would let the S1 check pass.
func (tx *txn) exists(key []byte) bool {
	_, closer, err := tx.b.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false
	}
	must(err, "read")
	closer.Close()
	return true
}

func containsSeat(seats []string, s string) bool {
	for _, x := range seats {
		if x == s {
			return true
		}
	}
	return false
}

// closeHold ends a live hold: its seats become FREE and it leaves the expiry
// index. state is EXPIRED or CANCELLED.
func (tx *txn) closeHold(h *ledgerpb.HoldRecord, state ledgerpb.HoldState) {
	assertf(h.State == ledgerpb.HoldState_HOLD_STATE_HELD, "closing hold %s in state %s", h.HoldId, h.State)
	tx.eachHeldSeat(h, func(seat string, key []byte, _ *ledgerpb.SeatRecord) {
		tx.del(key)
		tx.seatChanged(h.ShowId, seat, ledgerpb.SeatState_FREE)
	})
	tx.del(tx.m.expiryKey(h.ExpiresAtMs, h.HoldId))
	h.State = state
	h.ClosedAtMs = tx.now
	tx.put(tx.m.holdKey(h.HoldId), h)
}

// eachHeldSeat calls fn with the id, key and record of every seat of a live
// hold, asserting first that the seat is held by that hold (S1).
func (tx *txn) eachHeldSeat(h *ledgerpb.HoldRecord, fn func(seat string, key []byte, rec *ledgerpb.SeatRecord)) {
	l := tx.layout(h.ShowId)
	assertf(l != nil, "hold %s names missing show %s", h.HoldId, h.ShowId)
	for _, s := range h.SeatIds {
		n, ok := l.seatIndex(s)
		assertf(ok, "hold %s names unknown seat %s", h.HoldId, s)
		key := tx.m.seatKey(h.ShowId, n)
		rec := &ledgerpb.SeatRecord{}
		held := tx.get(key, rec) && rec.HoldId == h.HoldId && rec.State == ledgerpb.SeatState_HELD
		if !held && tx.m.unsafe.SkipSeatCheck {
			continue // a later double grant took the seat
		}
		assertf(held, "S1: seat %s of live hold %s is not held by it", s, h.HoldId)
		fn(s, key, rec)
	}
}

// holdResult is the result of a command that names a hold.
func holdResult(h *ledgerpb.HoldRecord) *ledgerpb.Result {
	return &ledgerpb.Result{
		Code:        ledgerpb.Code_CODE_OK,
		HoldId:      h.HoldId,
		SeatIds:     h.SeatIds,
		ExpiresAtMs: h.ExpiresAtMs,
		HoldState:   h.State,
		AmountMinor: h.AmountMinor,
		Currency:    h.Currency,
	}
}

// liveHold loads the hold a confirm or release names and checks it belongs
// to show and client. It returns the hold or the rejection.
func (tx *txn) liveHold(client, show, id string) (*ledgerpb.HoldRecord, *ledgerpb.Result) {
	h := tx.holdRecord(id)
	if h == nil || h.ShowId != show {
		return nil, reject(ledgerpb.Code_CODE_HOLD_NOT_FOUND, "show %s has no hold %s", show, id)
	}
	if h.ClientId != client {
		return nil, reject(ledgerpb.Code_CODE_NOT_HOLD_OWNER, "hold %s belongs to another client", id)
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_EXPIRED ||
		(h.State == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.ExpiresAtMs) {
		r := reject(ledgerpb.Code_CODE_HOLD_EXPIRED, "hold %s expired", id)
		r.HoldState = ledgerpb.HoldState_HOLD_STATE_EXPIRED
		return nil, r
	}
	return h, nil
}
