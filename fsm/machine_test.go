// This file proves properties of Apply's envelope handling that the scripts
// do not state directly: the rejection order of doc.go (a field out of its
// limits is INVALID_ARGUMENT before the exactly-once lookup can call it
// REQUEST_ID_REUSED), that proposed_at is not part of a request's payload
// while every other field is, and that the clock never goes below 0.
package fsm

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// TestRejectionOrderFieldBeforeReused follows doc.go: "checked in this
// order: 1. CODE_INVALID_ARGUMENT a missing client_id/request_id, or a field
// out of its limits ... 2. CODE_REQUEST_ID_REUSED".
func TestRejectionOrderFieldBeforeReused(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdHold("c1", "r1", "s1", 0, "A1")), 1)
	tests := []struct {
		cmd   *ledgerpb.Command
		field string
	}{
		{cmdHold("c1", "r1", "s1", 0), "seat_ids"},
		{cmdHold("c1", "r1", "s1", 10, "A2"), "ttl_seconds"},
		{cmdConfirm("c1", "r1", "s1", "h0-2-0", ""), "payment_ref"},
		{cmdRelease("c1", "r1", "s1", ""), "hold_id"},
		{cmdShow("c1", "r1", &ledgerpb.Show{ShowId: "s2"}), "show.categories"},
	}
	for i, tt := range tests {
		res := mustApply(t, m, uint64(3+i), at(2000, tt.cmd), 1)
		if res[0].Code != ledgerpb.Code_CODE_INVALID_ARGUMENT || res[0].Field != tt.field {
			t.Errorf("%s reusing request r1 = %s, want INVALID_ARGUMENT field=%s (doc.go checks fields before REQUEST_ID_REUSED)",
				opName(tt.cmd), resultString(res[0]), tt.field)
		}
	}
}

func TestPayloadIdentity(t *testing.T) {
	payloadHash := func(c *ledgerpb.Command) []byte { return slices.Clone((&txn{}).payloadHash(c)) }
	base := cmdHold("c1", "r1", "s1", 5000, "A1", "A2")
	same := at(123456, proto.Clone(base).(*ledgerpb.Command))
	if string(payloadHash(base)) != string(payloadHash(same)) {
		t.Errorf("payloadHash differs when only proposed_at_ms differs")
	}
	for name, other := range map[string]*ledgerpb.Command{
		"seat order": cmdHold("c1", "r1", "s1", 5000, "A2", "A1"),
		"ttl":        cmdHold("c1", "r1", "s1", 0, "A1", "A2"),
		"show":       cmdHold("c1", "r1", "s2", 5000, "A1", "A2"),
		"op":         cmdRelease("c1", "r1", "s1", "A1"),
	} {
		if string(payloadHash(base)) == string(payloadHash(other)) {
			t.Errorf("payloadHash equal for a different %s", name)
		}
	}
}

// TestClockNeverBefore1970: a negative proposed_at (a broken leader clock)
// on a fresh machine leaves the clock at 0, so expiry times stay positive.
func TestClockNeverBefore1970(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	mustApply(t, m, 1, at(-5000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:1:EUR"))), 1)
	if m.Clock() != 0 {
		t.Fatalf("Clock() after proposed_at -5000 = %d, want 0", m.Clock())
	}
	res := mustApply(t, m, 2, at(-1, cmdHold("c1", "r1", "s1", 1000, "A1")), 1)
	if res[0].Code != ledgerpb.Code_CODE_OK || res[0].ExpiresAtMs != 1000 || res[0].AppliedAtMs != 0 {
		t.Fatalf("Hold(A1) at -1 = %s, want OK expires=1000 applied_at=0", resultString(res[0]))
	}
}
