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
	const n = 5 * requestGenCapMin
	for i := range n {
		f.add(requestHash(fmt.Sprintf("c%d", i), "r"), uint64(i/(2*requestGenCapMin))) // an hour fills two filters
	}
	if len(f.gens) < 4 {
		t.Fatalf("%d filters after %d adds over 3 hours, want growth within an hour", len(f.gens), n)
	}
	for i := range n {
		got := buckets(&f, fmt.Sprintf("c%d", i), "r")
		if !slices.Contains(got, uint64(i/(2*requestGenCapMin))) {
			t.Fatalf("buckets(c%d) = %v, want hour %d among them", i, got, i/(2*requestGenCapMin))
		}
		for j := 1; j < len(got); j++ {
			if got[j] >= got[j-1] {
				t.Fatalf("buckets(c%d) = %v: not newest first, or an hour named twice", i, got)
			}
		}
	}
	fp := 0
	for i := range 20000 {
		fp += len(buckets(&f, fmt.Sprintf("new%d", i), "r"))
	}
	if fp > 200 {
		t.Errorf("%d hours named for 20000 new requests, want about 0.1%% per hour", fp)
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
}
