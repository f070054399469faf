package fsm

import "math"

// expiryQueue orders the live holds by expiry, then id (the order Expire
// frees them in), for Expire and for the next expiry the leader's driver
// waits for: a binary min-heap of the HELD holds' slots, each of which
// knows its position (holdSlot.heapAt), so that a hold leaves the queue
// when it is confirmed or closed and moves when it is extended. It is
// derived state: load builds it from the live holds, and nothing of it is
// stored. It holds one entry per live hold and no pointer.
type expiryQueue []expiryEntry

type expiryEntry struct {
	at  int64
	ref uint32
}

// expiryLess orders entries i and j of the queue: by expiry, then id.
func (led *ledger) expiryLess(i, j int) bool {
	q := led.expiry
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return led.holds.id(q[i].ref) < led.holds.id(q[j].ref)
}

func (led *ledger) expirySwap(i, j int) {
	q := led.expiry
	q[i], q[j] = q[j], q[i]
	led.holds.at(q[i].ref).heapAt = uint32(i + 1)
	led.holds.at(q[j].ref).heapAt = uint32(j + 1)
}

func (led *ledger) expiryUp(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !led.expiryLess(i, parent) {
			return
		}
		led.expirySwap(i, parent)
		i = parent
	}
}

func (led *ledger) expiryDown(i int) {
	for {
		l := 2*i + 1
		if l >= len(led.expiry) {
			return
		}
		m := l
		if r := l + 1; r < len(led.expiry) && led.expiryLess(r, l) {
			m = r
		}
		if !led.expiryLess(m, i) {
			return
		}
		led.expirySwap(i, m)
		i = m
	}
}

// due queues live hold r at its expiry, or moves it there when it is
// queued already (extend).
func (led *ledger) due(r uint32) {
	h := led.holds.at(r)
	if h.heapAt != 0 {
		i := int(h.heapAt - 1)
		led.expiry[i].at = h.expiresAt
		led.expiryUp(i)
		led.expiryDown(int(led.holds.at(r).heapAt - 1))
		return
	}
	led.expiry = append(led.expiry, expiryEntry{at: h.expiresAt, ref: r})
	h.heapAt = uint32(len(led.expiry))
	led.expiryUp(len(led.expiry) - 1)
}

// undue takes hold r out of the queue (it was confirmed or closed).
func (led *ledger) undue(r uint32) {
	h := led.holds.at(r)
	if h.heapAt == 0 {
		violated("hold %s is not in the expiry queue", led.holds.id(r))
	}
	i, last := int(h.heapAt-1), len(led.expiry)-1
	if i != last {
		led.expirySwap(i, last)
	}
	led.expiry = led.expiry[:last]
	h.heapAt = 0
	if i != last { // the last entry moved to i: up or down from there
		moved := led.expiry[i].ref
		led.expiryUp(i)
		led.expiryDown(int(led.holds.at(moved).heapAt - 1))
	}
}

// firstDue returns the live hold that expires first if it expires at or
// before upto; 0 when none does.
func (led *ledger) firstDue(upto int64) uint32 {
	if len(led.expiry) > 0 && led.expiry[0].at <= upto {
		return led.expiry[0].ref
	}
	return 0
}

// nextExpiry returns the earliest expiry of a live hold, math.MaxInt64
// when none is live.
func (led *ledger) nextExpiry() int64 {
	if len(led.expiry) > 0 {
		return led.expiry[0].at
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
