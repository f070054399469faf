// This file proves that a Hold can only name a seat in its one canonical
// spelling ("A1"): a seat id that parses to the same seat as another
// spelling (a signed number such as "A+1") must be rejected as a result, not
// accepted (which stores a hold whose seat ids disagree with the seat
// records) and not crash every replica on an invariant. And a hold's expiry
// must not wrap around int64.
package fsm

import (
	"math"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestHoldSignedSeatID(t *testing.T) {
	tests := []struct {
		name  string
		seats []string
	}{
		{"one seat spelled twice", []string{"A1", "A+1"}},
		{"signed spelling alone", []string{"A+2"}},
		{"signed with leading zero", []string{"A+03"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMachine(t, newTestDB(t), 0)
			mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
			res, err := applyRecover(m, 2, at(1000, cmdHold("c1", "r1", "s1", 0, tt.seats...)))
			if err != nil {
				t.Fatalf("Hold(%v) crashed the machine: %v", tt.seats, err)
			}
			if c := res[0].Code; c != ledgerpb.Code_CODE_UNKNOWN_SEAT && c != ledgerpb.Code_CODE_INVALID_ARGUMENT {
				t.Errorf("Hold(%v) = %s, want UNKNOWN_SEAT (or INVALID_ARGUMENT)", tt.seats, resultString(res[0]))
			}
			// Whatever happened, the canonical seats must still be usable.
			_, err = applyRecover(m, 3, at(1000, cmdHold("c2", "r1", "s1", 0, "A1", "A2", "A3")))
			if err != nil {
				t.Fatalf("Hold(A1,A2,A3) after Hold(%v) crashed the machine: %v", tt.seats, err)
			}
			if err := checkS1(m, []string{"s1"}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestHoldExpiryDoesNotOverflow: expires_at = clock + ttl must not wrap
// around int64. A leader stamping a time near the end of int64 (a broken
// clock) must not get an OK hold that is expired at birth, with expires_at
// before created_at and an expiry-index key no Expire ever reaches.
func TestHoldExpiryDoesNotOverflow(t *testing.T) {
	const now = math.MaxInt64 - 1000
	m := newTestMachine(t, newTestDB(t), 0)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	res := mustApply(t, m, 2, at(now, cmdHold("c1", "r1", "s1", 0, "A1")), 1)
	if res[0].Code != ledgerpb.Code_CODE_OK {
		return // rejecting such a clock is fine too
	}
	if res[0].ExpiresAtMs <= res[0].AppliedAtMs {
		t.Errorf("Hold(A1) at clock %d = OK with expires %d <= applied_at %d: clock + ttl wrapped around",
			now, res[0].ExpiresAtMs, res[0].AppliedAtMs)
	}
	if s := seatStates(t, m, "s1"); s["A1"] != ledgerpb.SeatState_HELD {
		t.Errorf("seat A1 after an OK Hold(A1) = %s, want HELD", s["A1"])
	}
}
