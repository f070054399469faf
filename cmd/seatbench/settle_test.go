package main

import "testing"

func TestLeadersBalanced(t *testing.T) {
	for _, tc := range []struct {
		name   string
		leads  map[string]int
		groups int
		full   bool
		want   bool
	}{
		{"just started: one node leads five", map[string]int{"n1": 5, "n2": 0, "n3": 3}, 8, true, false},
		{"balanced", map[string]int{"n1": 3, "n2": 3, "n3": 2}, 8, true, true},
		{"within the share, two apart", map[string]int{"n1": 3, "n2": 3, "n3": 1, "": 1}, 8, true, false},
		{"a group without a leader", map[string]int{"n1": 3, "n2": 2, "n3": 2, "": 1}, 8, true, false},
		{"seven groups", map[string]int{"n1": 3, "n2": 2, "n3": 2}, 7, true, true},
		{"a node back from a restart", map[string]int{"n1": 2, "n2": 2, "n3": 0}, 4, true, false},
		{"evened out", map[string]int{"n1": 2, "n2": 1, "n3": 1}, 4, true, true},
		{"partial replication: node 1's groups led", map[string]int{"n1": 2, "n2": 0, "n4": 1}, 8, false, true},
		{"partial replication: one without a leader", map[string]int{"n1": 2, "": 1}, 8, false, false},
		{"no groups seen", map[string]int{"n1": 0}, 0, true, false},
	} {
		if got := leadersBalanced(tc.leads, tc.groups, tc.full); got != tc.want {
			t.Errorf("%s: leadersBalanced(%v, %d, %v) = %v, want %v", tc.name, tc.leads, tc.groups, tc.full, got, tc.want)
		}
	}
	if got, want := spreadString(map[string]int{"n2": 3, "n1": 3, "n3": 1, "": 1}), "n1 3, n2 3, n3 1, none 1"; got != want {
		t.Errorf("spreadString = %q, want %q", got, want)
	}
}
