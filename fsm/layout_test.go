// This file proves the pure layout and validation helpers by table: seat ids
// split into row and number in exactly one spelling, ids follow their
// character set and length limits, and validation names the failing field
// (including the cases scripts cannot express, such as a missing show).
package fsm

import (
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestSplitSeatID(t *testing.T) {
	tests := []struct {
		id  string
		row string
		num int
		ok  bool
	}{
		{"A1", "A", 1, true},
		{"B12", "B", 12, true},
		{"AB500", "AB", 500, true},
		{"ZZZ99999", "ZZZ", 99999, true},
		{"", "", 0, false},
		{"A", "", 0, false},
		{"1", "", 0, false},
		{"A0", "", 0, false},
		{"A01", "", 0, false},
		{"a1", "", 0, false},
		{"ABCD1", "", 0, false},
		{"A1B", "", 0, false},
		{"A 1", "", 0, false},
		{"A-1", "", 0, false},
		{"A+1", "", 0, false},
		{"A1234567", "A", 1234567, true},
		{"A12345678", "", 0, false},
	}
	for _, tt := range tests {
		row, num, ok := splitSeatID(tt.id)
		if row != tt.row || num != tt.num || ok != tt.ok {
			t.Errorf("splitSeatID(%q) = %q, %d, %v, want %q, %d, %v", tt.id, row, num, ok, tt.row, tt.num, tt.ok)
		}
	}
}

func TestSeatIndex(t *testing.T) {
	l := newLayout(testShow("s1", "A:3:std,BB:2:vip,C:1:std", "std:100:EUR,vip:300:EUR"))
	for i, id := range []string{"A1", "A2", "A3", "BB1", "BB2", "C1"} {
		n, ok := l.seatIndex(id)
		if !ok || int(n) != i {
			t.Errorf("seatIndex(%s) = %d, %v, want %d, true", id, n, ok, i)
		}
		if got := seatName(l, i); got != id {
			t.Errorf("seat(%d) = %s, want %s", i, got, id)
		}
	}
	for _, id := range []string{"A4", "B1", "BB3", "C2", "D1"} {
		if n, ok := l.seatIndex(id); ok {
			t.Errorf("seatIndex(%s) = %d, true, want not found", id, n)
		}
	}
	if row, _ := l.seat(3); l.price(row) != 300 {
		t.Errorf("price of BB1 = %d, want 300", l.price(row))
	}
}

func TestValidID(t *testing.T) {
	tests := []struct {
		s   string
		max int
		ok  bool
	}{
		{"s1", 64, true},
		{"Show.2026-01_01:x", 64, true},
		{"", 64, false},
		{strings.Repeat("a", 64), 64, true},
		{strings.Repeat("a", 65), 64, false},
		{"a b", 64, false},
		{"a/b", 64, false},
		{"é", 64, false},
		{"a\x00", 64, false},
	}
	for _, tt := range tests {
		if got := ValidID(tt.s, tt.max); got != tt.ok {
			t.Errorf("ValidID(%q, %d) = %v, want %v", tt.s, tt.max, got, tt.ok)
		}
	}
}

func TestValidateFields(t *testing.T) {
	hold := func(show string, ttl int64, seats ...string) *ledgerpb.HoldCmd {
		return &ledgerpb.HoldCmd{ShowId: show, SeatIds: seats, TtlMs: ttl}
	}
	tests := []struct {
		name string
		fe   *FieldError
		want string // "" for valid
	}{
		{"nil show", ValidateShow(nil), "show"},
		{"valid show", ValidateShow(testShow("s1", "A:4:std", "std:1:EUR")), ""},
		{"category without currency", ValidateShow(testShow("s1", "A:4:std", "std:1:")), "show.categories[0].currency"},
		{"101 rows", ValidateShow(&ledgerpb.Show{ShowId: "s1", Rows: make([]*ledgerpb.Row, 101),
			Categories: []*ledgerpb.Category{{Name: "std", Currency: "EUR"}}}), "show.rows"},
		{"valid hold", ValidateHold(hold("s1", 0, "A1")), ""},
		{"hold of 10 seats", ValidateHold(hold("s1", 0, "A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8", "A9", "A10")), ""},
		{"hold without seats", ValidateHold(hold("s1", 0)), "seat_ids"},
		{"empty seat id", ValidateHold(hold("s1", 0, "")), "seat_ids"},
		{"ttl below min", ValidateHold(hold("s1", HoldTTLMinMs-1, "A1")), "ttl_seconds"},
		{"ttl at max", ValidateHold(hold("s1", HoldTTLMaxMs, "A1")), ""},
		{"confirm", ValidateConfirm(&ledgerpb.ConfirmCmd{ShowId: "s1", HoldId: "h0-1-0", PaymentRef: "p", HoldToken: "t"}), ""},
		{"confirm without token", ValidateConfirm(&ledgerpb.ConfirmCmd{ShowId: "s1", HoldId: "h0-1-0", PaymentRef: "p"}), "hold_token"},
		{"best of 3", ValidateHold(&ledgerpb.HoldCmd{ShowId: "s1", Count: 3, Category: "vip"}), ""},
		{"best of 11", ValidateHold(&ledgerpb.HoldCmd{ShowId: "s1", Count: 11}), "count"},
		{"seats and count", ValidateHold(&ledgerpb.HoldCmd{ShowId: "s1", Count: 1, SeatIds: []string{"A1"}}), "count"},
		{"category with seats", ValidateHold(&ledgerpb.HoldCmd{ShowId: "s1", Category: "vip", SeatIds: []string{"A1"}}), "count"},
		{"extend ttl over max", ValidateExtend(&ledgerpb.ExtendCmd{ShowId: "s1", HoldId: "h", HoldToken: "t", TtlMs: HoldTTLMaxMs + 1}), "ttl_seconds"},
		{"release without token", ValidateRelease(&ledgerpb.ReleaseCmd{ShowId: "s1", HoldId: "h"}), "hold_token"},
		{"refund reason too long", ValidateRefund(&ledgerpb.RefundCmd{ShowId: "s1", HoldId: "h", HoldToken: "t", Reason: strings.Repeat("x", RefundReasonLenMax+1)}), "reason"},
		{"confirm without payment", ValidateConfirm(&ledgerpb.ConfirmCmd{ShowId: "s1", HoldId: "h0-1-0"}), "payment_ref"},
		{"identity", ValidateIdentity("c1", "r1"), ""},
		{"identity without request", ValidateIdentity("c1", ""), "request_id"},
	}
	for _, tt := range tests {
		got := ""
		if tt.fe != nil {
			got = tt.fe.Field
			if !strings.Contains(tt.fe.Error(), tt.fe.Field) {
				t.Errorf("%s: Error() = %q does not name the field", tt.name, tt.fe.Error())
			}
		}
		if got != tt.want {
			t.Errorf("%s: field = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestSeatIDs(t *testing.T) {
	led := newLedger()
	l := led.sharedLayout(testShow("s1", "A:20:std,BB:200:std", "std:1000:EUR"))
	for _, idx := range [][]int{nil, {0}, {19, 20, 219}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}} {
		got := l.seatIDs(idx)
		if len(got) != len(idx) || got == nil {
			t.Fatalf("seatIDs(%v) = %q", idx, got)
		}
		for i, n := range idx {
			if got[i] != l.seatID(n) {
				t.Errorf("seatIDs(%v)[%d] = %q, want %q", idx, i, got[i], l.seatID(n))
			}
		}
	}
}
