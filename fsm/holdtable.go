package fsm

import (
	"hash/maphash"
	"strings"
	"unsafe"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// holdTable is the ledger's live holds and bookings in a form the garbage
// collector need not scan: a slab of fixed-size slots without pointers,
// their strings in one byte arena, and an index by id whose map holds no
// pointers either. Seats, the clients' lists and the expiry queue name a
// hold by its slot (a uint32, 0 for none). Slots are this replica's
// own bookkeeping, numbered in the order it made or loaded its holds:
// nothing that leaves the ledger depends on them, so replicas that number
// holds differently still agree on every state, record and order.
//
// A HoldRecord is built only where one must be returned (record) or
// encoded (txn.view, which reuses one record and points it into the
// arena).
//
// Memory: the slab keeps as many slots as were ever live at once (128
// bytes each, in pages of 128 KiB; freed ones are reused), the arena at most about twice its
// live strings (remove compacts it when half of it is dead), the index
// one entry per slot in use.
type holdTable struct {
	// pages are the slots, holdPageSlots a page: slot r is
	// pages[r/holdPageSlots][r%holdPageSlots]. A slab in pages, not one
	// slice, so that it grows without copying every slot it has: append
	// copied the whole slab, tens of MiB, each time it grew by a quarter.
	pages  []*[holdPageSlots]holdSlot
	nSlots uint32   // slots made; slot 0 is unused: slot 0 is no hold
	free   []uint32 // slots to reuse
	// ids maps the hash of a hold id (hash64) to the first slot of the ids
	// with that hash; the others follow through holdSlot.idNext.
	ids map[uint64]uint32
	// arena holds every slot's strings. Bytes once written are never
	// written again (a new array replaces it when it grows or is
	// compacted), so strings that point into it (str) stay valid for as
	// long as they are held.
	arena []byte
	dead  int // bytes of the arena no slot uses any more
	n     int // slots in use
}

// holdSlot is one live hold (HELD) or booking (CONFIRMED): the fields of
// its HoldRecord, strings as lengths into the arena. RefundedAtMs and
// RefundReason are not kept: a live record never has them (load checks).
type holdSlot struct {
	createdAt, expiresAt, closedAt, amount int64
	revision                               uint64
	state                                  ledgerpb.HoldState // UNSPECIFIED: a free slot
	// off is where the id, client, currency and seat ids start in the
	// arena, one after the other; payOff the payment reference's start.
	off, payOff                           uint32
	idLen, clientLen, currencyLen, payLen uint16
	nSeats                                uint16
	seatLen                               [SeatsPerHoldMax]uint16
	seat                                  [SeatsPerHoldMax]uint16 // layout indexes
	show                                  uint32                  // ledger.showList index
	// heapAt is 1 + the slot's position in the expiry queue, 0 when it is
	// not queued (only HELD holds are).
	heapAt uint32
	idNext uint32 // the next slot whose id has the same hash
	// clientPrev and clientNext link a HELD hold into its show's list of
	// its client's live holds (ledger.clients).
	clientPrev, clientNext uint32
}

// holdArenaCompactMin is the least dead arena space worth compacting.
const holdArenaCompactMin = 1 << 20

// holdPageSlots is the number of slots in a page of the slab: 128 KiB.
const holdPageSlots = 1024

func newHoldTable() holdTable {
	t := holdTable{ids: map[uint64]uint32{}}
	t.newSlot() // slot 0, unused
	return t
}

// newSlot makes a slot at the end of the slab, zero.
func (t *holdTable) newSlot() uint32 {
	r := t.nSlots
	if r%holdPageSlots == 0 {
		t.pages = append(t.pages, new([holdPageSlots]holdSlot))
	}
	t.nSlots++
	return r
}

// slotCount is the number of slots made, slot 0 included: slots are
// 0..slotCount()-1.
func (t *holdTable) slotCount() int { return int(t.nSlots) }

// holdSeed keys hash64; any seed will do, the indexes it keys being no
// state (nothing that leaves the ledger depends on them), and one drawn
// at start keeps client ids chosen to collide from making long chains.
var holdSeed = maphash.MakeSeed()

// hash64 hashes an id or client for the ledger's indexes. Ids and clients
// that share a hash are told apart by their bytes.
func hash64(s string) uint64 { return maphash.String(holdSeed, s) }

// at returns slot r. Pages never move, so the pointer stays good while r
// is in use, across adds.
func (t *holdTable) at(r uint32) *holdSlot {
	return &t.pages[r/holdPageSlots][r%holdPageSlots]
}

// len is the number of live holds and bookings.
func (t *holdTable) len() int { return t.n }

// str returns the arena's bytes [off, off+n) as a string without copying.
func (t *holdTable) str(off uint32, n uint16) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&t.arena[off], int(n))
}

func (t *holdTable) id(r uint32) string {
	h := t.at(r)
	return t.str(h.off, h.idLen)
}

func (t *holdTable) client(r uint32) string {
	h := t.at(r)
	return t.str(h.off+uint32(h.idLen), h.clientLen)
}

func (t *holdTable) currency(r uint32) string {
	h := t.at(r)
	return t.str(h.off+uint32(h.idLen)+uint32(h.clientLen), h.currencyLen)
}

func (t *holdTable) payment(r uint32) string {
	h := t.at(r)
	return t.str(h.payOff, h.payLen)
}

// seatIDs appends the ids of r's seats to dst, in the hold's order.
func (t *holdTable) seatIDs(dst []string, r uint32) []string {
	h := t.at(r)
	off := h.off + uint32(h.idLen) + uint32(h.clientLen) + uint32(h.currencyLen)
	for i := range h.nSeats {
		dst = append(dst, t.str(off, h.seatLen[i]))
		off += uint32(h.seatLen[i])
	}
	return dst
}

// region is r's id, client, currency and seat ids, as stored.
func (t *holdTable) region(r uint32) []byte {
	h := t.at(r)
	n := uint32(h.idLen) + uint32(h.clientLen) + uint32(h.currencyLen)
	for _, l := range h.seatLen[:h.nSeats] {
		n += uint32(l)
	}
	return t.arena[h.off : h.off+n : h.off+n]
}

// strLen checks that a kept string fits its length field.
func strLen(what, s string) uint16 {
	if len(s) > 1<<16-1 {
		violated("a hold's %s is %d bytes long", what, len(s))
	}
	return uint16(len(s))
}

// add makes a slot for a live hold: its strings are copied, seats are
// named by ids and by layout indexes idx (nil: seat ids are made from the
// layout), and the other fields are the caller's to set. The slot has no
// seats, no list and no expiry entry yet.
func (t *holdTable) add(id, client, currency string, show uint32, l *layout, ids []string, idx []uint16) uint32 {
	r, _ := t.addFresh(id, client, currency, show, l, ids, idx)
	return r
}

// addFresh is add, and reports whether id was new to the table: add
// reads the ids with its hash anyway, so a caller that must prove an id
// new needs no find before it (one hash and one index lookup less).
func (t *holdTable) addFresh(id, client, currency string, show uint32, l *layout, ids []string, idx []uint16) (uint32, bool) {
	key := hash64(id)
	head := t.ids[key]
	fresh := true
	for x := head; x != 0; x = t.at(x).idNext {
		if t.id(x) == id {
			fresh = false
			break
		}
	}
	if len(idx) > SeatsPerHoldMax || len(idx) == 0 || (ids != nil && len(ids) != len(idx)) {
		violated("hold %s has %d seats (%d ids)", strings.Clone(id), len(idx), len(ids)) // id may be on the caller's stack
	}
	var r uint32
	if n := len(t.free); n > 0 {
		r = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		r = t.newSlot()
	}
	if uint64(len(t.arena))+1<<20 > 1<<32 {
		violated("the hold arena is over 4 GiB")
	}
	h := t.at(r)
	*h = holdSlot{show: show, off: uint32(len(t.arena)), idLen: strLen("id", id), clientLen: strLen("client", client),
		currencyLen: strLen("currency", currency), nSeats: uint16(len(idx))}
	t.arena = append(t.arena, id...)
	t.arena = append(t.arena, client...)
	t.arena = append(t.arena, currency...)
	for i, n := range idx {
		start := len(t.arena)
		if ids != nil {
			t.arena = append(t.arena, ids[i]...)
		} else {
			t.arena = l.appendSeatID(t.arena, int(n))
		}
		if len(t.arena)-start > 1<<16-1 {
			violated("a seat id of hold %s is %d bytes long", strings.Clone(id), len(t.arena)-start)
		}
		h.seatLen[i] = uint16(len(t.arena) - start)
		h.seat[i] = n
	}
	h.idNext = head
	t.ids[key] = r
	t.n++
	return r, fresh
}

// find returns the slot of the live hold or booking id, 0 if none.
func (t *holdTable) find(id string) uint32 { return t.findIn(hash64(id), id) }

// findIn is find among the ids whose hash is key.
func (t *holdTable) findIn(key uint64, id string) uint32 {
	for r := t.ids[key]; r != 0; r = t.at(r).idNext {
		if t.id(r) == id {
			return r
		}
	}
	return 0
}

// setPayment keeps r's payment reference (a copy).
func (t *holdTable) setPayment(r uint32, p string) {
	h := t.at(r)
	t.dead += int(h.payLen)
	h.payOff, h.payLen = uint32(len(t.arena)), strLen("payment reference", p)
	t.arena = append(t.arena, p...)
}

// remove forgets slot r (its hold ended or its booking was refunded); its
// seats, list and expiry entry must be gone already.
func (t *holdTable) remove(r uint32) {
	h := t.at(r)
	if h.state == ledgerpb.HoldState_HOLD_STATE_UNSPECIFIED || h.heapAt != 0 || h.clientPrev != 0 || h.clientNext != 0 {
		violated("removing hold slot %d in state %s, queued %t, listed %t", r, h.state, h.heapAt != 0, h.clientPrev|h.clientNext != 0)
	}
	t.unlinkID(hash64(t.id(r)), r)
	t.dead += len(t.region(r)) + int(h.payLen)
	*h = holdSlot{}
	t.free = append(t.free, r)
	t.n--
	if t.dead >= holdArenaCompactMin && t.dead > len(t.arena)/2 {
		t.compact()
	}
}

// unlinkID takes slot r off the ids whose hash is key.
func (t *holdTable) unlinkID(key uint64, r uint32) {
	next := t.at(r).idNext
	t.at(r).idNext = 0
	if t.ids[key] == r {
		if next == 0 {
			delete(t.ids, key)
		} else {
			t.ids[key] = next
		}
		return
	}
	p := t.ids[key]
	for p != 0 && t.at(p).idNext != r {
		p = t.at(p).idNext
	}
	if p == 0 {
		violated("hold %s is not in the id index", t.id(r))
	}
	t.at(p).idNext = next
}

// compact copies the strings of the slots in use to a new arena. Strings
// that point into the old one stay valid: it is not written again.
func (t *holdTable) compact() {
	arena := make([]byte, 0, len(t.arena)-t.dead+len(t.arena)/8)
	for r := range t.nSlots {
		h := t.at(r)
		if h.state == ledgerpb.HoldState_HOLD_STATE_UNSPECIFIED {
			continue
		}
		reg := t.region(uint32(r))
		pay := t.payment(uint32(r))
		h.off = uint32(len(arena))
		arena = append(arena, reg...)
		h.payOff = uint32(len(arena))
		arena = append(arena, pay...)
	}
	t.arena, t.dead = arena, 0
}

// fill sets every field of dst to r's, its strings pointing into the
// arena and its seat ids in dst's own slice: dst is for encoding and
// comparing, never to keep.
func (t *holdTable) fill(dst *ledgerpb.HoldRecord, r uint32, show string) {
	h := t.at(r)
	dst.HoldId = t.id(r)
	dst.ShowId = show
	dst.SeatIds = t.seatIDs(dst.SeatIds[:0], r)
	dst.ClientId = t.client(r)
	dst.CreatedAtMs = h.createdAt
	dst.ExpiresAtMs = h.expiresAt
	dst.State = h.state
	dst.PaymentRef = t.payment(r)
	dst.AmountMinor = h.amount
	dst.Currency = t.currency(r)
	dst.ClosedAtMs = h.closedAt
	dst.Revision = h.revision
	dst.RefundedAtMs = 0
	dst.RefundReason = ""
}

// record returns r's HoldRecord, a copy of its own.
func (t *holdTable) record(r uint32, show string) *ledgerpb.HoldRecord {
	h := &ledgerpb.HoldRecord{}
	t.fill(h, r, show)
	all := string(t.region(r)) + t.payment(r)
	id, client, currency := t.at(r).idLen, t.at(r).clientLen, t.at(r).currencyLen
	h.HoldId, all = all[:id], all[id:]
	h.ClientId, all = all[:client], all[client:]
	h.Currency, all = all[:currency], all[currency:]
	for i, s := range h.SeatIds {
		h.SeatIds[i], all = all[:len(s)], all[len(s):]
	}
	h.PaymentRef = all
	h.ShowId = show
	return h
}

// later reports whether hold a was made after hold b (its id names a later
// entry, or a later position in the same one).
func (t *holdTable) later(a, b uint32) bool {
	ra, rb := t.at(a).revision, t.at(b).revision
	return ra > rb || (ra == rb && t.id(a) > t.id(b))
}
