//go:build !faults

package fsm

// Unsafe would switch off safety checks so that the fault harness can
// prove it catches a wrong server (jepsen/). Only a fault build has any
// (unsafe_faults.go, -tags faults): a default build cannot be told to
// break itself.
type Unsafe struct{}

func (Unsafe) skipSeatCheck() bool { return false }
