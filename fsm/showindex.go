package fsm

import (
	"hash/maphash"
	"math/bits"
)

// showIndex knows, for the shows it holds, which of their seats have a
// record and which clients may have a live-holds list, so that the hold
// path learns that a seat is FREE, or a client holds nothing in a show,
// without asking Pebble. Those lookups of absent keys were a third of a
// hold's apply (BenchmarkApplyUniform): a seat or a client is usually seen
// for the first time. Shows created while the machine runs start known
// (empty); others become known when their records of a kind are read as a
// whole (loadShow). Each show costs a bit per seat and a word per client,
// so the index keeps far more shows than the record cache can, and it
// outlives that cache's resets.
//
// Like the record cache it is exact where it says "absent", and not state:
// it mirrors the batch being applied (txn.put and txn.del keep it), only
// the apply goroutine uses it, and Restore, a batch that panics and its
// bound reset it.
type showIndex struct {
	m map[string]*showKeys // showPrefixOf a seat or client-holds key
}

// showIndexMax bounds the show prefixes (two per show: seats and clients)
// one group indexes; past it, the index starts over before the next batch.
const showIndexMax = 1 << 15

// showKeys is what a show has under one prefix: seats, a bitset by layout
// index of the seats with a record; clients, hashes of the clients that have
// or had a live-holds list (never removed: a hash left behind only costs a
// lookup).
type showKeys struct {
	seats   []uint64
	clients map[uint64]struct{}
}

// clientSeed hashes client ids for showKeys.clients; any seed will do, the
// index being no state.
var clientSeed = maphash.MakeSeed()

func (x *showIndex) reset() { x.m = nil }

// trim starts over when the index is past its bound; between batches only.
func (x *showIndex) trim() {
	if len(x.m) > showIndexMax {
		x.reset()
	}
}

// known notes that prefix (a showPrefixOf) has no keys; the caller knows it
// (a show just created) or is about to add them all (loadShow).
func (x *showIndex) known(prefix []byte) *showKeys {
	if x.m == nil {
		x.m = make(map[string]*showKeys)
	}
	k := &showKeys{}
	x.m[string(prefix)] = k
	return k
}

// absent reports whether key (a seat or client-holds key) is known to have
// no record.
func (x *showIndex) absent(key []byte) bool {
	prefix := showPrefixOf(key)
	k := x.m[string(prefix)]
	if k == nil {
		return false
	}
	return !k.has(key[groupPrefixLen], key[len(prefix):])
}

// wrote notes that key (a seat or client-holds key) now has a record
// (present) or none.
func (x *showIndex) wrote(key []byte, present bool) {
	prefix := showPrefixOf(key)
	if k := x.m[string(prefix)]; k != nil {
		k.set(key[groupPrefixLen], key[len(prefix):], present)
	}
}

func (k *showKeys) has(kind byte, rest []byte) bool {
	if kind == kindSeat {
		i := seatIndexOf(rest)
		return i/64 < len(k.seats) && k.seats[i/64]&(1<<(i%64)) != 0
	}
	_, ok := k.clients[maphash.Bytes(clientSeed, rest)]
	return ok
}

func (k *showKeys) set(kind byte, rest []byte, present bool) {
	if kind == kindSeat {
		i := seatIndexOf(rest)
		if present {
			for i/64 >= len(k.seats) {
				k.seats = append(k.seats, 0)
			}
			k.seats[i/64] |= 1 << (i % 64)
		} else if i/64 < len(k.seats) {
			k.seats[i/64] &^= 1 << (i % 64)
		}
		return
	}
	if present {
		if k.clients == nil {
			k.clients = make(map[uint64]struct{})
		}
		k.clients[maphash.Bytes(clientSeed, rest)] = struct{}{}
	}
}

// eachSeat calls fn with the layout index of every seat that has a record,
// in order.
func (k *showKeys) eachSeat(fn func(idx int)) {
	for w, word := range k.seats {
		for word != 0 {
			b := bits.TrailingZeros64(word)
			fn(w*64 + b)
			word &^= 1 << b
		}
	}
}

// seatIndexOf is the layout index that ends a seat key (after its show
// prefix: seatKey).
func seatIndexOf(rest []byte) int {
	if len(rest) != 2 {
		violated("seat key ends in %d bytes, not a seat index", len(rest))
	}
	return int(rest[0])<<8 | int(rest[1])
}
