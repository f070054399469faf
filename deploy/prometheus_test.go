// This file proves the alerting rules under deploy/prometheus are valid
// (promtool check rules) and fire when they should and only then (promtool
// test rules on seatledger.rules.test.yml). promtool comes from Debian's
// prometheus package; without it the test skips, unless
// SEATLEDGER_REQUIRE_PROMTOOL=1 (set by .ci/run), which makes it fail.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// promtool returns the path of promtool, skipping or failing without it.
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if os.Getenv("SEATLEDGER_REQUIRE_PROMTOOL") == "1" {
		t.Fatalf("promtool not found and SEATLEDGER_REQUIRE_PROMTOOL=1: apt-get install prometheus")
	}
	t.Skip("promtool not found (apt-get install prometheus); SEATLEDGER_REQUIRE_PROMTOOL=1 makes this a failure")
	return ""
}

func TestPrometheusRules(t *testing.T) {
	bin := promtool(t)
	rules, err := filepath.Glob("prometheus/*.rules.yml")
	if err != nil || len(rules) == 0 {
		t.Fatalf("no rule files in deploy/prometheus: %v", err)
	}
	for _, args := range [][]string{
		append([]string{"check", "rules"}, rules...),
		{"test", "rules", "seatledger.rules.test.yml"},
	} {
		cmd := exec.Command(bin, args...)
		if args[0] == "test" {
			cmd.Dir = "prometheus" // the test file names its rule files relative to itself
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}
