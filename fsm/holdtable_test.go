// This file proves the hold table's bookkeeping: a removed hold's slot is
// reused and its id forgotten, ids that share a hash are told apart,
// compaction keeps every string (and the strings handed out before it),
// a record built from a slot equals the one it was made from and encodes
// alike, and the expiry queue frees holds by expiry, then id as strings
// order them, whatever order they were queued, extended and removed in.
package fsm

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// tableHold puts a HELD hold in t: id, client, the seats of l named.
func tableHold(t *holdTable, l *layout, id, client string, expires int64, seats ...string) uint32 {
	idx := make([]uint16, len(seats))
	for i, s := range seats {
		n, ok := l.seatIndex(s)
		if !ok {
			panic("unknown seat " + s)
		}
		idx[i] = n
	}
	r := t.add(id, client, "EUR", 0, l, seats, idx)
	h := t.at(r)
	h.state, h.expiresAt, h.createdAt, h.revision, h.amount = ledgerpb.HoldState_HOLD_STATE_HELD, expires, 1, 7, 2000
	return r
}

func tableLayout(t *testing.T) *layout {
	led := newLedger()
	l := led.sharedLayout(testShow("s1", "A:20:std,B:20:std", "std:1000:EUR"))
	if l.total != 40 {
		t.Fatalf("layout has %d seats, want 40", l.total)
	}
	return l
}

func TestHoldTableSlots(t *testing.T) {
	l := tableLayout(t)
	tb := newHoldTable()
	a := tableHold(&tb, l, "h1-1-0", "alice", 10, "A1", "A2")
	b := tableHold(&tb, l, "h1-1-1", "bob", 10, "B3")
	if tb.find("h1-1-0") != a || tb.find("h1-1-1") != b || tb.find("h1-1-2") != 0 || tb.len() != 2 {
		t.Fatalf("find = %d %d %d, len %d; want %d %d 0, 2", tb.find("h1-1-0"), tb.find("h1-1-1"), tb.find("h1-1-2"), tb.len(), a, b)
	}
	if got := tb.seatIDs(nil, a); !slices.Equal(got, []string{"A1", "A2"}) || tb.client(a) != "alice" || tb.currency(a) != "EUR" {
		t.Errorf("slot %d: seats %q client %q currency %q", a, got, tb.client(a), tb.currency(a))
	}
	tb.remove(a)
	if tb.find("h1-1-0") != 0 || tb.len() != 1 {
		t.Errorf("after remove: find = %d, len %d; want 0, 1", tb.find("h1-1-0"), tb.len())
	}
	if c := tableHold(&tb, l, "h1-2-0", "carol", 10, "A1"); c != a {
		t.Errorf("add after remove = slot %d, want the removed %d", c, a)
	}
	// Best available: the layout names the seats.
	d := tb.add("h1-3-0", "dave", "EUR", 0, l, nil, []uint16{21, 22})
	if got := tb.seatIDs(nil, d); !slices.Equal(got, []string{"B2", "B3"}) {
		t.Errorf("seats named by the layout = %q, want B2 B3", got)
	}
}

func TestHoldTableSameHash(t *testing.T) {
	l := tableLayout(t)
	tb := newHoldTable()
	a := tableHold(&tb, l, "h1-1-0", "alice", 10, "A1")
	b := tableHold(&tb, l, "h1-1-1", "bob", 10, "A2")
	c := tableHold(&tb, l, "h1-1-2", "carol", 10, "A3")
	// Chain all three under one hash, as ids that collide would be.
	key := hash64("h1-1-0")
	delete(tb.ids, hash64("h1-1-1"))
	delete(tb.ids, hash64("h1-1-2"))
	tb.ids[key] = c
	tb.at(c).idNext, tb.at(b).idNext, tb.at(a).idNext = b, a, 0
	for _, tt := range []struct {
		id string
		r  uint32
	}{{"h1-1-0", a}, {"h1-1-1", b}, {"h1-1-2", c}} {
		if r := tb.findIn(key, tt.id); r != tt.r {
			t.Errorf("find %s = %d, want %d", tt.id, r, tt.r)
		}
	}
	tb.unlinkID(key, b) // the middle of the chain
	if tb.findIn(key, "h1-1-0") != a || tb.findIn(key, "h1-1-2") != c || tb.findIn(key, "h1-1-1") != 0 {
		t.Errorf("after removing the middle: %d %d %d", tb.findIn(key, "h1-1-0"), tb.findIn(key, "h1-1-2"), tb.findIn(key, "h1-1-1"))
	}
	tb.unlinkID(key, c) // the head
	if tb.findIn(key, "h1-1-0") != a || tb.ids[key] != a {
		t.Errorf("after removing the head: find = %d, head %d", tb.findIn(key, "h1-1-0"), tb.ids[key])
	}
}

func TestHoldTableCompact(t *testing.T) {
	l := tableLayout(t)
	tb := newHoldTable()
	var kept []uint32
	var before []string
	client := strings.Repeat("c", ClientIDLenMax)
	for i := 0; ; i++ {
		r := tableHold(&tb, l, fmt.Sprintf("h1-%d-0", i), client, 10, "A1", "B20")
		if i%3 == 0 {
			tb.setPayment(r, fmt.Sprintf("pay-%d", i))
			kept = append(kept, r)
			before = append(before, tb.id(r))
			continue
		}
		dead := tb.dead
		tb.remove(r)
		if tb.dead < dead { // compacted
			if tb.dead != 0 || len(tb.arena) > holdArenaCompactMin {
				t.Fatalf("after compaction: arena %d bytes, %d dead", len(tb.arena), tb.dead)
			}
			break
		}
		if i > 1e6 {
			t.Fatalf("no compaction: arena %d bytes, %d dead", len(tb.arena), tb.dead)
		}
	}
	for i, r := range kept {
		n := i * 3
		if tb.id(r) != fmt.Sprintf("h1-%d-0", n) || tb.payment(r) != fmt.Sprintf("pay-%d", n) || tb.client(r) != client ||
			!slices.Equal(tb.seatIDs(nil, r), []string{"A1", "B20"}) || before[i] != tb.id(r) {
			t.Fatalf("slot %d after compaction: id %s (was %s) payment %s seats %q", r, tb.id(r), before[i], tb.payment(r), tb.seatIDs(nil, r))
		}
	}
}

func TestHoldTableRecord(t *testing.T) {
	l := tableLayout(t)
	tb := newHoldTable()
	r := tableHold(&tb, l, "h1-9-3", "alice", 1234, "B7", "A1")
	tb.setPayment(r, "pay-1")
	h := tb.at(r)
	h.state, h.closedAt = ledgerpb.HoldState_HOLD_STATE_CONFIRMED, 99
	want := &ledgerpb.HoldRecord{HoldId: "h1-9-3", ShowId: "s1", SeatIds: []string{"B7", "A1"}, ClientId: "alice", CreatedAtMs: 1,
		ExpiresAtMs: 1234, State: ledgerpb.HoldState_HOLD_STATE_CONFIRMED, PaymentRef: "pay-1", AmountMinor: 2000, Currency: "EUR",
		ClosedAtMs: 99, Revision: 7}
	got := tb.record(r, "s1")
	if !proto.Equal(got, want) {
		t.Fatalf("record = %v, want %v", got, want)
	}
	var v ledgerpb.HoldRecord
	v.RefundReason, v.RefundedAtMs = "stale", 5 // fill sets every field
	tb.fill(&v, r, "s1")
	wantBytes, err := proto.MarshalOptions{Deterministic: true}.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if b := appendHoldRecord(nil, &v); string(b) != string(wantBytes) {
		t.Errorf("encoding of a filled record = %x, want %x", b, wantBytes)
	}
	tb.remove(r)
	if got.HoldId != "h1-9-3" || got.SeatIds[0] != "B7" || got.PaymentRef != "pay-1" {
		t.Errorf("a record's strings changed when its slot went: %v", got)
	}
}

func TestExpiryQueueStringOrder(t *testing.T) {
	l := tableLayout(t)
	led := newLedger()
	// Ids in string order, which is not numeric order: h1-10-0 < h1-9-0.
	holds := []struct {
		id string
		at int64
	}{{"h1-9-0", 50}, {"h1-10-0", 50}, {"h1-2-0", 40}, {"h1-11-0", 60}, {"h1-1-0", 50}, {"h1-3-0", 45}, {"h1-12-0", 55}}
	refs := map[string]uint32{}
	for _, h := range holds {
		r := tableHold(&led.holds, l, h.id, "c", h.at, "A1")
		refs[h.id] = r
		led.due(r)
	}
	// h1-3-0 is extended past the others; h1-12-0 is released.
	led.holds.at(refs["h1-3-0"]).expiresAt = 70
	led.due(refs["h1-3-0"])
	led.undue(refs["h1-12-0"])
	want := []string{"h1-2-0", "h1-1-0", "h1-10-0", "h1-9-0", "h1-11-0", "h1-3-0"}
	var got []string
	for {
		r := led.firstDue(1000)
		if r == 0 {
			break
		}
		got = append(got, led.holds.id(r))
		led.undue(r)
	}
	if !slices.Equal(got, want) {
		t.Errorf("expiry order %v, want %v", got, want)
	}
	if led.nextExpiry() != 1<<63-1 {
		t.Errorf("next expiry of an empty queue = %d", led.nextExpiry())
	}
}

func TestTakenMessage(t *testing.T) {
	for _, taken := range [][]string{{"A1"}, {"A1", "B12"}, {"C3", "C4", "C5"}} {
		if got, want := takenMessage(taken), fmt.Sprintf("seats %v are taken", taken); got != want {
			t.Errorf("takenMessage(%q) = %q, want %q", taken, got, want)
		}
	}
}

// TestHoldReadsWhileApplying reads holds from views while apply makes,
// confirms, releases and refunds them, the table reusing slots under
// them (run with -race): every read is a whole record of its own.
func TestHoldReadsWhileApplying(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:20:std", "std:1000:EUR"))), 1)
	var last atomic.Uint64
	readWhileApplying(t, func() {
		i := last.Load()
		v := m.ReadView()
		h, err := v.Hold(fmt.Sprintf("h1-%d-0", i))
		v.Close()
		if err == ErrNotFound {
			return
		}
		if err != nil {
			panic(err)
		}
		if h.HoldId != fmt.Sprintf("h1-%d-0", i) || h.ClientId != fmt.Sprintf("fan%d", i) || len(h.SeatIds) != 1 {
			panic(fmt.Sprintf("read hold h1-%d-0 as %v", i, h))
		}
	}, func() {
		index := uint64(1)
		for i := range 3000 {
			index++
			seat := fmt.Sprintf("A%d", 1+i%20)
			r := mustApply(t, m, index, at(1000, cmdHold(fmt.Sprintf("fan%d", index), "h", "s1", 0, seat)), 1)[0]
			if r.Code != ledgerpb.Code_CODE_OK {
				t.Fatalf("Hold(%s) = %s", seat, resultString(r))
			}
			last.Store(index)
			index++
			c := cmdRelease(fmt.Sprintf("fan%d", index-1), "r", "s1", r.HoldId)
			if i%2 == 0 {
				c = cmdConfirm(fmt.Sprintf("fan%d", index-1), "c", "s1", r.HoldId, "pay")
			}
			mustApply(t, m, index, at(1000, c), 1)
			if i%2 == 0 {
				index++
				mustApply(t, m, index, at(1000, cmdRefund(fmt.Sprintf("fan%d", index-2), "f", "s1", r.HoldId, "gone")), 1)
			}
		}
	})
}

// TestSlotResultCopies checks a hold's result for holds of few and many
// seats: its strings equal the table's and share no memory with the
// arena.
func TestSlotResultCopies(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:20:std", "std:1000:EUR"))), 1)
	for i, seats := range [][]string{{"A1"}, {"A2", "A3", "A4", "A5"}, {"A6", "A7", "A8", "A9", "A10", "A11", "A12", "A13", "A14", "A15"}} {
		r := mustApply(t, m, uint64(2+i), at(1000, cmdHold("c", fmt.Sprintf("r%d", i), "s1", 0, seats...)), 1)[0]
		if r.Code != ledgerpb.Code_CODE_OK || !slices.Equal(r.SeatIds, seats) || r.Currency != "EUR" || r.HoldId != fmt.Sprintf("h1-%d-0", 2+i) ||
			r.AmountMinor != int64(1000*len(seats)) || r.HoldToken != testToken(r.HoldId) {
			t.Fatalf("Hold(%v) = %s", seats, resultString(r))
		}
		arena := m.led.holds.arena
		lo, hi := uintptr(unsafe.Pointer(unsafe.SliceData(arena))), uintptr(unsafe.Pointer(unsafe.SliceData(arena)))+uintptr(cap(arena))
		for _, s := range append([]string{r.HoldId, r.Currency}, r.SeatIds...) {
			if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
				t.Errorf("Hold(%v): result string %q points into the table's arena", seats, s)
			}
		}
	}
}
