package checker

// These tests prove, on small handcrafted histories, that a clean concurrent
// history passes every check; that each kind of wrong server answer is caught
// by the check meant for it (double grant, stale read, lost confirm, resend
// answered differently, phantom seat, digest mismatch, expiry ignored); and
// that info ops and expiry by the log clock never cause a false alarm.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
)

// cleanHistory is a concurrent history a correct server could produce.
func cleanHistory() *history.History {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1", "A2"),
		holdTaken(1, 1, 12, 3, 1001, []string{"A2"}, "A2", "A3"),
		read(2, 5, 15, 3, 1001, "A1=HELD A2=HELD A3=FREE"),
		confirmOp(0, 20, 30, "h1", "pay1", history.OK, "", 4, 1100),
		holdOK(1, 21, 31, "h2", 5, 1200, 5000, "A3"),
		read(2, 22, 40, 5, 1200, "A1=BOOKED A2=BOOKED A3=HELD"),
		releaseOp(1, 41, 50, "h2", history.OK, "", 6, 1300),
		getHold(2, 51, 55, "h2", "CANCELLED", 6, 1300),
		read(2, 56, 60, 6, 1300, "A1=BOOKED A2=BOOKED A3=FREE"),
		confirmOp(1, 61, 70, "h2", "pay2", history.Fail, "HOLD_CANCELLED", 7, 1400),
	)
	h.Final = final(2000, "A1=BOOKED A2=BOOKED A3=FREE", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1", "A2"}, State: "HOLD_STATE_CONFIRMED", ExpiresAtMs: 6000, PaymentRef: "pay1"},
		"h2": {Seats: []string{"A3"}, State: "HOLD_STATE_CANCELLED", ExpiresAtMs: 6200},
	})
	h.Faults = []history.Fault{{At: 25, Kind: "kill", Nodes: "n2"}}
	return h
}

func TestCleanHistoryPasses(t *testing.T) {
	r := check(t, cleanHistory())
	wantValid(t, r)
	if r.Summary.Outcomes[history.KindHold][history.OK] != 2 || r.Summary.Faults["kill"] != 1 {
		t.Errorf("summary = %+v, want 2 OK holds and 1 kill", r.Summary)
	}
	if l := r.Summary.Latency[history.KindRead]; l.Count != 3 || l.MaxMs != 18e-6 {
		t.Errorf("read latency = %+v, want 3 reads, max 18e-6 ms", l)
	}
}

func TestDoubleGrant(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		holdOK(1, 20, 30, "h2", 3, 2000, 5000, "A1", "A2"),
	)
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS1, CheckLinearizable, CheckS3, CheckOrdering)
}

func TestStaleRead(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 5, 1000, 5000, "A1"),
		read(1, 20, 30, 4, 990, "A1=FREE"),
	)
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckLinearizable, CheckOrdering)
	wantStatus(t, r, StatusOK, CheckS1, CheckS3) // the read's revision is before the hold's
}

// A read that misses an acknowledged hold at a later revision breaks S3 too.
func TestReadMissesHold(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 5, 1000, 5000, "A1"),
		read(1, 20, 30, 6, 1001, "A1=FREE"),
	)
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckLinearizable, CheckOrdering, CheckS3)
}

func TestLostConfirm(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		confirmOp(0, 20, 30, "h1", "pay1", history.OK, "", 3, 1100),
	)
	h.Final = final(9000, "A1=FREE", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_EXPIRED", ExpiresAtMs: 6000},
	})
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS2)
	wantStatus(t, r, StatusOK, CheckLinearizable, CheckS1, CheckS4, CheckS6)
}

func TestResendAnsweredDifferently(t *testing.T) {
	resend := holdOK(0, 20, 30, "h9", 4, 1200, 5000, "A1")
	resend.Resend, resend.Of, resend.Replayed = true, 0, true
	h := mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"), resend)
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS4)
	wantStatus(t, r, StatusOK, CheckLinearizable, CheckS1)

	// The same resend answered like the original passes.
	same := holdOK(0, 20, 30, "h1", 2, 1000, 5000, "A1")
	same.Resend, same.Of, same.Replayed = true, 0, true
	wantValid(t, check(t, mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"), same)))

	// A resend applied anew (replayed=false) is caught too.
	again := holdOK(0, 20, 30, "h1", 2, 1000, 5000, "A1")
	again.Resend, again.Of = true, 0
	wantStatus(t, check(t, mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"), again)), StatusViolated, CheckS4)
}

// An info op whose resend got the answer is checked as one acknowledged op.
func TestInfoResolvedByResend(t *testing.T) {
	resend := holdOK(0, 40, 50, "h1", 2, 1000, 5000, "A1")
	resend.Resend, resend.Of, resend.Replayed = true, 0, true
	h := mk(
		holdInfo(0, 0, 5000, "A1"),
		read(1, 20, 30, 3, 1100, "A1=HELD"),
		resend,
		read(1, 60, 70, 4, 1200, "A1=HELD"),
	)
	wantValid(t, check(t, h))
	replace(h, 3, read(1, 60, 70, 4, 1200, "A1=FREE"))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable, CheckS3)
}

func TestPhantomSeat(t *testing.T) {
	h := mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"))
	h.Final = final(2000, "A1=HELD A5=HELD A6=FREE", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_HELD", ExpiresAtMs: 6000},
	})
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS4)
	wantStatus(t, r, StatusOK, CheckS1, CheckS2)
}

func TestBookedWithoutConfirm(t *testing.T) {
	h := mk(holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"))
	h.Final = final(2000, "A1=BOOKED", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_HELD", ExpiresAtMs: 6000},
	})
	wantStatus(t, check(t, h), StatusViolated, CheckS2)
}

func TestFinalDoubleOwner(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
		holdInfo(1, 40, 5000, "A1"),
	)
	h.Final = final(2000, "A1=BOOKED", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_CONFIRMED", ExpiresAtMs: 6000, PaymentRef: "p"},
		"h7": {Seats: []string{"A1"}, State: "HOLD_STATE_HELD", ExpiresAtMs: 7000},
	})
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS1)
	wantStatus(t, r, StatusOK, CheckLinearizable, CheckS2)
}

func TestDigestMismatch(t *testing.T) {
	h := cleanHistory()
	h.Final.Digests[1]["n3"] = "d2"
	h.Final.Digests[2] = map[string]string{"n1": "x"} // one replica: a warning only
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckS6)
	wantStatus(t, r, StatusOK, CheckLinearizable, CheckS1, CheckS2, CheckS3, CheckS4, CheckOrdering)
	if r.WarningsTotal == 0 {
		t.Errorf("no warning for a group with one digest")
	}
}

func TestInfoHoldApplied(t *testing.T) {
	h := mk(
		holdInfo(0, 0, 5000, "A1", "A2"),
		read(1, 20, 30, 3, 1500, "A1=HELD A2=HELD A3=FREE"),
		holdTaken(2, 31, 40, 4, 1600, []string{"A2"}, "A2", "A3"),
		// By log time 1500+5000 the info hold (applied at <= 1500) expired.
		read(1, 50, 60, 5, 6500, "A1=FREE A2=FREE A3=FREE"),
		holdOK(2, 61, 70, "h2", 6, 6600, 5000, "A1"),
	)
	wantValid(t, check(t, h))
}

func TestInfoHoldNotApplied(t *testing.T) {
	h := mk(
		holdInfo(0, 0, 5000, "A1"),
		read(1, 20, 30, 3, 1500, "A1=FREE"),
		holdOK(2, 31, 40, "h2", 4, 1600, 5000, "A1"),
		read(1, 50, 60, 5, 1700, "A1=HELD"),
	)
	wantValid(t, check(t, h))
}

// An info hold applied late (after a read saw its seat free) and seen held.
func TestInfoHoldAppliedLate(t *testing.T) {
	h := mk(
		holdInfo(0, 0, 5000, "A1"),
		read(1, 20, 30, 3, 1500, "A1=FREE"),
		read(1, 40, 50, 5, 3000, "A1=HELD"),
		read(1, 60, 70, 6, 7000, "A1=HELD"), // applied at >= 2000: live until >= 7000
		read(1, 80, 90, 7, 8001, "A1=FREE"), // applied at <= 3000: expired by 8000
	)
	wantValid(t, check(t, h))
	// Held after 8000 is impossible: it was applied by log time 3000.
	replace(h, 4, read(1, 80, 90, 7, 8001, "A1=HELD"))
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckLinearizable)
	wantStatus(t, r, StatusOK, CheckS3, CheckS1)
}

// The seats of an info hold may be re-held once it can have expired, and a
// SEATS_TAKEN may be explained by it.
func TestInfoHoldSeatsRetaken(t *testing.T) {
	h := mk(
		holdInfo(0, 0, 2000, "A1"),
		holdTaken(1, 10, 20, 2, 1000, []string{"A1"}, "A1"),
		holdOK(1, 30, 40, "h2", 3, 2500, 5000, "A1"),
		read(2, 50, 60, 4, 2600, "A1=HELD"),
	)
	wantValid(t, check(t, h))
}

// Info confirms and releases may or may not have happened.
func TestInfoConfirmRelease(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		holdOK(1, 0, 10, "h2", 2, 1000, 5000, "A2"),
		confirmOp(0, 20, 0, "h1", "p", history.Info, "OUTCOME_UNKNOWN", 0, 0),
		releaseOp(1, 20, 0, "h2", history.Info, "OUTCOME_UNKNOWN", 0, 0),
		read(2, 30, 40, 3, 1100, "A1=HELD A2=HELD"),
		read(2, 50, 60, 5, 1300, "A1=BOOKED A2=FREE"),
		getHold(2, 61, 62, "h1", "CONFIRMED", 5, 1300),
		holdOK(3, 70, 80, "h3", 6, 1400, 5000, "A2"),
	)
	h.Final = final(9000, "A1=BOOKED A2=FREE", map[string]history.FinalHold{
		"h1": {Seats: []string{"A1"}, State: "HOLD_STATE_CONFIRMED", ExpiresAtMs: 6000, PaymentRef: "p"},
		"h2": {Seats: []string{"A2"}, State: "HOLD_STATE_CANCELLED", ExpiresAtMs: 6000},
		"h3": {Seats: []string{"A2"}, State: "HOLD_STATE_EXPIRED", ExpiresAtMs: 6400},
	})
	wantValid(t, check(t, h))
	// Once seen BOOKED, never HELD again.
	appendOp(h, read(2, 90, 95, 7, 1500, "A1=HELD A2=HELD"))
	r := check(t, h)
	wantStatus(t, r, StatusViolated, CheckLinearizable, CheckOrdering)
}

func TestExpiryByClock(t *testing.T) {
	base := func(extra ...history.Op) *history.History {
		return mk(append([]history.Op{holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1")}, extra...)...)
	}
	// Expired by the clock: free, re-holdable, unconfirmable, even with no
	// Expire entry in between.
	wantValid(t, check(t, base(
		read(1, 20, 30, 3, 5999, "A1=HELD"),
		read(1, 31, 40, 4, 6000, "A1=FREE"),
		confirmOp(0, 41, 50, "h1", "p", history.Fail, "HOLD_EXPIRED", 5, 6000),
		getHold(1, 51, 60, "h1", "EXPIRED", 5, 6000),
		holdOK(2, 61, 70, "h2", 6, 6000, 5000, "A1"),
		releaseOp(0, 71, 80, "h1", history.Fail, "HOLD_EXPIRED", 7, 6100),
	)))
	cases := map[string]*history.History{
		"free before expiry":     base(read(1, 20, 30, 3, 5999, "A1=FREE")),
		"held after expiry":      base(read(1, 20, 30, 3, 6000, "A1=HELD")),
		"confirm after expiry":   base(confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 6000)),
		"expired before expiry":  base(confirmOp(0, 20, 30, "h1", "p", history.Fail, "HOLD_EXPIRED", 3, 5999)),
		"retaken before expiry":  base(holdOK(2, 20, 30, "h2", 3, 5999, 5000, "A1")),
		"taken after expiry":     base(holdTaken(2, 20, 30, 3, 6000, []string{"A1"}, "A1")),
		"gethold held too late":  base(getHold(1, 20, 30, "h1", "HELD", 3, 6000)),
		"release after expiry":   base(releaseOp(0, 20, 30, "h1", history.OK, "", 3, 6001)),
		"clock goes backwards":   base(read(1, 20, 30, 3, 999, "A1=FREE")),
		"cancelled not released": base(getHold(1, 20, 30, "h1", "CANCELLED", 3, 1500)),
	}
	for name, h := range cases {
		t.Run(name, func(t *testing.T) {
			wantStatus(t, check(t, h), StatusViolated, CheckLinearizable)
		})
	}
}

// A confirm replay with the same payment ref succeeds; another ref fails.
func TestConfirmTwice(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		confirmOp(0, 20, 30, "h1", "p", history.OK, "", 3, 1100),
		confirmOp(0, 40, 50, "h1", "p", history.OK, "", 4, 7000),
		confirmOp(0, 60, 70, "h1", "q", history.Fail, "HOLD_CONFIRMED", 5, 7100),
		releaseOp(0, 80, 90, "h1", history.Fail, "HOLD_CONFIRMED", 6, 7200),
	)
	wantValid(t, check(t, h))
	replace(h, 3, confirmOp(0, 60, 70, "h1", "q", history.OK, "", 5, 7100))
	wantStatus(t, check(t, h), StatusViolated, CheckLinearizable, CheckOrdering)
}

// Ops sharing a revision (one raft entry) may be applied in any order.
func TestSameRevisionOrder(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		releaseOp(0, 20, 40, "h1", history.OK, "", 3, 1100),
		holdTaken(1, 21, 41, 3, 1100, []string{"A1"}, "A1"),
		holdOK(2, 22, 42, "h2", 3, 1100, 5000, "A1"),
		read(3, 50, 60, 3, 1100, "A1=HELD"),
	)
	wantValid(t, check(t, h))
}

func TestVisualizationAndJSON(t *testing.T) {
	dir := t.TempDir()
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		holdOK(1, 20, 30, "h2", 3, 2000, 5000, "A1"),
	)
	h.Faults = []history.Fault{{At: 15, Kind: "partition-leader", Nodes: "n1"}}
	r := Check(h, Options{Timeout: 5e9, OutDir: dir})
	path := filepath.Join(dir, "linearizability-"+show1+".html")
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "hold(A1") {
		t.Fatalf("visualization %s: err %v, or no op description in it", path, err)
	}
	if len(r.Shows) != 1 || r.Shows[0].HTML != path || r.Shows[0].Result != "illegal" {
		t.Errorf("shows = %+v, want one illegal show with its HTML", r.Shows)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("marshal report: %v", err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || back.Result != ResultInvalid || len(back.Violations) != len(r.Violations) {
		t.Errorf("report JSON round trip: err %v, result %q", err, back.Result)
	}
	var text strings.Builder
	if err := r.WriteText(&text); err != nil || !strings.Contains(text.String(), "INVALID") {
		t.Errorf("WriteText = %q, %v; want it to say INVALID", text.String(), err)
	}
}

func TestHistoryRoundTrip(t *testing.T) {
	h := withLayout(cleanHistory(), "A1=vip A2=vip A3=std")
	appendOp(h, holdBest(3, 80, 90, "h3", 8, 1500, 5000, "std", "A3"))
	appendOp(h, extendOp(3, 91, 92, "h3", 6000, history.OK, "", 7500, 9, 1500))
	h.Final.Seats[show1]["A3"] = "HELD"
	h.Final.Holds["h3"] = history.FinalHold{Show: show1, Seats: []string{"A3"}, State: "HOLD_STATE_HELD", ExpiresAtMs: 7500}
	var b strings.Builder
	if err := h.Write(&b); err != nil {
		t.Fatal(err)
	}
	back, err := history.Read(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Layouts) != 1 || back.Layouts[0].Seats["A3"] != "std" {
		t.Errorf("Read(Write(h)).Layouts = %+v, want show %s's layout", back.Layouts, show1)
	}
	if op := back.Ops[len(back.Ops)-2]; op.Count != 1 || op.Category != "std" || len(op.OutSeats) != 1 {
		t.Errorf("Read(Write(h)) best-available hold = %+v, want count 1, category std, one seat granted", op)
	}
	wantValid(t, check(t, back))
}

// A request sent again by an op not marked as a resend gets the replayed
// answer, revision and all: it is no stale op, but two hold ids are.
func TestReusedRequestID(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		read(1, 20, 30, 5, 1300, "A1=HELD"),
		holdOK(0, 40, 50, "h1", 2, 1000, 5000, "A1"),
	)
	h.Ops[2].RequestID, h.Ops[2].Replayed = h.Ops[0].RequestID, true
	wantValid(t, check(t, h))
	h.Ops[2].OutHoldID = "h2"
	wantStatus(t, check(t, h), StatusViolated, CheckS4)
}

// A definite failure before the log, then a resend that is applied anew.
func TestResendAfterNotLeader(t *testing.T) {
	first := holdOK(0, 0, 10, "", 0, 0, 5000, "A1")
	first.Outcome, first.Reason, first.ExpiresAtMs = history.Fail, "NOT_LEADER", 0
	again := holdOK(0, 20, 30, "h1", 3, 1200, 5000, "A1")
	again.Resend, again.Of = true, 0
	unknown := holdOK(1, 0, 5, "", 1, 900, 5000, "A9")
	unknown.Outcome, unknown.Reason, unknown.ExpiresAtMs = history.Fail, "UNKNOWN_SEAT", 0
	h := mk(first, again, read(2, 40, 50, 4, 1300, "A1=HELD"), unknown)
	wantValid(t, check(t, h))
}

// A write applied at a revision a read had already returned is caught by
// the real-time ordering check, as is a read going back in log time.
func TestWriteBeforeReadRevision(t *testing.T) {
	h := mk(
		read(1, 0, 10, 5, 1300, "A1=FREE"),
		holdOK(0, 20, 30, "h1", 5, 1300, 5000, "A1"),
	)
	wantStatus(t, check(t, h), StatusViolated, CheckOrdering, CheckLinearizable)
	h = mk(
		read(1, 0, 10, 5, 1300, "A1=FREE"),
		read(1, 20, 30, 6, 1200, "A1=FREE"),
	)
	wantStatus(t, check(t, h), StatusViolated, CheckOrdering, CheckLinearizable)
}

func TestGetHoldGoneEarly(t *testing.T) {
	h := mk(
		holdOK(0, 0, 10, "h1", 2, 1000, 5000, "A1"),
		getHold(1, 20, 30, "h1", "EXPIRED", 3, 1500),
	)
	wantStatus(t, check(t, h), StatusViolated, CheckS3, CheckLinearizable, CheckOrdering)
}

// A spent time budget leaves the linearizability check unknown: neither a
// violation nor a proof.
func TestBudgetSpentIsUnknown(t *testing.T) {
	h := cleanHistory()
	r := Check(h, Options{Timeout: time.Nanosecond})
	if r.Valid || r.Result != ResultUnknown || status(r, CheckLinearizable) != StatusUnknown || len(r.Violations) != 0 {
		t.Errorf("report = %s, linearizable %s, %d violations; want unknown, unknown, none",
			r.Result, status(r, CheckLinearizable), len(r.Violations))
	}
}
