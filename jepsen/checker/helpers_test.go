package checker

// Helpers that build small histories by hand for the tests: one function
// per op shape, times in nanoseconds, log clocks in ms.

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/jepsen/history"
)

const show1 = "s1"

func holdOK(p int, call, ret int64, id string, rev uint64, at, ttl int64, seats ...string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Return: ret, Seats: seats, TTLms: ttl,
		Outcome: history.OK, OutHoldID: id, ExpiresAtMs: at + ttl, Revision: rev, AppliedAtMs: at}
}

func holdTaken(p int, call, ret int64, rev uint64, at int64, taken []string, seats ...string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Return: ret, Seats: seats, TTLms: 5000,
		Outcome: history.Fail, Reason: "SEATS_TAKEN", Taken: taken, Revision: rev, AppliedAtMs: at}
}

func holdInfo(p int, call int64, ttl int64, seats ...string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Seats: seats, TTLms: ttl,
		Outcome: history.Info, Reason: "OUTCOME_UNKNOWN"}
}

func confirmOp(p int, call, ret int64, id, ref string, outcome history.Outcome, reason string, rev uint64, at int64) history.Op {
	op := history.Op{Process: p, Kind: history.KindConfirm, Show: show1, Call: call, Return: ret, HoldID: id, PaymentRef: ref,
		Outcome: outcome, Reason: reason, Revision: rev, AppliedAtMs: at}
	if outcome == history.OK {
		op.HoldState = "HOLD_STATE_CONFIRMED"
	}
	return op
}

func releaseOp(p int, call, ret int64, id string, outcome history.Outcome, reason string, rev uint64, at int64) history.Op {
	op := history.Op{Process: p, Kind: history.KindRelease, Show: show1, Call: call, Return: ret, HoldID: id,
		Outcome: outcome, Reason: reason, Revision: rev, AppliedAtMs: at}
	if outcome == history.OK {
		op.HoldState = "HOLD_STATE_CANCELLED"
	}
	return op
}

// read takes seat states as "A1=HELD A2=FREE".
func read(p int, call, ret int64, rev uint64, at int64, seats string) history.Op {
	m := map[string]string{}
	for _, f := range strings.Fields(seats) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return history.Op{Process: p, Kind: history.KindRead, Show: show1, Call: call, Return: ret,
		Outcome: history.OK, SeatStates: m, Revision: rev, AppliedAtMs: at}
}

func getHold(p int, call, ret int64, id, st string, rev uint64, at int64) history.Op {
	return history.Op{Process: p, Kind: history.KindGetHold, Show: show1, Call: call, Return: ret, HoldID: id,
		Outcome: history.OK, HoldState: "HOLD_STATE_" + st, Revision: rev, AppliedAtMs: at}
}

// mk numbers ops and gives each process one client id and each op its own
// request id; a resend keeps the request id of the op it re-sends.
func mk(ops ...history.Op) *history.History {
	h := &history.History{Seed: 1}
	for i, op := range ops {
		op.ID = i
		op.Node = "n1"
		op.ClientID = fmt.Sprintf("c%d", op.Process)
		op.RequestID = fmt.Sprintf("r%d", i)
		if op.Resend {
			op.ClientID, op.RequestID = ops[op.Of].ClientID, fmt.Sprintf("r%d", op.Of)
			if op.ClientID == "" {
				op.ClientID = fmt.Sprintf("c%d", ops[op.Of].Process)
			}
		}
		h.Ops = append(h.Ops, op)
	}
	return h
}

// final builds final reads for show1 with equal digests on three nodes.
func final(at int64, seats string, holds map[string]history.FinalHold) *history.Final {
	m := map[string]string{}
	for _, f := range strings.Fields(seats) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	for id, fh := range holds {
		fh.Show = show1
		holds[id] = fh
	}
	return &history.Final{
		Seats:    map[string]map[string]string{show1: m},
		Holds:    holds,
		Digests:  map[uint32]map[string]string{1: {"n1": "d1", "n2": "d1", "n3": "d1"}},
		Applied:  map[uint32]uint64{1: 100},
		ReadAtMs: at,
	}
}

// check runs Check with a budget fit for tests.
func check(t *testing.T, h *history.History) *Report {
	t.Helper()
	return Check(h, Options{Timeout: 5e9})
}

// status returns a check's status in r.
func status(r *Report, check string) string {
	for _, c := range r.Checks {
		if c.Check == check {
			return c.Status
		}
	}
	return "missing"
}

// wantStatus fails unless each named check has the given status.
func wantStatus(t *testing.T, r *Report, st string, checks ...string) {
	t.Helper()
	for _, c := range checks {
		if got := status(r, c); got != st {
			t.Errorf("check %s = %s, want %s", c, got, st)
		}
	}
	if t.Failed() {
		var b strings.Builder
		r.WriteText(&b)
		t.Log("\n" + b.String())
	}
}

// wantValid fails unless every check passed.
func wantValid(t *testing.T, r *Report) {
	t.Helper()
	if !r.Valid {
		var b strings.Builder
		r.WriteText(&b)
		t.Fatalf("report is %s, want valid:\n%s", r.Result, b.String())
	}
}

// replace puts op at index i of h, keeping the identity mk gave that slot.
func replace(h *history.History, i int, op history.Op) {
	old := h.Ops[i]
	op.ID, op.Node, op.ClientID, op.RequestID = old.ID, old.Node, old.ClientID, old.RequestID
	h.Ops[i] = op
}

// appendOp adds op to h with the next ID.
func appendOp(h *history.History, op history.Op) {
	op.ID = len(h.Ops)
	op.ClientID = fmt.Sprintf("c%d", op.Process)
	op.RequestID = fmt.Sprintf("r%d", op.ID)
	h.Ops = append(h.Ops, op)
}

// holdBest is an acknowledged best-available hold of len(granted) seats of
// category ("" = any).
func holdBest(p int, call, ret int64, id string, rev uint64, at, ttl int64, category string, granted ...string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Return: ret, Count: len(granted),
		Category: category, TTLms: ttl, Outcome: history.OK, OutHoldID: id, OutSeats: granted, ExpiresAtMs: at + ttl,
		Revision: rev, AppliedAtMs: at}
}

// soldOut is a best-available hold of count seats answered SOLD_OUT.
func soldOut(p int, call, ret int64, rev uint64, at int64, count int, category string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Return: ret, Count: count,
		Category: category, TTLms: 5000, Outcome: history.Fail, Reason: "SOLD_OUT", Revision: rev, AppliedAtMs: at}
}

// holdBestInfo is a best-available hold whose outcome is unknown.
func holdBestInfo(p int, call, ttl int64, count int, category string) history.Op {
	return history.Op{Process: p, Kind: history.KindHold, Show: show1, Call: call, Count: count, Category: category,
		TTLms: ttl, Outcome: history.Info, Reason: "OUTCOME_UNKNOWN"}
}

// extendOp extends hold id by ttl; exp is the expiry an OK answer reports.
func extendOp(p int, call, ret int64, id string, ttl int64, outcome history.Outcome, reason string, exp int64, rev uint64, at int64) history.Op {
	op := history.Op{Process: p, Kind: history.KindExtend, Show: show1, Call: call, Return: ret, HoldID: id, TTLms: ttl,
		Outcome: outcome, Reason: reason, Revision: rev, AppliedAtMs: at}
	if outcome == history.OK {
		op.ExpiresAtMs = exp
	}
	return op
}

func refundOp(p int, call, ret int64, id string, outcome history.Outcome, reason string, rev uint64, at int64) history.Op {
	op := history.Op{Process: p, Kind: history.KindRefund, Show: show1, Call: call, Return: ret, HoldID: id,
		Outcome: outcome, Reason: reason, Revision: rev, AppliedAtMs: at}
	if outcome == history.OK {
		op.HoldState = "HOLD_STATE_REFUNDED"
	}
	return op
}

// withLayout gives show1 a layout, as "A1=vip A2=vip B1=std".
func withLayout(h *history.History, seats string) *history.History {
	m := map[string]string{}
	for _, f := range strings.Fields(seats) {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	h.Layouts = []history.Layout{{Show: show1, Seats: m}}
	return h
}

// layout6 is a small show: three vip seats in row A, three std in row B.
const layout6 = "A1=vip A2=vip A3=vip B1=std B2=std B3=std"
