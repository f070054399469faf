//go:build faults

package fsm

// Unsafe switches off safety checks so that the fault harness can prove it
// catches a wrong server (jepsen/). It exists only in fault builds (-tags
// faults): seatd sets it only with --unsafe-broken, and every replica must
// run the same setting.
type Unsafe struct {
	// SkipSeatCheck grants a hold's seats even when another hold owns
	// them (double grants), with the S1 assertions off.
	SkipSeatCheck bool
}

func (u Unsafe) skipSeatCheck() bool { return u.SkipSeatCheck }
