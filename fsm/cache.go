package fsm

import "sync"

// Readers' caches (the layouts here, the seat states in statescache.go).
// Neither is state: dropping either changes no result.

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
