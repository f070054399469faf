package fsm

import (
	"math"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// expiryQueue orders the live holds by expiry, then id (the order Expire
// frees them in), for Expire and for the next expiry the leader's driver
// waits for. It is derived state: load builds it from the live holds, and
// nothing of it is stored.
//
// Entries are not removed when a hold is confirmed, released or extended:
// an entry is current while its hold is live with that expiry (current),
// and a stale one is dropped when it reaches the front. So it holds at most
// one entry per hold made or extended within HoldLifetimeMaxMs, and
// replicas whose queues differ in stale entries still free the same holds.
type expiryQueue []expiryEntry

type expiryEntry struct {
	at int64
	id string
}

func (q expiryQueue) less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].id < q[j].id)
}

// push and pop keep q a binary min-heap; typed, so an entry is not boxed
// into an interface as container/heap would on every hold.
func (q *expiryQueue) push(e expiryEntry) {
	*q = append(*q, e)
	h := *q
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		i = parent
	}
}

func (q *expiryQueue) pop() expiryEntry {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = expiryEntry{} // drop the id for the garbage collector
	h = h[:last]
	h.down(0)
	*q = h
	return top
}

func (q expiryQueue) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(q) {
			return
		}
		m := l
		if r := l + 1; r < len(q) && q.less(r, l) {
			m = r
		}
		if !q.less(m, i) {
			return
		}
		q[i], q[m] = q[m], q[i]
		i = m
	}
}

// init orders an unordered queue (load).
func (q expiryQueue) init() {
	for i := len(q)/2 - 1; i >= 0; i-- {
		q.down(i)
	}
}

// due queues a live hold at its expiry.
func (led *ledger) due(h *ledgerpb.HoldRecord) {
	led.expiry.push(expiryEntry{at: h.ExpiresAtMs, id: h.HoldId})
}

// current reports whether e is the entry of a live hold.
func (led *ledger) current(e expiryEntry) *ledgerpb.HoldRecord {
	h := led.holds[e.id]
	if h == nil || h.State != ledgerpb.HoldState_HOLD_STATE_HELD || h.ExpiresAtMs != e.at {
		return nil
	}
	return h
}

// popDue removes and returns the live hold that expires first if it
// expires at or before upto; nil when none does.
func (led *ledger) popDue(upto int64) *ledgerpb.HoldRecord {
	for len(led.expiry) > 0 && led.expiry[0].at <= upto {
		if h := led.current(led.expiry.pop()); h != nil {
			return h
		}
	}
	return nil
}

// nextExpiry drops stale entries from the front and returns the earliest
// expiry of a live hold, math.MaxInt64 when none is live.
func (led *ledger) nextExpiry() int64 {
	for len(led.expiry) > 0 {
		if led.current(led.expiry[0]) != nil {
			return led.expiry[0].at
		}
		led.expiry.pop()
	}
	return math.MaxInt64
}

// ExpiryBound is the time (Unix ms) of the earliest expiry of a live hold
// at the group's last commit, math.MaxInt64 when no hold is live. The
// leader's expiry driver sleeps until then on an idle group.
func (m *Machine) ExpiryBound() int64 { return m.published.Load().next }

// LiveHolds is the number of live holds at the group's last commit (holds
// past their expiry by the log clock count until an entry ends them).
func (m *Machine) LiveHolds() int { return m.published.Load().live }

// ExpiryDue reports whether a live hold expires at or before now (Unix ms).
func (m *Machine) ExpiryDue(now int64) (bool, error) { return m.ExpiryBound() <= now, nil }
