package fsm

import (
	"math"
	"sync"
)

// Two in-memory aids for speed. Neither is state: dropping either changes no
// result, so replicas stay identical whatever each one has cached.

// layoutCacheMax bounds the layouts one group keeps (each a few hundred
// bytes to a few KiB); when full the cache starts over.
const layoutCacheMax = 4096

// layoutCache keeps decoded show layouts, so that a hold does not decode its
// show and index its rows again. A show never changes once created, so a
// cached layout is valid until Restore replaces the group's state. The apply
// goroutine fills it, readers may use it: entries are immutable and the map
// is guarded. A layout may be cached before the batch that created its show
// commits, so readers must see the show in their own snapshot first.
type layoutCache struct{ boundedCache[*layout] }

func (c *layoutCache) put(id string, l *layout) { c.putUnless(id, l, layoutCacheMax, nil) }

// boundedCache is a guarded map of immutable entries that starts over when
// full: the layouts, and the seat states (statescache.go).
type boundedCache[V comparable] struct {
	mu struct {
		sync.Mutex
		m map[string]V
	}
}

// get returns key's entry, the zero V if none.
func (c *boundedCache[V]) get(key string) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.mu.m[key]
}

// putUnless caches v under key unless keep says the entry already there
// (not the zero V) should stay; with max entries it starts over first.
func (c *boundedCache[V]) putUnless(key string, v V, max int, keep func(old V) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var zero V
	if old := c.mu.m[key]; keep != nil && old != zero && keep(old) {
		return
	}
	if c.mu.m == nil || len(c.mu.m) >= max {
		c.mu.m = make(map[string]V)
	}
	c.mu.m[key] = v
}

func (c *boundedCache[V]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.mu.m = nil
}

// expiryBound is a lower bound on the earliest expiry of the group's live
// holds, so the leader's expiry driver can tell "nothing is due" without
// opening a Pebble snapshot every tick of every group.
//
// Apply lowers it after each commit that created holds (never before: a
// reader that tightened the bound from a snapshot taken before that commit
// would otherwise overwrite it). A reader tightens it to what a snapshot
// shows only if no commit lowered it meanwhile (gen unchanged). Holds that
// end early (confirm, release) leave it low, which costs one snapshot read.
type expiryBound struct {
	mu struct {
		sync.Mutex
		at  int64  // no live hold expires before at
		gen uint64 // counts lowerings and resets
	}
}

// lower notes a new hold expiring at at (math.MaxInt64: none).
func (e *expiryBound) lower(at int64) {
	if at == math.MaxInt64 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.at = min(e.mu.at, at)
	e.mu.gen++
}

// reset forgets the bound: the next ExpiryDue reads the state.
func (e *expiryBound) reset() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.mu.at = math.MinInt64
	e.mu.gen++
}

// ExpiryBound is the time (Unix ms) before which no live hold expires, as
// far as the in-memory bound knows: math.MaxInt64 when no hold is live,
// math.MinInt64 when unknown (read the state: ExpiryDue). The leader's
// expiry driver sleeps until then on an idle group.
func (m *Machine) ExpiryBound() int64 {
	m.expiry.mu.Lock()
	defer m.expiry.mu.Unlock()
	return m.expiry.mu.at
}

// ExpiryDue reports whether a live hold expires at or before now (Unix ms).
// It answers from the in-memory bound when that says nothing can be due, and
// otherwise reads the expiry index from a snapshot (and tightens the bound).
func (m *Machine) ExpiryDue(now int64) (bool, error) {
	m.expiry.mu.Lock()
	at, gen := m.expiry.mu.at, m.expiry.mu.gen
	m.expiry.mu.Unlock()
	if at > now {
		return false, nil
	}
	v, err := m.View()
	if err != nil {
		return false, err
	}
	next, ok, err := v.NextExpiry()
	v.Close()
	if err != nil {
		return false, err
	}
	if !ok {
		next = math.MaxInt64
	}
	m.expiry.mu.Lock()
	if m.expiry.mu.gen == gen {
		m.expiry.mu.at = next
	}
	m.expiry.mu.Unlock()
	return ok && next <= now, nil
}
