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
			Message:            takenMessage(taken)}
	}
	// Holds whose expiry passed by the log clock no longer own their seats.
	for _, r := range stale {
		tx.closeHold(r, ledgerpb.HoldState_HOLD_STATE_EXPIRED, false)
	}
	return tx.createHold(client, c, l, ids, idx, pos)
}

// takenMessage is "seats [A1 A2] are taken" (as fmt's %v writes a list),
// in one allocation: conflicts are common under load.
func takenMessage(taken []string) string {
	var b strings.Builder
	n := len("seats [] are taken") + len(taken)
	for _, s := range taken {
		n += len(s)
	}
	b.Grow(n)
	b.WriteString("seats [")
	for i, s := range taken {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(s)
	}
	b.WriteString("] are taken")
	return b.String()
}

// pickSeats resolves a hold's seats: the named ones (CODE_UNKNOWN_SEAT for
// any the show lacks) or the best available (CODE_SOLD_OUT when too few are
// free). It returns their layout indexes, and the ids of named seats in
// the same order (nil for the best available, which the layout names).
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
	best := tx.bestSeats(l, tx.holdFreeMap(c.ShowId, l), int(c.Count), c.Category)
	if best == nil {
		what := "free seats"
		if c.Category != "" {
			what = c.Category + " seats"
		}
		return nil, nil, reject(ledgerpb.Code_CODE_SOLD_OUT, "show %s has fewer than %d %s", c.ShowId, c.Count, what)
	}
	// The layout names them (createHold): no ids to make.
	idx := slices.Grow(tx.seatBuf[:0], len(best))[:len(best)]
	tx.seatBuf = idx
	for i, n := range best {
		idx[i] = uint16(n)
	}
	return nil, idx, nil
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
	best := tx.bestSeats(l, free, len(idx), category)
	if best == nil && category != "" {
		best = tx.bestSeats(l, free, len(idx), "")
	}
	return l.seatIDs(best)
}

// bestSeats is bestSeats in tx.bestBuf, used before the next command
// needs the buffer.
func (tx *txn) bestSeats(l *layout, free []bool, n int, category string) []int {
	best := bestSeats(tx.bestBuf, l, free, n, category)
	if best != nil {
		tx.bestBuf = best
	}
	return best
}

// holdFreeMap is freeSeatMap in tx.freeBuf, for a hold's seats or its
// alternatives: used before the next command needs the buffer.
func (tx *txn) holdFreeMap(show string, l *layout) []bool {
	tx.freeBuf = tx.freeSeatMap(show, l, tx.freeBuf)
	return tx.freeBuf
}

// createHold writes a new live hold of free seats idx (layout indexes),
// named ids, or by the layout when ids is nil (best available).
func (tx *txn) createHold(client string, c *ledgerpb.HoldCmd, l *layout, ids []string, idx []uint16, pos int) *ledgerpb.Result {
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = HoldTTLDefaultMs
	}
	var idBuf [holdIDLenMax]byte
	idBytes := appendHoldID(idBuf[:0], tx.m.group, tx.index, pos)
	id := unsafe.String(&idBytes[0], len(idBytes)) // the table copies it
	led := &tx.m.led
	// A hold id is unique by construction: it names the group, the entry's
	// index (strictly above every index applied before, applyEntry) and a
	// position unique within the entry (offers start at offerPosBase). The
	// store lookup that would prove it always misses, so only tests make it;
	// the table tells whether it had the id as it adds it.
	if checkHoldIDs && tx.endedHold(id) != nil {
		violated("hold id %s reused", string(idBytes)) // a copy: idBuf stays on the stack
	}
	s := led.shows[c.ShowId]
	// The table copies the strings: the command's are the entry's
	// (decodeEntry).
	r, fresh := led.holds.addFresh(id, client, l.currency(), s.num, l, ids, idx)
	if !fresh {
		violated("hold id %s reused", string(idBytes))
	}
	h := led.holds.at(r)
	h.createdAt, h.expiresAt, h.state, h.revision = tx.now, tx.now+ttl, ledgerpb.HoldState_HOLD_STATE_HELD, tx.index
	led.live++
	var seats [SeatsPerHoldMax]string
	sc := tx.changesOf(s.id)
	for i, seat := range led.holds.seatIDs(seats[:0], r) {
		n := idx[i]
		h.amount += l.rowPrice[l.seatRow(int(n))]
		if s.owners.ref(int(n)) != 0 && !tx.m.unsafe.skipSeatCheck() {
			violated("S1: seat %s of show %s is not free when hold %s takes it", seat, s.id, led.holds.id(r))
		}
		tx.putSeat(s, n, r)
		sc.seatChanged(seat, ledgerpb.SeatState_HELD)
	}
	led.due(r)
	led.track(r)
	v := tx.view(r)
	tx.putHold(tx.liveKey(s.id, v.HoldId), v)
	tx.holdChanged(v, ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED)
	return tx.slotResult(r, true)
}

// view is hold slot r as a HoldRecord, for encoding: tx's own record,
// filled again by the next view, its strings the table's (fill).
func (tx *txn) view(r uint32) *ledgerpb.HoldRecord {
	if tx.holdBuf == nil {
		tx.holdBuf = &ledgerpb.HoldRecord{}
	}
	tx.m.led.holds.fill(tx.holdBuf, r, tx.m.led.showOf(r).id)
	return tx.holdBuf
}

// slotResult is the result of a command that names live hold slot r, and
// for a new hold its token. The result, its token, its seat ids and the
// bytes of its strings are one allocation (two or three for a hold of more
// than holdResultSeats seats), which shares nothing with the table.
func (tx *txn) slotResult(r uint32, token bool) *ledgerpb.Result {
	t := &tx.m.led.holds
	h := t.at(r)
	rb := tx.newResultBuf()
	id, currency := t.id(r), t.currency(r)
	var seats [SeatsPerHoldMax]string
	ids := t.seatIDs(seats[:0], r)
	n := len(id) + len(currency)
	for _, s := range ids {
		n += len(s)
	}
	b := rb.strs[:0]
	if n > len(rb.strs) {
		b = make([]byte, 0, n)
	}
	b = append(append(b, id...), currency...)
	for _, s := range ids {
		b = append(b, s...)
	}
	all := unsafe.String(unsafe.SliceData(b), len(b)) // never written again
	rb.r.HoldId, all = all[:len(id)], all[len(id):]
	rb.r.Currency, all = all[:len(currency)], all[len(currency):]
	out := rb.seats[:0]
	if len(ids) > len(rb.seats) {
		out = make([]string, 0, len(ids))
	}
	for _, s := range ids {
		out = append(out, all[:len(s)])
		all = all[len(s):]
	}
	rb.r.Code = ledgerpb.Code_CODE_OK
	rb.r.SeatIds = out[:len(out):len(out)]
	rb.r.ExpiresAtMs = h.expiresAt
	rb.r.HoldState = h.state
	rb.r.AmountMinor = h.amount
	rb.r.MaxExpiresAtMs = h.createdAt + HoldLifetimeMaxMs
	if token {
		rb.token = tx.showHoldToken(tx.m.led.showOf(r), rb.r.HoldId)
		rb.r.HoldToken = unsafe.String(&rb.token[0], len(rb.token)) // never written again
	}
	return &rb.r
}

// newResultBuf is a fresh holdResultBuf, or for an unanswered entry tx's
// own, reset.
func (tx *txn) newResultBuf() *holdResultBuf {
	if !tx.unanswered {
		return &holdResultBuf{}
	}
	if tx.resultBuf == nil {
		tx.resultBuf = &holdResultBuf{}
	}
	tx.resultBuf.r.Reset()
	return tx.resultBuf
}

// holdResultBuf is a hold's result with room for its strings: the token,
// the seat ids, and the bytes of the id, the currency and the seat ids
// when they fit (holdResultSeats seats, holdResultStrMax bytes). Room for
// a few seats, not SeatsPerHoldMax: most holds are of one to four, and
// the result is a size class smaller.
type holdResultBuf struct {
	r     ledgerpb.Result
	token [holdTokenLen]byte
	seats [holdResultSeats]string
	strs  [holdResultStrMax]byte
}

const (
	holdResultSeats = 4
	// holdResultStrMax is room for a hold id, a three-letter currency
	// and holdResultSeats seat ids of SeatIDLenMax.
	holdResultStrMax = holdIDLenMax + 3 + holdResultSeats*SeatIDLenMax
)

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

// holdIDLenMax is the longest hold id: h, a uint32, a uint64, an int and
// two dashes.
const holdIDLenMax = 1 + 10 + 1 + 20 + 1 + 20

// putSeat gives seat n of show s to the hold or booking in slot r
// (holdTable); clearSeat frees it. Seats are not stored: the records of
// the live holds and bookings (liveKey) tell load and snapshot readers
// who owns what.
func (tx *txn) putSeat(s *showState, n uint16, r uint32) {
	s.owners.put(int(n), r, tx.m.led.holds.takeAt(r))
	s.dropStates()
}

func (tx *txn) clearSeat(s *showState, n uint16) {
	s.owners.clear(int(n))
	s.dropStates()
}

// dropStates forgets the seat states readers built of show s
// (statescache.go), which a change of its seats makes stale. It loads
// before it stores: the states are most often gone already (an earlier
// seat of the command or entry dropped them, or no reader asked), and an
// atomic store is a locked exchange where a load is a plain read. Nothing
// can store between the two: readers build states under the machine's
// read lock, and apply holds the write lock.
func (s *showState) dropStates() {
	if s.states.Load() != nil {
		s.states.Store(nil)
	}
}

// liveHoldsOf counts client's holds in show that are live by the log clock:
// holds expired by the clock but not yet by an Expire entry are still
// listed, and skipped here.
func (tx *txn) liveHoldsOf(show, client string) int {
	t := &tx.m.led.holds
	num := tx.m.led.shows[show].num
	n := 0
	for r := tx.m.led.clients[clientKey(num, client)]; r != 0; r = t.at(r).clientNext {
		if h := t.at(r); tx.now < h.expiresAt && h.show == num && t.client(r) == client {
			n++
		}
	}
	return n
}

// clientKey is the key of client's list of live holds in show num.
func clientKey(num uint32, client string) uint64 {
	return hash64(client) ^ uint64(num)*0x9e3779b97f4a7c15
}

// track lists a new live hold under its client in its show; untrack
// takes a closed or confirmed one off. The lists are derived state: load
// builds them from the live holds.
func (led *ledger) track(r uint32) {
	key := clientKey(led.holds.at(r).show, led.holds.client(r))
	head := led.clients[key]
	h := led.holds.at(r)
	h.clientPrev, h.clientNext = 0, head
	if head != 0 {
		led.holds.at(head).clientPrev = r
	}
	led.clients[key] = r
}

func (led *ledger) untrack(r uint32) {
	h := led.holds.at(r)
	prev, next := h.clientPrev, h.clientNext
	if prev != 0 {
		led.holds.at(prev).clientNext = next
	} else {
		key := clientKey(h.show, led.holds.client(r))
		if led.clients[key] != r {
			violated("hold %s is not listed under client %s", led.holds.id(r), led.holds.client(r))
		}
		if next == 0 {
			delete(led.clients, key)
		} else {
			led.clients[key] = next
		}
	}
	if next != 0 {
		led.holds.at(next).clientPrev = prev
	}
	h.clientPrev, h.clientNext = 0, 0
}

// listed reports whether hold r is listed under its client (checks).
func (led *ledger) listed(r uint32) bool {
	for x := led.clients[clientKey(led.holds.at(r).show, led.holds.client(r))]; x != 0; x = led.holds.at(x).clientNext {
		if x == r {
			return true
		}
	}
	return false
}

// takenSeats returns the seats owned by a live hold or a booking, and the
// expired holds (by the log clock) that still sit on some of the seats.
// ids are the seats' ids, nil when the layout names them.
func (tx *txn) takenSeats(show string, ids []string, idx []uint16) ([]string, []uint32) {
	if tx.m.unsafe.skipSeatCheck() {
		return nil, nil
	}
	s := tx.m.led.shows[show]
	t := &tx.m.led.holds
	var taken []string
	var stale []uint32
	for i, n := range idx {
		r := s.owners.ref(int(n))
		if r == 0 {
			continue
		}
		h := t.at(r)
		if !(h.show == s.num && slices.Contains(h.seat[:h.nSeats], n)) {
			violated("S1: seat %s of show %s points at hold %s that does not own it", s.l.seatID(int(n)), show, t.id(r))
		}
		if h.state == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.expiresAt {
			if !slices.Contains(stale, r) {
				stale = append(stale, r)
			}
			continue
		}
		if taken == nil {
			taken = make([]string, 0, len(idx)-i) // at most the seats left
		}
		if ids != nil {
			taken = append(taken, ids[i])
		} else {
			taken = append(taken, s.l.seatID(int(n)))
		}
	}
	return taken, stale
}

// closeHold ends live hold r: its seats become FREE, it leaves the expiry
// index and the ledger. state is EXPIRED or CANCELLED. It returns the
// hold's result when result is set.
func (tx *txn) closeHold(r uint32, state ledgerpb.HoldState, result bool) *ledgerpb.Result {
	led := &tx.m.led
	h := led.holds.at(r)
	if h.state != ledgerpb.HoldState_HOLD_STATE_HELD {
		violated("closing hold %s in state %s", led.holds.id(r), h.state)
	}
	s := led.showOf(r)
	sc := tx.changesOf(s.id)
	tx.eachHeldSeat(r, func(seat string, n uint16) {
		tx.clearSeat(s, n)
		sc.seatChanged(seat, ledgerpb.SeatState_FREE)
	})
	tx.del(tx.liveKey(s.id, led.holds.id(r)))
	led.untrack(r)
	led.undue(r)
	tx.seatsFreed(s.id)
	h.state = state
	h.closedAt = tx.now
	v := tx.view(r)
	tx.holdChanged(v, closeEvent(state))
	tx.putHold(tx.holdKey(v.HoldId), v)
	var res *ledgerpb.Result
	if result {
		res = tx.slotResult(r, false)
	}
	led.holds.remove(r)
	led.live--
	return res
}

// eachHeldSeat calls fn with the id and layout index of every seat of
// live hold r, asserting first that the seat is held by that hold (S1).
func (tx *txn) eachHeldSeat(r uint32, fn func(seat string, n uint16)) {
	t := &tx.m.led.holds
	h := t.at(r)
	if h.state != ledgerpb.HoldState_HOLD_STATE_HELD {
		violated("hold %s (%s) is not the ledger's live hold", t.id(r), h.state)
	}
	s := tx.m.led.showOf(r)
	var seats [SeatsPerHoldMax]string
	for i, id := range t.seatIDs(seats[:0], r) {
		n := h.seat[i]
		if s.owners.ref(int(n)) != r {
			if tx.m.unsafe.skipSeatCheck() {
				continue // a later double grant took the seat
			}
			violated("S1: seat %s of live hold %s is not held by it", id, t.id(r))
		}
		fn(id, n)
	}
}

// holdResult is the result of a command that names a hold that ended.
func holdResult(h *ledgerpb.HoldRecord) *ledgerpb.Result {
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, HoldId: h.HoldId, SeatIds: h.SeatIds, ExpiresAtMs: h.ExpiresAtMs,
		HoldState: h.State, AmountMinor: h.AmountMinor, Currency: h.Currency, MaxExpiresAtMs: h.CreatedAtMs + HoldLifetimeMaxMs}
}

// liveHold finds the hold a command names and checks it belongs to show
// and client and that token is its token. It returns the slot of a live
// hold or booking, or the record of a hold that ended, or the rejection;
// a hold that is live by state but past its expiry by the log clock is
// CODE_HOLD_EXPIRED.
func (tx *txn) liveHold(client, show, id, token string) (uint32, *ledgerpb.HoldRecord, *ledgerpb.Result) {
	led := &tx.m.led
	if r := led.holds.find(id); r != 0 {
		s := led.showOf(r)
		if s.id != show {
			return 0, nil, reject(ledgerpb.Code_CODE_HOLD_NOT_FOUND, "show %s has no hold %s", show, id)
		}
		if led.holds.client(r) != client {
			return 0, nil, reject(ledgerpb.Code_CODE_NOT_HOLD_OWNER, "hold %s belongs to another client", id)
		}
		if !tx.showTokenMatches(s, id, token) {
			return 0, nil, badToken(id)
		}
		if h := led.holds.at(r); h.state == ledgerpb.HoldState_HOLD_STATE_HELD && tx.now >= h.expiresAt {
			return 0, nil, expiredReject(id)
		}
		return r, nil, nil
	}
	h := tx.endedHold(id)
	if h == nil || h.ShowId != show {
		return 0, nil, reject(ledgerpb.Code_CODE_HOLD_NOT_FOUND, "show %s has no hold %s", show, id)
	}
	if h.ClientId != client {
		return 0, nil, reject(ledgerpb.Code_CODE_NOT_HOLD_OWNER, "hold %s belongs to another client", id)
	}
	if !tx.tokenMatches(show, id, token) {
		return 0, nil, badToken(id)
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_EXPIRED {
		return 0, nil, expiredReject(id)
	}
	return 0, h, nil
}

func expiredReject(id string) *ledgerpb.Result {
	r := reject(ledgerpb.Code_CODE_HOLD_EXPIRED, "hold %s expired", id)
	r.HoldState = ledgerpb.HoldState_HOLD_STATE_EXPIRED
	return r
}

// stateReject is the rejection of a command that finds hold id in a state
// it cannot act on.
func stateReject(code ledgerpb.Code, id string, state ledgerpb.HoldState, format string) *ledgerpb.Result {
	r := reject(code, format, id)
	r.HoldState = state
	return r
}

// endedUnexpected is the crash of a command that finds a hold that ended
// in a state it does not know.
func endedUnexpected(h *ledgerpb.HoldRecord) {
	violated("hold %s ended in state %s", h.HoldId, h.State)
}
