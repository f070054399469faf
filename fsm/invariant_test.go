// This file proves that entries a replica cannot apply like its peers crash
// the apply loop instead of being turned into results: a command without an
// op, a nested batch, a batch over BatchCommandsMax, and undecodable entry
// bytes panic. It also proves such a panic is clean: the entry's batch is
// discarded (state, applied index and clock unchanged) and nothing half
// applied becomes visible. The recover is here, in the test, only.
package fsm

import (
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestApplyPanics(t *testing.T) {
	hold := func() *ledgerpb.Command { return cmdHold("c1", "r1", "s1", 0, "A1") }
	tooMany := make([]*ledgerpb.Command, BatchCommandsMax+1)
	for i := range tooMany {
		tooMany[i] = cmdExpire(0, 1)
	}
	tests := []struct {
		name  string
		apply func(m *Machine)
		want  string // part of the panic message
	}{
		{"command without op", func(m *Machine) { m.Apply(2, &ledgerpb.Command{ProposedAtMs: 5000, ClientId: "c1", RequestId: "r9"}) }, "without op"},
		{"nested batch", func(m *Machine) { m.Apply(2, at(5000, cmdBatch(hold(), cmdBatch(hold())))) }, "nested batch"},
		{"empty nested batch", func(m *Machine) { m.Apply(2, at(5000, cmdBatch(cmdBatch()))) }, "nested batch"},
		{"op-less command in a batch", func(m *Machine) { m.Apply(2, at(5000, cmdBatch(hold(), &ledgerpb.Command{}))) }, "without op"},
		{"batch over BatchCommandsMax", func(m *Machine) { m.Apply(2, at(5000, cmdBatch(tooMany...))) }, "batch of"},
		{"undecodable entry", func(m *Machine) { m.ApplyEntry(2, []byte{0x0a, 0xff}) }, "decode entry 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMachine(t, newTestDB(t), 1)
			mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
			before := stateOf(t, m)
			got := recoverPanic(func() { tt.apply(m) })
			if got == nil {
				t.Fatalf("%s: Apply returned, want a panic", tt.name)
			}
			if msg, _ := got.(string); !strings.Contains(msg, tt.want) {
				t.Errorf("%s: panic %q, want one mentioning %q", tt.name, got, tt.want)
			}
			if after := stateOf(t, m); after != before {
				t.Fatalf("%s: state after the panic %+v, want unchanged %+v", tt.name, after, before)
			}
			if s := seatStates(t, m, "s1"); s["A1"] != ledgerpb.SeatState_FREE {
				t.Errorf("%s: seat A1 = %s after the panic, want FREE (the batch is discarded)", tt.name, s["A1"])
			}
			// The machine still applies the next good entry at that index.
			res := mustApply(t, m, 2, at(5000, hold()), 1)
			if res[0].Code != ledgerpb.Code_CODE_OK {
				t.Errorf("%s: Hold(A1) after the panic = %s, want OK", tt.name, resultString(res[0]))
			}
		})
	}
}

func recoverPanic(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestApplyEntryDecodes: ApplyEntry applies what EncodeCommand wrote.
func TestApplyEntryDecodes(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 1)
	data, err := EncodeCommand(at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))))
	if err != nil {
		t.Fatal(err)
	}
	res := m.ApplyEntry(1, data)
	if len(res) != 1 || res[0].Code != ledgerpb.Code_CODE_OK {
		t.Fatalf("ApplyEntry(CreateShow(s1)) = %v, want one OK", res)
	}
	if m.Applied() != 1 || m.Clock() != 1000 {
		t.Fatalf("Applied(), Clock() = %d, %d, want 1, 1000", m.Applied(), m.Clock())
	}
}
