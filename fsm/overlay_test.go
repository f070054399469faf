package fsm

// The overlay reads as Pebble does: random sets, deletes and range
// deletions, sealed at random points, read through layers over a base
// store give the same Get and iteration answers (seeks, both directions,
// direction changes, bounds) as one Pebble database that took the same
// writes.

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

func memDB(t testing.TB) *pebble.DB {
	db, err := pebble.Open("", &pebble.Options{FS: vfs.NewMem(), Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOverlayReadsAsPebble(t *testing.T) {
	for seed := range uint64(60) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { overlayAgainstPebble(t, seed) })
	}
}

// writeBoth makes write n (a draw from [0, 100)) to want and o alike: a
// set below sets, a delete below dels, a range deletion below ranges (an
// empty one deletes nothing in either); false when n is past them all,
// for the caller's own steps.
func writeBoth(rng *rand.Rand, key func() []byte, n, sets, dels, ranges int, want *pebble.DB, o *overlay) bool {
	switch {
	case n < sets:
		k, v := key(), fmt.Appendf(nil, "v%d", rng.Uint32())
		must(want.Set(k, v, nil), "set")
		o.set(k, v)
	case n < dels:
		k := key()
		must(want.Delete(k, nil), "delete")
		o.del(k)
	case n < ranges:
		s, e := key(), key()
		if bytes.Compare(s, e) > 0 {
			s, e = e, s
		}
		must(want.DeleteRange(s, e, nil), "delete range")
		o.deleteRange(s, e)
	default:
		return false
	}
	return true
}

func overlayAgainstPebble(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	keys := 20 + rng.IntN(200)
	key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
	want, base := memDB(t), memDB(t)
	// The base holds a state the overlay's writes start from.
	for range rng.IntN(keys) {
		k, v := key(), fmt.Appendf(nil, "base%d", rng.Uint32())
		must(want.Set(k, v, nil), "set")
		must(base.Set(k, v, nil), "set")
	}
	o := newOverlay(&chunkPool{})
	for range 1 + rng.IntN(400) {
		if !writeBoth(rng, key, rng.IntN(100), 60, 85, 90, want, o) {
			o.seal()
		}
		if rng.IntN(40) == 0 {
			o.seal()
			compareReads(t, rng, keys, want, reader{l: o.view(), r: base})
		}
	}
	o.seal()
	compareReads(t, rng, keys, want, reader{l: o.view(), r: base})
}

// TestOverlayViewsStayPut: a view reads the same however the overlay
// seals and merges after it is taken (a View reads outside the lock).
func TestOverlayViewsStayPut(t *testing.T) {
	for seed := range uint64(30) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 17))
			keys := 20 + rng.IntN(200)
			key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
			want, base := memDB(t), memDB(t)
			o := newOverlay(&chunkPool{})
			type taken struct {
				snap *pebble.Snapshot
				view layers
			}
			var views []taken
			for range 1 + rng.IntN(1500) {
				switch n := rng.IntN(100); {
				case writeBoth(rng, key, n, 60, 80, 81, want, o):
				case n < 90:
					o.seal()
				default:
					o.seal() // as a commit publishes
					views = append(views, taken{snap: want.NewSnapshot(), view: o.view()})
				}
			}
			o.seal()
			for i, v := range views {
				if t.Failed() {
					break
				}
				t.Logf("view %d of %d", i, len(views))
				compareReads(t, rng, keys, v.snap, reader{l: v.view, r: base})
				must(v.snap.Close(), "close")
			}
		})
	}
}

// TestOverlayPendingReads: the apply goroutine's reader (txn.store) reads
// the records written since the last seal as Pebble does, without sealing
// up to pendScanMax of them, and its iterators see them too.
func TestOverlayPendingReads(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 11))
			keys := 20 + rng.IntN(100)
			key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
			want, base := memDB(t), memDB(t)
			for range rng.IntN(keys) {
				k, v := key(), fmt.Appendf(nil, "base%d", rng.Uint32())
				must(want.Set(k, v, nil), "set")
				must(base.Set(k, v, nil), "set")
			}
			o := newOverlay(&chunkPool{})
			got := reader{r: base, o: o}
			unsealed := 0 // reads that found pending records and left them so
			for range 1 + rng.IntN(600) {
				switch n := rng.IntN(100); {
				case writeBoth(rng, key, n, 55, 80, 84, want, o):
				case n < 86:
					o.seal()
				default:
					pend, runs := len(o.pend), len(o.runs)
					k := key()
					wv, _, werr := want.Get(k)
					gv, _, gerr := got.Get(k)
					if errors.Is(werr, pebble.ErrNotFound) != errors.Is(gerr, pebble.ErrNotFound) || !bytes.Equal(wv, gv) {
						t.Fatalf("Get(%s) with %d pending = %q %v, want %q %v", k, pend, gv, gerr, wv, werr)
					}
					if pend <= pendScanMax && (len(o.pend) != pend || len(o.runs) != runs) {
						t.Fatalf("Get(%s) sealed %d pending records", k, pend)
					}
					if pend > 0 && pend <= pendScanMax {
						unsealed++
					}
				}
				if rng.IntN(60) == 0 {
					compareReads(t, rng, keys, want, got) // its iterators seal
				}
			}
			compareReads(t, rng, keys, want, got)
			if unsealed == 0 {
				t.Fatalf("no read found pending records")
			}
		})
	}
}

// TestFoldRunsMergesAsPairs: a checkpoint's one-pass fold of an overlay's
// runs keeps exactly the records, in the same order, and the range
// deletions that merging them two by two keeps.
func TestFoldRunsMergesAsPairs(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 13))
		keys := 10 + rng.IntN(300)
		key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
		o := newOverlay(&chunkPool{})
		for range 1 + rng.IntN(2000) {
			switch n := rng.IntN(100); {
			case n < 60:
				o.set(key(), fmt.Appendf(nil, "v%d", rng.Uint32()))
			case n < 85:
				o.del(key())
			case n < 88:
				s, e := key(), key()
				if bytes.Compare(s, e) > 0 {
					s, e = e, s
				}
				o.deleteRange(s, e)
			default:
				o.seal()
			}
		}
		o.seal()
		l := o.view()
		want := run{}
		for i := range l.runs {
			want = mergeRuns(l.a, &want, &l.runs[i], make([]uint32, 0, len(want.points)+len(l.runs[i].points)))
		}
		got := foldRuns(l.a, l.runs)
		if !slices.Equal(got.points, want.points) || !slices.Equal(got.dels, want.dels) {
			t.Fatalf("seed %d, %d runs: foldRuns = %d points, %d deletions; two by two %d, %d",
				seed, len(l.runs), len(got.points), len(got.dels), len(want.points), len(want.dels))
		}
	}
}

// TestFold4MergesAsPairs: folding four runs in one pass (push's tiers)
// keeps exactly the records, in the same order, and the range deletions
// that merging them two by two keeps.
func TestFold4MergesAsPairs(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 17))
		keys := 5 + rng.IntN(200)
		key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
		a := &arena{pool: &chunkPool{}}
		var w [4]run
		var scratch []sealed
		for i := range w {
			var pend, dels []uint32
			for range rng.IntN(4) * rng.IntN(3) / 2 { // mostly none
				s, e := key(), key()
				if bytes.Compare(s, e) > 0 {
					s, e = e, s
				}
				dels = append(dels, a.add(recDR, s, e))
			}
			for range rng.IntN(1 + rng.IntN(400)) {
				if rng.IntN(4) == 0 {
					pend = append(pend, a.add(recDel, key(), nil))
				} else {
					pend = append(pend, a.add(recSet, key(), fmt.Appendf(nil, "v%d", rng.Uint32())))
				}
			}
			w[i] = sortRun(a.c, pend, dels, &scratch, func(n int) []uint32 { return make([]uint32, 0, n) })
		}
		want := run{}
		for i := range w {
			want = mergeRuns(a.c, &want, &w[i], make([]uint32, 0, len(want.points)+len(w[i].points)))
		}
		n := 0
		for i := range w {
			n += len(w[i].points)
		}
		got := fold4(a.c, w[:], make([]uint32, 0, n))
		if !slices.Equal(got.points, want.points) || !slices.Equal(got.dels, want.dels) {
			t.Fatalf("seed %d: fold4 = %d points, %d deletions; two by two %d, %d",
				seed, len(got.points), len(got.dels), len(want.points), len(want.dels))
		}
	}
}

func compareReads(t *testing.T, rng *rand.Rand, keys int, want pebble.Reader, got reader) {
	t.Helper()
	for i := range keys + 1 {
		k := fmt.Appendf(nil, "k%03d", i)
		wv, wc, werr := want.Get(k)
		gv, gc, gerr := got.Get(k)
		if errors.Is(werr, pebble.ErrNotFound) != errors.Is(gerr, pebble.ErrNotFound) || !bytes.Equal(wv, gv) {
			t.Fatalf("Get(%s) = %q %v, want %q %v", k, gv, gerr, wv, werr)
		}
		if wc != nil {
			wc.Close()
		}
		if gc != nil {
			gc.Close()
		}
	}
	for range 30 {
		o := &pebble.IterOptions{}
		if rng.IntN(2) == 0 {
			o.LowerBound = fmt.Appendf(nil, "k%03d", rng.IntN(keys))
		}
		if rng.IntN(2) == 0 {
			o.UpperBound = fmt.Appendf(nil, "k%03d", rng.IntN(keys+1))
		}
		if o.LowerBound != nil && o.UpperBound != nil && bytes.Compare(o.LowerBound, o.UpperBound) > 0 {
			o.LowerBound, o.UpperBound = o.UpperBound, o.LowerBound
		}
		wi, err := want.NewIter(o)
		must(err, "iter")
		gi, err := got.NewIter(o)
		must(err, "iter")
		var trace []string
		for range 40 {
			var op string
			var wok, gok bool
			switch n := rng.IntN(12); {
			case n == 0:
				op, wok, gok = "First", wi.First(), gi.First()
			case n == 1:
				op, wok, gok = "Last", wi.Last(), gi.Last()
			case n == 2:
				k := seekKey(rng, keys, o)
				op, wok, gok = "SeekGE "+string(k), wi.SeekGE(k), gi.SeekGE(k)
			case n == 3:
				k := seekKey(rng, keys, o)
				op, wok, gok = "SeekLT "+string(k), wi.SeekLT(k), gi.SeekLT(k)
			case n < 8:
				if !wi.Valid() {
					continue
				}
				op, wok, gok = "Next", wi.Next(), gi.Next()
			default:
				if !wi.Valid() {
					continue
				}
				op, wok, gok = "Prev", wi.Prev(), gi.Prev()
			}
			trace = append(trace, op)
			if wok != gok || (wok && (!bytes.Equal(wi.Key(), gi.Key()) || !bytes.Equal(wi.Value(), gi.Value()))) {
				var wk, gk []byte
				if wok {
					wk = wi.Key()
				}
				if gok {
					gk = gi.Key()
				}
				t.Fatalf("bounds [%s, %s) after %v: overlay %v %s, pebble %v %s", o.LowerBound, o.UpperBound, trace, gok, gk, wok, wk)
			}
		}
		must(wi.Close(), "close")
		must(gi.Close(), "close")
	}
}

// seekKey is a random key within o's bounds, as Pebble requires of a seek.
func seekKey(rng *rand.Rand, keys int, o *pebble.IterOptions) []byte {
	k := fmt.Appendf(nil, "k%03d", rng.IntN(keys+1))
	if o.LowerBound != nil && bytes.Compare(k, o.LowerBound) < 0 {
		k = o.LowerBound
	}
	if o.UpperBound != nil && bytes.Compare(k, o.UpperBound) > 0 {
		k = o.UpperBound
	}
	return k
}

// TestOverlayAbortKeepsCommitted: commits leave records pending (a seal
// every sealPendMax), so a batch may begin with committed records
// pending and seal them mid-batch with its own (a range deletion, a read
// past pendScanMax); an abort then drops exactly the batch's records and
// keeps every committed one, sealed or not.
func TestOverlayAbortKeepsCommitted(t *testing.T) {
	for seed := range uint64(40) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 29))
			keys := 20 + rng.IntN(150)
			key := func() []byte { return fmt.Appendf(nil, "k%03d", rng.IntN(keys)) }
			want, base := memDB(t), memDB(t)
			o := newOverlay(&chunkPool{})
			batch := want.NewIndexedBatch() // the batch's writes, until it commits
			for range 1 + rng.IntN(1500) {
				switch n := rng.IntN(100); {
				case n < 50:
					k, v := key(), fmt.Appendf(nil, "v%d", rng.Uint32())
					must(batch.Set(k, v, nil), "set")
					o.set(k, v)
				case n < 65:
					k := key()
					must(batch.Delete(k, nil), "delete")
					o.del(k)
				case n < 69:
					s, e := key(), key()
					if bytes.Compare(s, e) > 0 {
						s, e = e, s
					}
					must(batch.DeleteRange(s, e, nil), "delete range")
					o.deleteRange(s, e)
				case n < 75:
					o.seal() // a read of the batch's that seals
				case n < 88:
					must(batch.Commit(nil), "commit")
					batch = want.NewIndexedBatch()
					o.commit()
					if o.pending() >= sealPendMax || rng.IntN(8) == 0 {
						o.seal()
					}
				case n < 94:
					must(batch.Close(), "close")
					batch = want.NewIndexedBatch()
					o.abort()
				default:
					o.commit()
					must(batch.Commit(nil), "commit")
					batch = want.NewIndexedBatch()
					compareReads(t, rng, keys, want, reader{r: base, o: o})
				}
			}
			must(batch.Close(), "close")
			o.abort()
			compareReads(t, rng, keys, want, reader{r: base, o: o})
		})
	}
}

// TestKeyCursorWalksEveryPoint: a cursor resolving keys a block at a time
// gives each point's offset and key in order, across block boundaries,
// for runs shorter and longer than a block.
func TestKeyCursorWalksEveryPoint(t *testing.T) {
	a := &arena{pool: &chunkPool{}}
	var pts []uint32
	for i := range 3*keyBlock + 5 {
		pts = append(pts, a.add(recSet, fmt.Appendf(nil, "k%04d", i), []byte("v")))
	}
	for _, n := range []int{0, 1, keyBlock - 1, keyBlock, keyBlock + 1, 2 * keyBlock, len(pts)} {
		var c keyCursor
		c.init(a.c, pts[:n])
		i := 0
		for ; c.ok(); c.advance(a.c) {
			if c.off() != pts[i] || !bytes.Equal(c.key(), a.c.key(pts[i])) {
				t.Fatalf("%d points: head %d = (%d, %q), want (%d, %q)", n, i, c.off(), c.key(), pts[i], a.c.key(pts[i]))
			}
			i++
		}
		if i != n {
			t.Fatalf("%d points: the cursor gave %d", n, i)
		}
	}
}
