// This file proves the shard map: every show maps to exactly one group, the
// groups' ranges tile the whole hash space, the mapping is stable, and
// placement spreads replicas evenly without repeating a node in a group,
// and the catalog group is fixed by its reserved key.
package shard

import (
	"fmt"
	"testing"
)

func TestRangesTileTheSpace(t *testing.T) {
	for _, groups := range []uint32{1, 3, 8, 1024} {
		m := Map{Groups: groups}
		next := uint64(0)
		for g := uint32(0); g < groups; g++ {
			lo, hi := m.Range(g)
			if uint64(lo) != next || hi < lo {
				t.Fatalf("groups=%d: Range(%d) = [%d, %d], want to start at %d", groups, g, lo, hi, next)
			}
			if m.GroupFor("") != m.GroupFor("") {
				t.Fatal("GroupFor is not stable")
			}
			next = uint64(hi) + 1
		}
		if next != 1<<32 {
			t.Errorf("groups=%d: ranges end at %d, want 2^32", groups, next)
		}
	}
}

func TestGroupForMatchesRange(t *testing.T) {
	m := Map{Groups: 8}
	counts := make([]int, m.Groups)
	for i := 0; i < 8000; i++ {
		show := fmt.Sprintf("show-%d", i)
		g := m.GroupFor(show)
		lo, hi := m.Range(g)
		if p := Point(show); p < lo || p > hi {
			t.Fatalf("GroupFor(%s) = %d, but its point %d is outside [%d, %d]", show, g, p, lo, hi)
		}
		counts[g]++
	}
	for g, n := range counts {
		if n < 700 || n > 1300 {
			t.Errorf("group %d got %d of 8000 shows, want about 1000", g, n)
		}
	}
}

func TestPlacement(t *testing.T) {
	nodes := []string{"n1", "n2", "n3", "n4", "n5"}
	p := Placement(10, nodes, 3)
	load := map[string]int{}
	for g := uint32(0); g < 10; g++ {
		seen := map[string]bool{}
		if len(p[g]) != 3 {
			t.Fatalf("group %d has %d replicas, want 3", g, len(p[g]))
		}
		for _, n := range p[g] {
			if seen[n] {
				t.Errorf("group %d places two replicas on %s", g, n)
			}
			seen[n] = true
			load[n]++
		}
	}
	for _, n := range nodes {
		if load[n] != 6 {
			t.Errorf("node %s hosts %d replicas, want 6", n, load[n])
		}
	}
	if got := Placement(2, []string{"a"}, 3); len(got[0]) != 1 {
		t.Errorf("Placement with 1 node and 3 replicas = %v, want 1 replica", got[0])
	}
	if err := (Map{Groups: 0}).Validate(); err == nil {
		t.Error("Map{Groups: 0}.Validate() = nil, want an error")
	}
}

func BenchmarkGroupFor(b *testing.B) {
	m := Map{Groups: 8}
	b.ReportAllocs()
	for b.Loop() {
		m.GroupFor("show-123456")
	}
}

func TestCatalogGroup(t *testing.T) {
	for _, groups := range []uint32{1, 8, 1024} {
		m := Map{Groups: groups}
		if got, want := m.CatalogGroup(), m.GroupFor(CatalogKey); got != want {
			t.Errorf("Map{%d}.CatalogGroup() = %d, want GroupFor(%q) = %d", groups, got, CatalogKey, want)
		}
	}
	// The catalog's group is part of the on-disk format.
	if got := (Map{Groups: 8}).CatalogGroup(); got != 3 {
		t.Errorf("Map{8}.CatalogGroup() = %d, want 3 (moving the catalog strands existing data)", got)
	}
}
