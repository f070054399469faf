//go:build faults

// This file proves that fsm.Unsafe{SkipSeatCheck} really breaks S1 (two
// holds own one seat) without crashing the replica, so that the fault
// harness's self-test has a wrong server to catch — and that a machine
// without it refuses the same double grant.
package fsm

import (
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestUnsafeSkipSeatCheck(t *testing.T) {
	for _, skip := range []bool{false, true} {
		m := newTestMachine(t, newTestDB(t), 0)
		m.SetUnsafe(Unsafe{SkipSeatCheck: skip})
		mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
		first := mustApply(t, m, 2, at(1000, cmdHold("c1", "r1", "s1", 0, "A1", "A2")), 1)[0]
		second, err := applyRecover(m, 3, at(1001, cmdHold("c2", "r1", "s1", 0, "A2", "A3")))
		if err != nil {
			t.Fatalf("skip=%v: second Hold(A2,A3) crashed: %v", skip, err)
		}
		want := ledgerpb.Code_CODE_SEATS_TAKEN
		if skip {
			want = ledgerpb.Code_CODE_OK
		}
		if second[0].Code != want {
			t.Fatalf("skip=%v: Hold(A2,A3) = %s, want %s", skip, resultString(second[0]), want)
		}
		// Confirming and releasing the first hold must not crash either.
		if _, err := applyRecover(m, 4, at(1002, cmdConfirm("c1", "r2", "s1", first.HoldId, "pay"))); err != nil {
			t.Fatalf("skip=%v: Confirm after a double grant crashed: %v", skip, err)
		}
	}
}
