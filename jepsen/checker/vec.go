package checker

// vec is a persistent fixed-length vector: set returns a new vector and
// shares every chunk it did not change, so that the many model states
// porcupine keeps cost a chunk each rather than a whole seat map. It keeps an
// order-independent hash of its elements, updated on every set.
type vec[T cell[T]] struct {
	chunks []*[chunkLen]T
	hash   uint64
}

// chunkLen is the number of elements copied when one of them changes.
const chunkLen = 16

// cell is an element of a vec: comparable, with a hash that is 0 for the zero
// value so that a fresh vector hashes to 0.
type cell[T any] interface {
	comparable
	hashAt(i int) uint64
}

// newVec returns a vector of n zero elements; all chunks share one zero chunk.
func newVec[T cell[T]](n int) vec[T] {
	zero := new([chunkLen]T)
	chunks := make([]*[chunkLen]T, (n+chunkLen-1)/chunkLen)
	for i := range chunks {
		chunks[i] = zero
	}
	return vec[T]{chunks: chunks}
}

func (v vec[T]) get(i int) T { return v.chunks[i/chunkLen][i%chunkLen] }

// set returns v with element i replaced by x; v itself is unchanged.
func (v vec[T]) set(i int, x T) vec[T] {
	c := v.chunks[i/chunkLen]
	old := c[i%chunkLen]
	if old == x {
		return v
	}
	chunks := make([]*[chunkLen]T, len(v.chunks))
	copy(chunks, v.chunks)
	nc := *c
	nc[i%chunkLen] = x
	chunks[i/chunkLen] = &nc
	return vec[T]{chunks: chunks, hash: v.hash ^ old.hashAt(i) ^ x.hashAt(i)}
}

func (v vec[T]) equal(o vec[T]) bool {
	if v.hash != o.hash || len(v.chunks) != len(o.chunks) {
		return false
	}
	for i, c := range v.chunks {
		if c != o.chunks[i] && *c != *o.chunks[i] {
			return false
		}
	}
	return true
}

// mix is a 64-bit finalizer (splitmix64) for element hashes.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
