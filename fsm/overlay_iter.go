package fsm

// overlayIter reads a key range of layers over a Pebble iterator, with the
// subset of pebble.Iterator's methods the package uses.

import (
	"bytes"

	"github.com/cockroachdb/pebble/v2"
)

type overlayIter struct {
	// runs are the layers' runs, oldest first, and as the chunks of
	// each (layers.sources).
	runs []run
	as   []chunks
	p    *pebble.Iterator // the store under the layers; nil: none
	// lo, hi bound each run's points (by position) as the options bound keys.
	lo, hi []int
	pos    []int
	pv     bool // p is positioned on a key
	dir    int  // +1 forward, -1 backward, 0 unpositioned
	valid  bool
	key    []byte // the current key, a copy (in keyBuf while it fits)
	keyBuf [64]byte
	val    []byte
	from   int // the source of the current key: a run, or -1 for p
}

// newOverlayIter opens an iterator on l over p (which it closes) with o's
// bounds.
func newOverlayIter(l layers, p *pebble.Iterator, o *pebble.IterOptions) *overlayIter {
	runs, as := l.sources()
	n := len(runs)
	pos := make([]int, 3*n) // one allocation for the three
	it := &overlayIter{runs: runs, as: as, p: p, lo: pos[:n:n], hi: pos[n : 2*n : 2*n], pos: pos[2*n:]}
	it.key = it.keyBuf[:0]
	for i := range runs {
		r := &runs[i]
		it.lo[i], it.hi[i] = 0, len(r.points)
		if o != nil && o.LowerBound != nil {
			it.lo[i] = r.find(as[i], o.LowerBound)
		}
		if o != nil && o.UpperBound != nil {
			it.hi[i] = r.find(as[i], o.UpperBound)
		}
	}
	return it
}

func (it *overlayIter) runKey(i int) []byte { return it.as[i].key(it.runs[i].points[it.pos[i]]) }

func (it *overlayIter) runValid(i int) bool { return it.pos[i] >= it.lo[i] && it.pos[i] < it.hi[i] }

// First moves to the first key.
func (it *overlayIter) First() bool {
	copy(it.pos, it.lo)
	it.pv = it.p != nil && it.p.First()
	return it.settle(+1)
}

// Last moves to the last key.
func (it *overlayIter) Last() bool {
	for i := range it.pos {
		it.pos[i] = it.hi[i] - 1
	}
	it.pv = it.p != nil && it.p.Last()
	return it.settle(-1)
}

// SeekGE moves to the first key >= key.
func (it *overlayIter) SeekGE(key []byte) bool {
	for i := range it.pos {
		it.pos[i] = max(it.runs[i].find(it.as[i], key), it.lo[i])
	}
	it.pv = it.p != nil && it.p.SeekGE(key)
	return it.settle(+1)
}

// SeekLT moves to the last key < key.
func (it *overlayIter) SeekLT(key []byte) bool {
	for i := range it.pos {
		it.pos[i] = min(it.runs[i].find(it.as[i], key), it.hi[i]) - 1
	}
	it.pv = it.p != nil && it.p.SeekLT(key)
	return it.settle(-1)
}

// Next moves to the next key.
func (it *overlayIter) Next() bool {
	if !it.valid {
		return false
	}
	if it.dir < 0 {
		cur := append([]byte(nil), it.key...)
		if !it.SeekGE(cur) || !bytes.Equal(it.key, cur) {
			return it.valid
		}
	}
	it.step(+1)
	return it.settle(+1)
}

// Prev moves to the previous key.
func (it *overlayIter) Prev() bool {
	if !it.valid {
		return false
	}
	if it.dir > 0 {
		cur := append([]byte(nil), it.key...)
		if !it.SeekLT(cur) {
			return false
		}
		return true
	}
	it.step(-1)
	return it.settle(-1)
}

// step moves every source at the current key one key in direction d.
func (it *overlayIter) step(d int) {
	for i := range it.pos {
		if it.runValid(i) && bytes.Equal(it.runKey(i), it.key) {
			it.pos[i] += d
		}
	}
	if it.pv && bytes.Equal(it.p.Key(), it.key) {
		if d > 0 {
			it.pv = it.p.Next()
		} else {
			it.pv = it.p.Prev()
		}
	}
}

// settle finds the nearest key in direction d that the layers leave set,
// from the sources' positions.
func (it *overlayIter) settle(d int) bool {
	it.dir = d
	for {
		var best []byte
		from := -2
		// Newest first, so that on equal keys the newest source wins.
		for i := len(it.pos) - 1; i >= 0; i-- {
			if !it.runValid(i) {
				continue
			}
			k := it.runKey(i)
			if from == -2 || bytes.Compare(k, best)*d < 0 {
				best, from = k, i
			}
		}
		if it.pv {
			if k := it.p.Key(); from == -2 || bytes.Compare(k, best)*d < 0 {
				best, from = k, -1
			}
		}
		if from == -2 {
			it.valid = false
			return false
		}
		it.key = append(it.key[:0], best...)
		set := true
		var val []byte
		if from >= 0 {
			var kind byte
			kind, _, val = it.as[from].rec(it.runs[from].points[it.pos[from]])
			set = kind == recSet
		} else {
			val = it.p.Value()
		}
		for i := from + 1; set && i < len(it.runs); i++ {
			set = !it.runs[i].covers(it.as[i], it.key)
		}
		if set {
			it.valid, it.val, it.from = true, val, from
			return true
		}
		it.step(d)
	}
}

// Valid reports whether the iterator is on a key.
func (it *overlayIter) Valid() bool { return it.valid }

// Key is the current key, valid until the iterator moves.
func (it *overlayIter) Key() []byte { return it.key }

// Value is the current value, valid until the iterator moves.
func (it *overlayIter) Value() []byte { return it.val }

// Error is the store's iterator's error.
func (it *overlayIter) Error() error {
	if it.p == nil {
		return nil
	}
	return it.p.Error()
}

// Close closes the store's iterator.
func (it *overlayIter) Close() error {
	if it.p == nil {
		return nil
	}
	return it.p.Close()
}
