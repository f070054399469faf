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

// recordCacheBytesMax bounds one group's record cache (keys, values and
// recordOverheadBytes each): past it, the cache starts over before the next
// batch of entries (within one batch it may grow by that batch's records,
// applyBatchBytesMax at most).
const recordCacheBytesMax = 2 << 20

// recordOverheadBytes is what the cache counts per entry besides its key and
// value: map slot, string and slice headers.
const recordOverheadBytes = 64

// recordCache mirrors the records that the apply path reads again and again,
// seats, holds and clients' live holds, as they stand in the batch being
// applied, so that a hold does not seek Pebble's memtables and sstables
// (most of the apply cost under load, BenchmarkApplyUniform) for records it
// read or wrote moments ago. It is exact, not a guess: only the apply
// goroutine writes the group's range, and every write of a cached kind goes
// through txn.put or txn.del, which update it. So it changes no result, and
// replicas stay identical whatever each one has cached.
//
// A busy show's seats, and its clients' live-hold lists, are known as a
// whole: after showScanMisses lookups of one kind in a show have missed,
// the next reads all of that kind's records of the show (one range scan, few
// records: a FREE seat has none, a client without live holds none), after
// which an uncached key of that show is absent without asking Pebble. A
// show seen once or twice is cheaper to look up key by key: a range scan
// opens an iterator over every level of the store. Requests are not cached:
// a new request id is absent and an old one is read only when a client
// retries.
//
// Only the apply goroutine uses it (Apply, ApplyEntries, Restore), so it
// needs no lock; Restore and a batch that panics (Machine.end) empty it.
type recordCache struct {
	recs map[string]cachedRecord
	// known holds the show prefixes (showPrefixOf) whose every record is
	// in recs; misses counts lookups under the others that missed.
	known  map[string]bool
	misses map[string]int
	bytes  int
}

// showScanMisses is how many lookups of a kind in one show miss before the
// show's records of that kind are read as a whole.
const showScanMisses = 4

// cachedRecord is a record's encoded value, or its absence.
type cachedRecord struct {
	val     []byte
	present bool
}

// cacheable reports whether keys of kind live in the record cache.
func cacheable(kind byte) bool {
	return kind == kindSeat || kind == kindHold || kind == kindClientHold
}

// lookup returns what the cache knows of key: known is false when the
// store must be asked.
func (c *recordCache) lookup(key []byte) (val []byte, present, known bool) {
	if r, ok := c.recs[string(key)]; ok {
		return r.val, r.present, true
	}
	if byShow(key[groupPrefixLen]) && c.known[string(showPrefixOf(key))] {
		return nil, false, true
	}
	return nil, false, false
}

// store records key's value (present) or its absence; val must not change
// afterwards.
func (c *recordCache) store(key, val []byte, present bool) {
	if c.recs == nil {
		c.reset()
	}
	old, had := c.recs[string(key)]
	if had {
		c.bytes -= len(old.val)
	} else {
		c.bytes += len(key) + recordOverheadBytes
	}
	c.bytes += len(val)
	c.recs[string(key)] = cachedRecord{val: val, present: present}
}

// missed counts a lookup under a show prefix that missed and reports
// whether the show's records should now be read as a whole.
func (c *recordCache) missed(prefix []byte) bool {
	if c.recs == nil {
		c.reset()
	}
	n := c.misses[string(prefix)]
	if n == 0 {
		c.bytes += len(prefix) + recordOverheadBytes
	}
	c.misses[string(prefix)] = n + 1
	return n+1 > showScanMisses
}

// know notes that recs now holds every record under prefix (a
// showPrefixOf).
func (c *recordCache) know(prefix []byte) {
	if c.recs == nil {
		c.reset()
	}
	c.known[string(prefix)] = true
	c.bytes += len(prefix) + recordOverheadBytes
}

// trim starts over when the cache is past its bound. It is called only
// between batches: never between reading a show's records and know.
func (c *recordCache) trim() {
	if c.bytes > recordCacheBytesMax {
		c.reset()
	}
}

func (c *recordCache) reset() {
	c.recs = make(map[string]cachedRecord)
	c.known = make(map[string]bool)
	c.misses = make(map[string]int)
	c.bytes = 0
}

// byShow reports whether keys of kind are cached a show at a time: their
// key is the kind, the length-prefixed show id, then the rest (keys.go's
// seatKey and clientHoldsKey).
func byShow(kind byte) bool { return kind == kindSeat || kind == kindClientHold }

// showPrefixOf returns the part of a byShow key up to and including its
// show id.
func showPrefixOf(key []byte) []byte {
	n := groupPrefixLen + 2 + int(key[groupPrefixLen+1])
	if n > len(key) {
		violated("key %x is shorter than its show id", key)
	}
	return key[:n]
}
