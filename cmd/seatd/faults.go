package main

// faultConfig is a fault build's deliberately wrong modes and test hooks
// (unsafe.go, -tags faults), so that jepsen/ can prove its checkers catch a
// wrong server and skew clocks. A default build has no flags to set them
// (nofaults.go): it cannot be told to break itself.
type faultConfig struct {
	// Broken names a deliberately wrong server mode, "" = none.
	Broken string
	// ClockHook serves /debug/unsafe/clock to skew this node's clock.
	ClockHook bool
}

func (f faultConfig) on() bool { return f.Broken != "" || f.ClockHook }
