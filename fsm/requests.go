package fsm

import (
	"hash/maphash"
	"math/bits"

	"github.com/cockroachdb/pebble/v2"
)

// requestFilter answers "is there no record of this request?" without a
// store read, so that a new request (nearly every request: retries are
// rare) costs no disk or memtable lookup. It is a Bloom filter over the
// keys of every request record in the store, in generations by the log time
// the records were applied at: a generation is dropped once pruning
// (expire.go) has removed every record it covers, so the filter never
// forgets a record the store still has. "Maybe" is answered by a store
// read, so a false positive (about 1%) costs one read and changes no result:
// replicas may hold different filters (each builds its own at load) and
// still apply every entry alike.
//
// Memory: about 1.2 bytes per request in the retention horizon
// (RequestRetentionMs), a generation at most requestGenBitsMax/8 bytes; past
// that a generation's false positives grow, and so do reads, never results.
//
// Only the apply goroutine uses it.
type requestFilter struct {
	gens []*requestGen // oldest first
}

// requestGen is the filter of records applied at log times [from, to].
type requestGen struct {
	from, to int64
	bits     []uint64
	n, cap   int
}

const (
	// requestGenSpanMs is the log time one generation covers at most: the
	// filter keeps about RequestRetentionMs/requestGenSpanMs + 1 of them.
	requestGenSpanMs = 4 * 60 * 60 * 1000
	// requestGenCapMin is the first generation's capacity; a generation
	// that fills up before its span ends is followed by one twice as large.
	requestGenCapMin = 1 << 16
	// requestGenBitsMax bounds one generation: 256 Mbit, 32 MiB.
	requestGenBitsMax = 1 << 28
	// requestBitsPerKey and requestHashes give about 1% false positives.
	requestBitsPerKey = 10
	requestHashes     = 7
)

// requestSeed hashes request keys; any seed will do, the filter being no
// state.
var requestSeed = maphash.MakeSeed()

// add notes a record of key applied at log time at (never earlier than the
// previous add's: the log clock does not go backwards).
func (f *requestFilter) add(key []byte, at int64) {
	g := f.last()
	if g == nil || at-g.from >= requestGenSpanMs || (g.n >= g.cap && len(g.bits)*64 < requestGenBitsMax) {
		capacity := requestGenCapMin
		if g != nil && g.n >= g.cap {
			capacity = g.cap * 2
		}
		nbits := min(capacity*requestBitsPerKey, requestGenBitsMax)
		g = &requestGen{from: at, to: at, bits: make([]uint64, (nbits+63)/64), cap: capacity}
		f.gens = append(f.gens, g)
	}
	g.to = max(g.to, at)
	g.n++
	h := maphash.Bytes(requestSeed, key)
	m := uint64(len(g.bits) * 64)
	for i := range uint64(requestHashes) {
		b := (h + i*bits.RotateLeft64(h, 32)) % m
		g.bits[b/64] |= 1 << (b % 64)
	}
}

// mayHave reports whether the store may hold a record of key: false means
// it surely does not.
func (f *requestFilter) mayHave(key []byte) bool {
	h := maphash.Bytes(requestSeed, key)
	for i := len(f.gens) - 1; i >= 0; i-- {
		if f.gens[i].mayHave(h) {
			return true
		}
	}
	return false
}

func (g *requestGen) mayHave(h uint64) bool {
	m := uint64(len(g.bits) * 64)
	for i := range uint64(requestHashes) {
		b := (h + i*bits.RotateLeft64(h, 32)) % m
		if g.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// prunedBelow drops the generations whose records were all applied before
// at, once pruning has removed every record older than at.
func (f *requestFilter) prunedBelow(at int64) {
	n := 0
	for n < len(f.gens) && f.gens[n].to < at {
		n++
	}
	f.gens = f.gens[n:]
}

func (f *requestFilter) last() *requestGen {
	if len(f.gens) == 0 {
		return nil
	}
	return f.gens[len(f.gens)-1]
}

// loadRequests builds the filter from the store's retention index, which
// lists every request record in the order it was applied.
func (m *Machine) loadRequests(r pebble.Reader) (requestFilter, error) {
	var f requestFilter
	err := scanPrefix(r, m.key(kindRequestAge), func(k, _ []byte) error {
		at, client, request, err := decodeRequestAgeKey(k)
		if err != nil {
			return err
		}
		f.add(m.requestKey(client, request), at)
		return nil
	})
	return f, err
}
