// This file proves that the request filter never forgets a record the
// store may still hold: no false negatives across generations, growth and
// pruning, and few false positives.
package fsm

import (
	"fmt"
	"testing"
)

func TestRequestFilterHasNoFalseNegatives(t *testing.T) {
	var f requestFilter
	const n = 3 * requestGenCapMin
	for i := range n {
		// Three requests a second of log time: the span rolls over too.
		f.add([]byte(fmt.Sprintf("c%d/r", i)), int64(i/3)*1000)
	}
	if len(f.gens) < 2 {
		t.Fatalf("%d generations after %d adds, want growth past the first", len(f.gens), n)
	}
	for i := range n {
		if k := fmt.Sprintf("c%d/r", i); !f.mayHave([]byte(k)) {
			t.Fatalf("mayHave(%s) = false after add", k)
		}
	}
	fp := 0
	for i := range 10000 {
		if f.mayHave([]byte(fmt.Sprintf("new%d/r", i))) {
			fp++
		}
	}
	if fp > 300 {
		t.Errorf("%d of 10000 new keys reported maybe, want about 1%%", fp)
	}
}

func TestRequestFilterDropsOnlyPrunedGenerations(t *testing.T) {
	var f requestFilter
	f.add([]byte("old"), 1000)
	f.add([]byte("new"), 1000+requestGenSpanMs)
	if len(f.gens) != 2 {
		t.Fatalf("%d generations, want 2", len(f.gens))
	}
	f.prunedBelow(1000) // nothing applied before 1000: the first stays
	if !f.mayHave([]byte("old")) {
		t.Fatalf("mayHave(old) = false after pruning below its time")
	}
	f.prunedBelow(1001)
	if f.mayHave([]byte("old")) && len(f.gens) != 1 {
		t.Errorf("the pruned generation stayed: %d generations", len(f.gens))
	}
	if !f.mayHave([]byte("new")) {
		t.Errorf("mayHave(new) = false after pruning an older generation")
	}
}
