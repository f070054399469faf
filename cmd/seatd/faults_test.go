//go:build faults

// This file proves that a fault build has its test-only flags and refuses
// an unknown broken mode (the default build's help test proves it has none).
package main

import (
	"flag"
	"testing"
)

func TestFaultFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	f := registerFaultFlags(fs)
	if err := fs.Parse([]string{"--unsafe-broken", "stale-reads", "--unsafe-test-hooks"}); err != nil {
		t.Fatalf("a fault build refused its flags: %v", err)
	}
	if f.Broken != "stale-reads" || !f.ClockHook || f.Validate() != nil {
		t.Errorf("flags gave %+v, validate %v", *f, f.Validate())
	}
	if (faultConfig{Broken: "nonsense"}).Validate() == nil {
		t.Error("Validate(nonsense) succeeded, want an error")
	}
}
