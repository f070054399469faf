// This file proves the uniform workload's client ids: a new id for each fan,
// unique across the workers of a run, and one id per worker with
// --fixed-clients.
package main

import "testing"

func TestFanID(t *testing.T) {
	for _, c := range []struct {
		worker string
		n      uint64
		fixed  bool
		want   string
	}{
		{"sb1-c0", 1, false, "sb1-c0-f1"},
		{"sb1-c0", 2, false, "sb1-c0-f2"},
		{"sb1-c0", 36, false, "sb1-c0-f10"},
		{"sb1-c255", 1, false, "sb1-c255-f1"},
		{"sb1-c0", 1, true, "sb1-c0"},
		{"sb1-c0", 7, true, "sb1-c0"},
	} {
		if got := fanID(c.worker, c.n, c.fixed); got != c.want {
			t.Errorf("fanID(%q, %d, fixed=%v) = %q, want %q", c.worker, c.n, c.fixed, got, c.want)
		}
	}
	// Workers whose ids share a prefix ("-c1", "-c11") never share a fan id.
	seen := map[string]string{}
	for _, worker := range []string{"sb1-c1", "sb1-c11", "sb1-c111"} {
		for n := uint64(1); n <= 1500; n++ {
			id := fanID(worker, n, false)
			if prev, ok := seen[id]; ok {
				t.Fatalf("fanID(%q, %d) = %q, already the id of %s", worker, n, id, prev)
			}
			seen[id] = worker
		}
	}
}
