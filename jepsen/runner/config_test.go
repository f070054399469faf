// This file proves that --nemesis accepts what the help text and the
// Makefile's default promise: single names, groups, and lists mixing both
// (the default "partitions,kills"), without repeats, and refuses unknown
// names.
package runner

import (
	"slices"
	"testing"
)

func TestParseNemeses(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		bad  bool
	}{
		{in: "", want: nil},
		{in: "none", want: nil},
		{in: "kill-one", want: []string{NemKillOne}},
		{in: "kills", want: []string{NemKillOne, NemKillLeader, NemKillMinority, NemKillAll, NemPauseLeader}},
		{in: "partitions,kills", want: []string{NemPartitionOne, NemPartitionLeader, NemPartitionHalf, NemPartitionRing,
			NemPartitionFlap, NemKillOne, NemKillLeader, NemKillMinority, NemKillAll, NemPauseLeader}},
		{in: "kill-one, kills", want: []string{NemKillOne, NemKillLeader, NemKillMinority, NemKillAll, NemPauseLeader}},
		{in: "all", want: AllNemeses},
		{in: "kill-one,nope", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseNemeses(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseNemeses(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("ParseNemeses(%q) = %v, %v, want %v", tt.in, got, err, tt.want)
		}
	}
}
