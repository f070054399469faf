package fsm

import (
	"container/heap"
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

func (q expiryQueue) Len() int { return len(q) }
func (q expiryQueue) Less(i, j int) bool {
	return q[i].at < q[j].at || (q[i].at == q[j].at && q[i].id < q[j].id)
}
func (q expiryQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *expiryQueue) Push(x any)   { *q = append(*q, x.(expiryEntry)) }
func (q *expiryQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// due queues a live hold at its expiry.
func (led *ledger) due(h *ledgerpb.HoldRecord) {
	heap.Push(&led.expiry, expiryEntry{at: h.ExpiresAtMs, id: h.HoldId})
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
		if h := led.current(heap.Pop(&led.expiry).(expiryEntry)); h != nil {
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
		heap.Pop(&led.expiry)
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
