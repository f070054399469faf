// This file proves the kill nemesis names the groups a kill leaves without
// a quorum of live replicas, so a report tells an expected stop of writes
// (2 of a group's 3 replicas killed) from a liveness bug.
package runner

import "testing"

func TestQuorumLost(t *testing.T) {
	replicas := map[uint32][]string{0: {"n1", "n2", "n3"}, 1: {"n2", "n3", "n4"}}
	for _, tt := range []struct {
		down []string
		want string
	}{
		{[]string{"n5"}, ""},
		{[]string{"n1", "n4"}, ""},
		{[]string{"n2", "n4"}, "g1[n2 n3 n4]"},
		{[]string{"n2", "n3"}, "g0[n1 n2 n3] g1[n2 n3 n4]"},
		{[]string{"n1", "n2", "n3", "n4", "n5"}, "g0[n1 n2 n3] g1[n2 n3 n4]"},
	} {
		if got := quorumLost(replicas, tt.down); got != tt.want {
			t.Errorf("quorumLost(%v) = %q, want %q", tt.down, got, tt.want)
		}
	}
}
