package fsm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// hold takes 1..SeatsPerHoldMax seats of one show for client, all or
// nothing: the named seats, or the best available (best.go).
func (tx *txn) hold(client string, c *ledgerpb.HoldCmd, pos int) *ledgerpb.Result {
	l := tx.layout(c.ShowId)
	if l == nil {
		return reject(ledgerpb.Code_CODE_SHOW_NOT_FOUND, "show %s does not exist", c.ShowId)
	}
	ids, idx, rej := tx.pickSeats(l, c)
	if rej != nil && rej.Code == ledgerpb.Code_CODE_SOLD_OUT && c.Wait {
		return tx.joinQueue(client, c, pos)
	}
	if rej == nil {
		rej = tx.admissionCheck(client, c) // waitroom.go
	}
	if rej != nil {
		return rej
	}
	if n := tx.liveHoldsOf(c.ShowId, client); n >= HoldsPerClientPerShowMax {
		r := reject(ledgerpb.Code_CODE_TOO_MANY_HOLDS, "client %s already has %d live holds in show %s (at most %d)", client, n, c.ShowId, HoldsPerClientPerShowMax)
		r.Limit = HoldsPerClientPerShowMax
		return r
	}
	taken, stale := tx.takenSeats(c.ShowId, ids, idx)
	if len(taken) > 0 {
		if c.Count != 0 {
			violated("S1: best available picked taken seats %v of show %s", taken, c.ShowId)
		}
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SEATS_TAKEN, SeatIds: taken,
			AlternativeSeatIds: tx.alternatives(l, c.ShowId, idx),
			Message:            fmt.Sprintf("seats %v are taken", taken)}
	}
	// Holds whose expiry passed by the log clock no longer own their seats.
	for _, h := range stale {
		tx.closeHold(h, ledgerpb.HoldState_HOLD_STATE_EXPIRED)
	}
	return tx.createHold(client, c, l, ids, idx, pos)
}

// pickSeats resolves a hold's seats: the named ones (CODE_UNKNOWN_SEAT for
// any the show lacks) or the best available (CODE_SOLD_OUT when too few are
// free). It returns their ids and layout indexes in the same order.
func (tx *txn) pickSeats(l *layout, c *ledgerpb.HoldCmd) ([]string, []uint16, *ledgerpb.Result) {
	if len(c.SeatIds) > 0 {
		// In tx's buffer: the hold uses them before the next command.
		idx := slices.Grow(tx.seatBuf[:0], len(c.SeatIds))[:len(c.SeatIds)]
		tx.seatBuf = idx
		var unknown []string
		for i, s := range c.SeatIds {
			n, ok := l.seatIndex(s)
			if !ok {
				unknown = append(unknown, s)
			}
			idx[i] = n
		}
		if len(unknown) > 0 {
			return nil, nil, &ledgerpb.Result{Code: ledgerpb.Code_CODE_UNKNOWN_SEAT, SeatIds: unknown,
				Message: fmt.Sprintf("show %s has no seat %v", c.ShowId, unknown)}
		}
		return c.SeatIds, idx, nil
	}
	if c.Category != "" && l.prices[c.Category] == nil {
		return nil, nil, invalid(fieldErr("category", "show %s has no category %s", c.ShowId, c.Category))
	}
	best := bestSeats(l, tx.holdFreeMap(c.ShowId, l), int(c.Count), c.Category)
	if best == nil {
		what := "free seats"
		if c.Category != "" {
			what = c.Category + " seats"
		}
		return nil, nil, reject(ledgerpb.Code_CODE_SOLD_OUT, "show %s has fewer than %d %s", c.ShowId, c.Count, what)
	}
	ids := make([]string, len(best))
	idx := make([]uint16, len(best))
	for i, n := range best {
		ids[i], idx[i] = l.seatID(n), uint16(n)
	}
	return ids, idx, nil
}

// alternatives suggests, for a conflict, the best available seats of the
// same number: of the requested seats' category when they share one, else
// of any. Nil when none fit.
func (tx *txn) alternatives(l *layout, show string, idx []uint16) []string {
	category := ""
	for i, n := range idx {
		row, _ := l.seat(int(n))
		if i == 0 {
			category = row.Category
		} else if row.Category != category {
			category = ""
			break
		}
	}
	free := tx.holdFreeMap(show, l)
	best := bestSeats(l, free, len(idx), category)
	if best == nil && category != "" {
		best = bestSeats(l, free, len(idx), "")
	}
	ids := make([]string, len(best))
	for i, n := range best {
		ids[i] = l.seatID(n)
	}
	return ids
}

// holdFreeMap is freeSeatMap in tx.freeBuf, for a hold's seats or its
// alternatives: used before the next command needs the buffer.
func (tx *txn) holdFreeMap(show string, l *layout) []bool {
	tx.freeBuf = tx.freeSeatMap(show, l, tx.freeBuf)
	return tx.freeBuf
}

// createHold writes a new live hold of free seats ids (layout indexes idx).
func (tx *txn) createHold(client string, c *ledgerpb.HoldCmd, l *layout, ids []string, idx []uint16, pos int) *ledgerpb.Result {
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = HoldTTLDefaultMs
	}
	// The command's seat ids are the entry's: ids the hold keeps are its
	// own (decodeEntry); pickSeats made the best available ones afresh.
	id, client, ids := holdStrings(tx.m.group, tx.index, pos, client, ids, len(c.SeatIds) > 0)
	h := &ledgerpb.HoldRecord{
		HoldId:      id,
		ShowId:      l.show.ShowId,
		SeatIds:     ids,
		ClientId:    client,
		CreatedAtMs: tx.now,
		ExpiresAtMs: tx.now + ttl,
		State:       ledgerpb.HoldState_HOLD_STATE_HELD,
		Currency:    l.currency(),
		Revision:    tx.index,
	}
	// A hold id is unique by construction: it names the group, the entry's
	// index (strictly above every index applied before, applyEntry) and a
	// position unique within the entry (offers start at offerPosBase). The
	// store lookup that would prove it always misses, so only tests make it.
	if _, live := tx.m.led.holds[h.HoldId]; live || (checkHoldIDs && tx.holdRecord(h.HoldId) != nil) {
		violated("hold id %s reused", h.HoldId)
	}
	s := tx.m.led.shows[c.ShowId]
	tx.m.led.holds[h.HoldId] = h
	tx.m.led.live++
	ref := s.owners.add(h)
	for i, n := range idx {
		row, _ := l.seat(int(n))
		h.AmountMinor += l.price(row)
		if s.owners.ref(int(n)) != 0 && !tx.m.unsafe.skipSeatCheck() {
			violated("S1: seat %s of show %s is not free when hold %s takes it", ids[i], c.ShowId, h.HoldId)
		}
		tx.putSeat(s, n, ref)
		tx.seatChanged(h.ShowId, ids[i], ledgerpb.SeatState_HELD)
	}
	tx.putHold(tx.liveKey(h.ShowId, h.HoldId), h)
	tx.m.led.due(h)
	tx.trackHold(h)
	tx.holdChanged(h, ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED)
	return tx.newHoldResult(h)
}

// resultWithToken is a new hold's result and its token's bytes, which
// the result's hold_token shares: one allocation for both.
type resultWithToken struct {
	r     ledgerpb.Result
	token [holdTokenLen]byte
}

// newHoldResult is holdResult with the hold's token.
func (tx *txn) newHoldResult(h *ledgerpb.HoldRecord) *ledgerpb.Result {
	rt := &resultWithToken{token: tx.holdTokenBytes(h.ShowId, h.HoldId)}
	setHoldResult(&rt.r, h)
	rt.r.HoldToken = unsafe.String(&rt.token[0], len(rt.token)) // never written again
	return &rt.r
}

// clonePair copies a and b into one new string.
func clonePair(a, b string) (string, string) {
	var sb strings.Builder
	sb.Grow(len(a) + len(b))
	sb.WriteString(a)
	sb.WriteString(b)
	both := sb.String()
	return both[:len(a)], both[len(a):]
}

// appendHoldID appends the id of hold pos of the entry at index in group:
// h<group>-<index>-<pos>.
func appendHoldID(b []byte, group uint32, index uint64, pos int) []byte {
	b = append(b, 'h')
	b = strconv.AppendUint(b, uint64(group), 10)
	b = append(b, '-')
	b = strconv.AppendUint(b, index, 10)
	b = append(b, '-')
	return strconv.AppendInt(b, int64(pos), 10)
}

// holdStrings makes a new hold's id (appendHoldID) and copies of its client
// and seat ids in one string, which lives as long as the hold does: one
// allocation, not one for each. The seat ids go to a new slice when
// fresh is set, else to seats in place.
func holdStrings(group uint32, index uint64, pos int, client string, seats []string, fresh bool) (string, string, []string) {
	var idBuf [holdIDLenMax]byte
	idBytes := appendHoldID(idBuf[:0], group, index, pos)
	n := len(idBytes) + len(client)
	for _, s := range seats {
		n += len(s)
	}
	var b strings.Builder
	b.Grow(n)
	b.Write(idBytes)
	b.WriteString(client)
	for _, s := range seats {
		b.WriteString(s)
	}
	all := b.String()
	id, rest := all[:len(idBytes)], all[len(idBytes):]
	client, rest = rest[:len(client)], rest[len(client):]
	out := seats
	if fresh {
		out = make([]string, len(seats))
	}
	for i, s := range seats {
		out[i], rest = rest[:len(s)], rest[len(s):]
	}
	return id, client, out
}

// holdIDLenMax is the longest hold id: h, a uint32, a uint64, an int and
// two dashes.
const holdIDLenMax = 1 + 10 + 1 + 20 + 1 + 20

// putSeat gives seat n of show s to the hold or booking with reference
// ref (seatOwners.add); clearSeat frees it. Seats are not stored: the
// records of the live holds and bookings (liveKey) tell load and snapshot
// readers who owns what.
func (tx *txn) putSeat(s *showState, n uint16, ref uint32) {
	s.owners.put(int(n), ref)
	s.states.Store(nil)
}

func (tx *txn) clearSeat(s *showState, n uint16) {
	s.owners.clear(int(n))
	s.states.Store(nil)
}

// liveHoldsOf counts client's holds in show that are live by the log clock:
// holds expired by the clock but not yet by an Expire entry are still
// listed, and skipped here.
func (tx *txn) liveHoldsOf(show, client string) int {
	n := 0
	for _, h := range tx.m.led.shows[show].clients[client] {
		if tx.now < h.ExpiresAtMs {
			n++
		}
	}
	return n
}

// trackHold lists a new live hold under its client in its show;
// untrackHold takes a closed or confirmed one off. The lists are derived
// state: load builds them from the live holds.
func (tx *txn) trackHold(h *ledgerpb.HoldRecord) {
	s := tx.m.led.shows[h.ShowId]
	if s.clients == nil {
		s.clients = map[string][]*ledgerpb.HoldRecord{}
	}
	s.clients[h.ClientId] = append(s.clients[h.ClientId], h)
}

func (tx *txn) untrackHold(h *ledgerpb.HoldRecord) {
	s := tx.m.led.shows[h.ShowId]
	list := s.clients[h.ClientId]
	n := len(list)
	list = slices.DeleteFunc(list, func(x *ledgerpb.HoldRecord) bool { return x == h })
	if len(list) != n-1 {
		violated("hold %s is not listed under client %s", h.HoldId, h.ClientId)
	}
	if len(list) == 0 {
		delete(s.clients, h.ClientId)
	} else {
		s.clients[h.ClientId] = list
	}
}

// takenSeats returns the seats owned by a live hold or a booking, and the
// expired holds (by the log clock) that still sit on some of the seats.
func (tx *txn) takenSeats(show string, ids []string, idx []uint16) ([]string, []*ledgerpb.HoldRecord) {
	if tx.m.unsafe.skipSeatCheck() {
		return nil, nil
	}
	s := tx.m.led.shows[show]
	var taken []string
	var stale []*ledgerpb.HoldRecord
	for i, n := range idx {
		h := s.owners.at(int(n))
		if h == nil {
			continue
		}
		if !(h.ShowId == show && slices.Contains(h.SeatIds, ids[i])) {
			violated("S1: seat %s of show %s points at hold %s that does not own it", ids[i], show, h.HoldId)
		}
		if h.State == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.ExpiresAtMs {
			if !slices.Contains(stale, h) {
				stale = append(stale, h)
			}
			continue
		}
		taken = append(taken, ids[i])
	}
	return taken, stale
}

// closeHold ends a live hold: its seats become FREE, it leaves the expiry
// index and the ledger. state is EXPIRED or CANCELLED.
func (tx *txn) closeHold(h *ledgerpb.HoldRecord, state ledgerpb.HoldState) {
	if h.State != ledgerpb.HoldState_HOLD_STATE_HELD {
		violated("closing hold %s in state %s", h.HoldId, h.State)
	}
	s := tx.m.led.shows[h.ShowId]
	var ref uint32
	tx.eachHeldSeat(h, func(seat string, n uint16) {
		ref = s.owners.ref(int(n))
		tx.clearSeat(s, n)
		tx.seatChanged(h.ShowId, seat, ledgerpb.SeatState_FREE)
	})
	s.owners.drop(h, ref)
	tx.del(tx.liveKey(h.ShowId, h.HoldId))
	tx.untrackHold(h)
	tx.seatsFreed(h.ShowId)
	h.State = state
	h.ClosedAtMs = tx.now
	tx.holdChanged(h, closeEvent(state))
	tx.putHold(tx.holdKey(h.HoldId), h)
	delete(tx.m.led.holds, h.HoldId)
	tx.m.led.live--
}

// eachHeldSeat calls fn with the id and layout index of every seat of a
// live hold, asserting first that the seat is held by that hold (S1).
func (tx *txn) eachHeldSeat(h *ledgerpb.HoldRecord, fn func(seat string, n uint16)) {
	s := tx.m.led.shows[h.ShowId]
	if s == nil {
		violated("hold %s names missing show %s", h.HoldId, h.ShowId)
	}
	if tx.m.led.holds[h.HoldId] != h || h.State != ledgerpb.HoldState_HOLD_STATE_HELD {
		violated("hold %s (%s) is not the ledger's live hold", h.HoldId, h.State)
	}
	for _, id := range h.SeatIds {
		n, ok := s.l.seatIndex(id)
		if !ok {
			violated("hold %s names unknown seat %s", h.HoldId, id)
		}
		if s.owners.at(int(n)) != h {
			if tx.m.unsafe.skipSeatCheck() {
				continue // a later double grant took the seat
			}
			violated("S1: seat %s of live hold %s is not held by it", id, h.HoldId)
		}
		fn(id, n)
	}
}

// holdResult is the result of a command that names a hold.
func holdResult(h *ledgerpb.HoldRecord) *ledgerpb.Result {
	r := &ledgerpb.Result{}
	setHoldResult(r, h)
	return r
}

func setHoldResult(r *ledgerpb.Result, h *ledgerpb.HoldRecord) {
	r.Code = ledgerpb.Code_CODE_OK
	r.HoldId = h.HoldId
	r.SeatIds = h.SeatIds
	r.ExpiresAtMs = h.ExpiresAtMs
	r.HoldState = h.State
	r.AmountMinor = h.AmountMinor
	r.Currency = h.Currency
	r.MaxExpiresAtMs = h.CreatedAtMs + HoldLifetimeMaxMs
}

// liveHold loads the hold a command names and checks it belongs to show
// and client and that token is its token. It returns the hold or the
// rejection; a hold that is live by state but past its expiry by the log
// clock is CODE_HOLD_EXPIRED.
func (tx *txn) liveHold(client, show, id, token string) (*ledgerpb.HoldRecord, *ledgerpb.Result) {
	h := tx.holdRecord(id)
	if h == nil || h.ShowId != show {
		return nil, reject(ledgerpb.Code_CODE_HOLD_NOT_FOUND, "show %s has no hold %s", show, id)
	}
	if h.ClientId != client {
		return nil, reject(ledgerpb.Code_CODE_NOT_HOLD_OWNER, "hold %s belongs to another client", id)
	}
	if !tx.tokenMatches(h, token) {
		return nil, badToken(h)
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_EXPIRED ||
		(h.State == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.ExpiresAtMs) {
		r := reject(ledgerpb.Code_CODE_HOLD_EXPIRED, "hold %s expired", id)
		r.HoldState = ledgerpb.HoldState_HOLD_STATE_EXPIRED
		return nil, r
	}
	return h, nil
}

// stateReject is the rejection of a command that finds a hold in a state it
// cannot act on.
func stateReject(code ledgerpb.Code, h *ledgerpb.HoldRecord, format string) *ledgerpb.Result {
	r := reject(code, format, h.HoldId)
	r.HoldState = h.State
	return r
}
