// This file proves that the request filter never forgets a record the
// store may still hold: no false negatives across hours, growth and
// pruning, each hour named once, and few false positives.
package fsm

import (
	"fmt"
	"slices"
	"testing"
)

// buckets lists the hours the filter names for a request.
func buckets(f *requestFilter, client, request string) []uint64 {
	var out []uint64
	f.each(requestHash(client, request), func(b uint64) bool { out = append(out, b); return true })
	return out
}

func TestRequestFilterHasNoFalseNegatives(t *testing.T) {
	var f requestFilter
	const n = 6 * requestGenCapMin
	hour := func(i int) uint64 { return uint64(i / requestGenCapMin) } // six hours: a whole span and part of the next
	for i := range n {
		f.add(requestHash(fmt.Sprintf("c%d", i), "r"), hour(i))
	}
	if len(f.gens) < 3 || f.gens[1].span != f.gens[0].span {
		t.Fatalf("%d filters after %d adds over 6 hours, want growth within the first span", len(f.gens), n)
	}
	for i := range n {
		got := buckets(&f, fmt.Sprintf("c%d", i), "r")
		if !slices.Contains(got, hour(i)) {
			t.Fatalf("buckets(c%d) = %v, want hour %d among them", i, got, hour(i))
		}
		for j := 1; j < len(got); j++ {
			if got[j] >= got[j-1] {
				t.Fatalf("buckets(c%d) = %v: not newest first, or an hour named twice", i, got)
			}
		}
	}
	// A new request is named where a filter says maybe: about 0.1% per
	// filter, each naming the hours it covers.
	fp := 0
	for i := range 20000 {
		fp += len(buckets(&f, fmt.Sprintf("new%d", i), "r"))
	}
	if limit := 20000 * len(f.gens) * requestSpanHours / 500; fp > limit {
		t.Errorf("%d hours named for 20000 new requests over %d filters, want at most %d (0.2%% a filter, each naming its hours)", fp, len(f.gens), limit)
	}
}

// A day into a group's life: the filter holds the records of 25 hours in 7
// spans, so a new request asks 7 filters, not 25.
func TestRequestFilterSpansHours(t *testing.T) {
	var f requestFilter
	for hour := range uint64(25) {
		for i := range 1000 {
			f.add(requestHash(fmt.Sprintf("c%d-%d", hour, i), "r"), 100+hour)
		}
	}
	if len(f.gens) != 7 {
		t.Fatalf("%d filters for 25 hours from hour 100, want 7 (spans of %d hours)", len(f.gens), requestSpanHours)
	}
	if got := buckets(&f, "c24-7", "r"); len(got) == 0 || got[0] != 124 {
		t.Fatalf("buckets(c24-7) = %v, want hour 124 first", got)
	}
	if got := buckets(&f, "c3-7", "r"); !slices.Equal(got, []uint64{103, 102, 101, 100}) {
		t.Fatalf("buckets(c3-7) = %v, want its span's hours [103 102 101 100]", got)
	}
}

func TestRequestFilterDropsOnlyPrunedHours(t *testing.T) {
	var f requestFilter
	f.add(requestHash("old", "r"), 7)
	f.add(requestHash("new", "r"), 8)
	f.prunedBelow(7)
	if got := buckets(&f, "old", "r"); len(got) != 1 || got[0] != 7 {
		t.Fatalf("buckets(old) = %v after pruning below its hour, want [7]", got)
	}
	f.prunedBelow(8)
	if got := buckets(&f, "old", "r"); len(got) != 0 {
		t.Errorf("buckets(old) = %v after pruning its hour, want none", got)
	}
	if got := buckets(&f, "new", "r"); len(got) != 1 || got[0] != 8 {
		t.Errorf("buckets(new) = %v after pruning an older hour, want [8]", got)
	}

	// Within a span, pruning stops naming the hours it deleted.
	var g requestFilter
	g.add(requestHash("old", "r"), 4)
	g.add(requestHash("mid", "r"), 5)
	g.add(requestHash("new", "r"), 6)
	g.prunedBelow(5)
	if got := buckets(&g, "new", "r"); !slices.Equal(got, []uint64{6, 5}) {
		t.Errorf("buckets(new) = %v after pruning hour 4 of its span, want [6 5]", got)
	}
	if got := buckets(&g, "old", "r"); slices.Contains(got, 4) {
		t.Errorf("buckets(old) = %v names hour 4, which pruning deleted", got)
	}
	g.prunedBelow(7)
	if len(g.gens) != 0 {
		t.Errorf("%d filters left after pruning every hour they cover", len(g.gens))
	}
}

// TestRequestFilterSpanMemoryIsBounded: however many requests a span
// takes, its filters stop growing at about 76 MB (README's bound): each
// filter is made four times the last, until one reaches
// requestGenBitsMax, which takes every later request of the span. Each
// filter is marked full here rather than filled.
func TestRequestFilterSpanMemoryIsBounded(t *testing.T) {
	var f requestFilter
	for i := 0; ; i++ {
		if i > 64 {
			t.Fatalf("%d filters in one span and still growing", len(f.gens))
		}
		n := len(f.gens)
		f.add(uint64(i)*0x9e3779b97f4a7c15, 7)
		if len(f.gens) == n {
			break // the last filter took it: it is at requestGenBitsMax
		}
		g := f.last()
		g.n = g.cap
	}
	total := 0
	for _, g := range f.gens {
		total += len(g.bits) * 8
	}
	if last := f.last(); len(last.bits)*64 != requestGenBitsMax {
		t.Errorf("the last filter has %d bits, want requestGenBitsMax (%d)", len(last.bits)*64, requestGenBitsMax)
	}
	if total > 76e6 {
		t.Errorf("a span's filters hold %d bytes in %d filters, want at most 76 MB", total, len(f.gens))
	}
	t.Logf("%d filters, %d bytes", len(f.gens), total)
}
