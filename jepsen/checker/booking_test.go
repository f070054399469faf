package checker

// These tests prove, on small handcrafted histories, that the checker
// judges the booking operations beyond hold/confirm/release: a
// best-available grant must be free, of the count and category asked for;
// SOLD_OUT needs too few free seats; an info best-available hold may
// explain held seats of its category only; extend moves expiry exactly as
// max(old, clock + TTL), and an info extend may or may not have; a refund
// frees a booking's seats, and S2 accepts a refunded booking but not a lost
// or resurrected one; TOO_MANY_HOLDS and HOLD_TOKEN_INVALID change nothing.

import (
	"testing"

	"github.com/seatledger/seatledger/jepsen/history"
)

func TestBestAvailableGrant(t *testing.T) {
	base := func(grant history.Op) *history.History {
		return withLayout(mk(
			holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			grant,
			read(2, 40, 50, 4, 1200, "A1=HELD A2=HELD A3=HELD B1=FREE B2=FREE B3=FREE"),
		), layout6)
	}
	wantValid(t, check(t, base(holdBest(1, 20, 30, "h2", 3, 1100, 5000, "vip", "A2", "A3"))))
	cases := map[string]struct {
		grant  history.Op
		checks []string
	}{
		"a held seat":        {holdBest(1, 20, 30, "h2", 3, 1100, 5000, "vip", "A1", "A2"), []string{CheckLinearizable, CheckS1}},
		"fewer than asked":   {withCount(holdBest(1, 20, 30, "h2", 3, 1100, 5000, "vip", "A2"), 2), []string{CheckLinearizable}},
		"another category":   {holdBest(1, 20, 30, "h2", 3, 1100, 5000, "vip", "A2", "B1"), []string{CheckLinearizable}},
		"a seat twice":       {holdBest(1, 20, 30, "h2", 3, 1100, 5000, "vip", "A2", "A2"), []string{CheckLinearizable}},
		"a seat not in show": {holdBest(1, 20, 30, "h2", 3, 1100, 5000, "", "A2", "C9"), []string{CheckLinearizable}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, base(tc.grant)), StatusViolated, tc.checks...)
		})
	}
}

func withCount(op history.Op, n int) history.Op {
	op.Count = n
	return op
}

// SOLD_OUT is right only when fewer than count seats of the category are
// free; seats of holds expired by the log clock are free.
func TestSoldOut(t *testing.T) {
	held := []history.Op{
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1", "A2"),
		holdOK(1, 0, 10, "h2", 2, 1000, 2000, "A3"),
	}
	with := func(ops ...history.Op) *history.History {
		return withLayout(mk(append(append([]history.Op(nil), held...), ops...)...), layout6)
	}
	wantValid(t, check(t, with(soldOut(2, 20, 30, 3, 1100, 1, "vip"))))
	wantValid(t, check(t, with(soldOut(2, 20, 30, 3, 1100, 4, ""))))
	cases := map[string]*history.History{
		"std seats free":         with(soldOut(2, 20, 30, 3, 1100, 1, "std")),
		"any seats free":         with(soldOut(2, 20, 30, 3, 1100, 3, "")),
		"an expired hold's seat": with(soldOut(2, 20, 30, 3, 3000, 1, "vip")),
		"named seats":            with(withCount(soldOut(2, 20, 30, 3, 1100, 1, ""), 0)),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, h), StatusViolated, CheckLinearizable, CheckOrdering)
		})
	}
	// Without a layout the category cannot be judged, but seats a read
	// reported free still count.
	wantValid(t, check(t, mk(held[0], soldOut(2, 20, 30, 3, 1100, 1, "std"))))
	noLayout := mk(held[0], read(1, 11, 15, 2, 1000, "A1=HELD A2=HELD B1=FREE"), soldOut(2, 20, 30, 3, 1100, 1, ""))
	wantStatus(t, check(t, noLayout), StatusViolated, CheckLinearizable)
}

// An info best-available hold may hold seats of its category, which then
// read HELD, fill the category, and may end HELD in the final reads.
func TestInfoBestAvailable(t *testing.T) {
	h := withLayout(mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1", "A2"),
		holdBestInfo(1, 5, 5000, 1, "vip"),
		read(2, 20, 30, 3, 1100, "A1=HELD A2=HELD A3=HELD B1=FREE B2=FREE B3=FREE"),
		soldOut(2, 31, 40, 4, 1200, 1, "vip"),
	), layout6)
	h.Final = final(1300, "A1=HELD A2=HELD A3=HELD B1=FREE B2=FREE B3=FREE", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1", "A2"}, State: "HOLD_STATE_HELD", ExpiresAtMs: 6000},
	})
	wantValid(t, check(t, h))
	// Not a seat of another category, nor with the hold nobody asked for.
	replace(h, 2, read(2, 20, 30, 3, 1100, "A1=HELD A2=HELD A3=FREE B1=HELD B2=FREE B3=FREE"))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable)
	h.Ops = h.Ops[:1]
	wantStatus(t, check(t, h), StatusViolated, CheckS4)
}

// Extend moves the expiry to max(old, clock + TTL); reads, confirms and S3
// use the new expiry.
func TestExtend(t *testing.T) {
	base := func(extra ...history.Op) *history.History {
		return mk(append([]history.Op{
			holdOK(0, 0, 10, "h1", 2, 1000, 2000, "A1"), // expires at 3000
			extendOp(0, 20, 30, "h1", 2000, history.OK, "", 4500, 3, 2500),
		}, extra...)...)
	}
	wantValid(t, check(t, base(
		read(1, 40, 50, 4, 3500, "A1=HELD"),
		getHold(1, 51, 52, "h1", "HELD", 4, 3500),
		confirmOp(0, 60, 70, "h1", "p", history.OK, "", 5, 4400),
	)))
	wantValid(t, check(t, base(
		confirmOp(0, 60, 70, "h1", "p", history.Fail, "HOLD_EXPIRED", 4, 4500),
		extendOp(0, 80, 90, "h1", 2000, history.Fail, "HOLD_EXPIRED", 0, 5, 4600),
	)))
	// An extend asking for less than the hold has leaves it unchanged.
	wantValid(t, check(t, mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		extendOp(0, 20, 30, "h1", 1000, history.OK, "", 6000, 3, 1500),
	)))
	cases := map[string]struct {
		h      *history.History
		checks []string
	}{
		"seat free before the new expiry": {base(read(1, 40, 50, 4, 3500, "A1=FREE")), []string{CheckLinearizable, CheckS3}},
		"expired before the new expiry":   {base(getHold(1, 40, 50, "h1", "EXPIRED", 4, 3500)), []string{CheckLinearizable, CheckS3}},
		"held after the new expiry":       {base(read(1, 40, 50, 4, 4500, "A1=HELD")), []string{CheckLinearizable}},
		"granted before the new expiry":   {base(holdOK(1, 40, 50, "h2", 4, 3500, 5000, "A1")), []string{CheckLinearizable, CheckS1}},
		"a wrong new expiry": {mk(holdOK(0, 0, 10, "h1", 2, 1000, 2000, "A1"),
			extendOp(0, 20, 30, "h1", 2000, history.OK, "", 4400, 3, 2500)), []string{CheckLinearizable}},
		"an expiry moved back": {mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			extendOp(0, 20, 30, "h1", 1000, history.OK, "", 2500, 3, 1500)), []string{CheckLinearizable}},
		"extended after expiry": {mk(holdOK(0, 0, 10, "h1", 2, 1000, 2000, "A1"),
			extendOp(0, 20, 30, "h1", 2000, history.OK, "", 5000, 3, 3000)), []string{CheckLinearizable}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, tc.h), StatusViolated, tc.checks...)
		})
	}
}

// An info extend may or may not have moved the expiry, but never beyond
// the old expiry + its TTL.
func TestInfoExtend(t *testing.T) {
	h := func(seen string, at int64) *history.History {
		return mk(
			holdOK(0, 0, 10, "h1", 2, 1000, 2000, "A1"), // expires at 3000
			extendOp(0, 20, 0, "h1", 2000, history.Info, "OUTCOME_UNKNOWN", 0, 0, 0),
			read(1, 40, 50, 4, at, "A1="+seen),
		)
	}
	wantValid(t, check(t, h("HELD", 3500)))
	wantValid(t, check(t, h("FREE", 3500)))
	wantStatus(t, check(t, h("HELD", 5000)), StatusViolated, CheckLinearizable)
}

// Extend answers like confirm and release for a hold it cannot extend.
func TestExtendRejections(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		holdOK(0, 0, 10, "h2", 2, 1000, 5000, "A2"),
		confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
		releaseOp(0, 20, 30, "h2", history.OK, "", 3, 1100),
		extendOp(0, 40, 50, "h1", 2000, history.Fail, "HOLD_CONFIRMED", 0, 4, 1200),
		extendOp(0, 40, 50, "h2", 2000, history.Fail, "HOLD_CANCELLED", 0, 4, 1200),
		extendOp(1, 40, 50, "h1", 2000, history.Fail, "NOT_HOLD_OWNER", 0, 4, 1200),
	)
	wantValid(t, check(t, h))
	replace(h, 4, extendOp(0, 40, 50, "h1", 2000, history.OK, "", 3200, 4, 1200))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable, CheckOrdering)
}

// A refund frees a booking's seats for the next hold, and the refunded
// booking is no lost confirm.
func TestRefund(t *testing.T) {
	refunded := func(extra ...history.Op) *history.History {
		h := mk(append([]history.Op{
			holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
			refundOp(0, 40, 50, "h1", history.OK, "", 4, 1200),
		}, extra...)...)
		h.Final = final(9000, "A1=FREE", map[string]history.FinalHold{
			"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_REFUNDED", ExpiresAtMs: 6000, PaymentRef: "p"},
		})
		return h
	}
	wantValid(t, check(t, refunded(
		read(1, 60, 70, 5, 1300, "A1=FREE"),
		getHold(1, 71, 72, "h1", "REFUNDED", 5, 1300),
		refundOp(0, 80, 90, "h1", history.OK, "", 6, 1400),
		confirmOp(0, 91, 92, "h1", "p", history.Fail, "HOLD_CONFIRMED", 7, 1500),
		releaseOp(0, 93, 94, "h1", history.Fail, "HOLD_CONFIRMED", 7, 1500),
		holdOK(1, 95, 96, "h2", 8, 1600, 1000, "A1"),
	)))
	cases := map[string]struct {
		h      *history.History
		checks []string
	}{
		"seat granted before the refund": {refunded(holdOK(1, 31, 39, "h2", 3, 1100, 5000, "A1")), []string{CheckLinearizable, CheckS1}},
		"seat booked after the refund":   {refunded(read(1, 60, 70, 5, 1300, "A1=BOOKED")), []string{CheckLinearizable}},
		"confirmed after the refund":     {refunded(getHold(1, 60, 70, "h1", "CONFIRMED", 5, 1300)), []string{CheckLinearizable}},
		"refund of a held hold": {mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			refundOp(0, 20, 30, "h1", history.OK, "", 3, 1100)), []string{CheckLinearizable}},
		"a booking not confirmed": {mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
			refundOp(0, 40, 50, "h1", history.Fail, "HOLD_NOT_CONFIRMED", 4, 1200)), []string{CheckLinearizable}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, tc.h), StatusViolated, tc.checks...)
		})
	}
	wantValid(t, check(t, mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		holdOK(0, 0, 10, "h2", 2, 1000, 5000, "A2"),
		releaseOp(0, 20, 30, "h2", history.OK, "", 3, 1100),
		refundOp(0, 40, 50, "h1", history.Fail, "HOLD_NOT_CONFIRMED", 4, 1200),
		refundOp(0, 40, 50, "h2", history.Fail, "HOLD_NOT_CONFIRMED", 4, 1200),
		refundOp(0, 60, 70, "h1", history.Fail, "HOLD_EXPIRED", 5, 6000),
	)))
}

// S2 with refunds: a booking refunded on request may end REFUNDED (an info
// refund may or may not have happened); one no refund named may not, and an
// acknowledged refund may not be undone.
func TestS2Refunds(t *testing.T) {
	h := func(outcome history.Outcome, finalState, seat string) *history.History {
		ops := []history.Op{
			holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
			confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
		}
		if outcome != "" {
			ops = append(ops, refundOp(0, 40, 0, "h1", outcome, "OUTCOME_UNKNOWN", 0, 0))
			if outcome == history.OK {
				ops[2] = refundOp(0, 40, 50, "h1", history.OK, "", 4, 1200)
			}
		}
		hist := mk(ops...)
		hist.Final = final(9000, "A1="+seat, map[string]history.FinalHold{
			"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_" + finalState, ExpiresAtMs: 6000, PaymentRef: "p"},
		})
		return hist
	}
	wantValid(t, check(t, h(history.Info, "REFUNDED", "FREE")))
	wantValid(t, check(t, h(history.Info, "CONFIRMED", "BOOKED")))
	wantValid(t, check(t, h(history.OK, "REFUNDED", "FREE")))
	for name, hist := range map[string]*history.History{
		"refunded without a refund": h("", "REFUNDED", "FREE"),
		"refund undone":             h(history.OK, "CONFIRMED", "BOOKED"),
		"booking seat freed":        h(history.Info, "CONFIRMED", "FREE"),
	} {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, hist), StatusViolated, CheckS2)
		})
	}
}

// An info refund may free the seats, but only of a booking.
func TestInfoRefund(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
		refundOp(0, 40, 0, "h1", history.Info, "OUTCOME_UNKNOWN", 0, 0),
		read(1, 50, 60, 5, 1200, "A1=BOOKED"),
		read(1, 61, 70, 6, 1300, "A1=FREE"),
		holdOK(1, 71, 80, "h2", 7, 1400, 5000, "A1"),
	)
	wantValid(t, check(t, h))
	appendOp(h, read(1, 90, 95, 8, 1500, "A1=BOOKED"))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable, CheckOrdering)
}

// TOO_MANY_HOLDS and HOLD_TOKEN_INVALID are answers that change nothing.
func TestNoOpRejections(t *testing.T) {
	tooMany := holdTaken(1, 20, 30, 3, 1100, nil, "A2")
	tooMany.Reason = "TOO_MANY_HOLDS"
	badToken := confirmOp(0, 20, 30, "h1", "p", history.Fail, "HOLD_TOKEN_INVALID", 3, 1100)
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		tooMany,
		badToken,
		read(2, 40, 50, 4, 1200, "A1=HELD A2=FREE"),
	)
	wantValid(t, check(t, h))
	replace(h, 3, read(2, 40, 50, 4, 1200, "A1=BOOKED A2=HELD"))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable)
}

// A re-sent best-available hold or extend must get the same seats and
// expiry.
func TestResendBookingAnswers(t *testing.T) {
	again := holdBest(0, 20, 30, "h1", 2, 1000, 5000, "", "A2")
	again.Resend, again.Of, again.Replayed = true, 0, true
	h := mk(holdBest(0, 0, 10, "h1", 2, 1000, 5000, "", "A1"), again)
	wantStatus(t, check(t, h), StatusViolated, CheckS4)

	ext := extendOp(0, 40, 50, "h1", 2000, history.OK, "", 4000, 3, 2000)
	ext.Resend, ext.Of, ext.Replayed = true, 1, true
	h = mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"), extendOp(0, 20, 30, "h1", 2000, history.OK, "", 6000, 3, 2000), ext)
	wantStatus(t, check(t, h), StatusViolated, CheckS4)
}
