package checker

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/seatledger/seatledger/jepsen/history"
)

// storedReasons are the rejections the state machine stores with the
// request id and answers again on a retry; any other Fail reason is a
// definite no-effect answer that says nothing about a later attempt
// (NOT_LEADER, UNAVAILABLE, INVALID_ARGUMENT from the gateway, ...).
var storedReasons = map[string]bool{
	"SEATS_TAKEN": true, "UNKNOWN_SEAT": true, "HOLD_NOT_FOUND": true, "HOLD_GONE": true,
	"HOLD_EXPIRED": true, "HOLD_CANCELLED": true, "HOLD_CONFIRMED": true, "NOT_HOLD_OWNER": true,
	"SOLD_OUT": true, "TOO_MANY_HOLDS": true, "HOLD_TOKEN_INVALID": true, "HOLD_NOT_CONFIRMED": true,
	"QUEUED": true, "QUEUE_FULL": true, "NOT_QUEUED": true, "QUEUE_TOKEN_INVALID": true,
}

// answered reports whether op got the state machine's answer to its request.
func answered(op *history.Op) bool {
	return op.Outcome == history.OK || (op.Outcome == history.Fail && storedReasons[op.Reason])
}

// normReason folds the two names of an unknown hold into one.
func normReason(r string) string {
	if r == "HOLD_GONE" {
		return "HOLD_NOT_FOUND"
	}
	return r
}

// lop is a logical operation: one request, however many times the client
// sent it. A chain of an op and its resends (same client_id and request_id)
// takes effect at most once, so it is checked as one operation: the first
// stored answer with the call time of the earliest attempt that may have
// applied it. Later answers are only compared with it (S4).
type lop struct {
	history.Op
	ids []int // the history op IDs behind it, the answering one first
	// echo: another logical op has the same (client_id, request_id) and
	// this one's answer was replayed, so it may report an application that
	// happened before it was even called. Nothing orders it in time.
	echo bool
	// queue: derived from the queue's ops (queue.go), not sent by a client:
	// an offer, or the wildcard of an entry whose fate is unknown.
	queue bool
}

// logicalOps merges resend chains into logical ops, in call order, and checks
// that every resend got the original answer (S4).
func logicalOps(h *history.History, rep *reporter) []*lop {
	byID := make(map[int]int, len(h.Ops))
	for i := range h.Ops {
		byID[h.Ops[i].ID] = i
	}
	chains := map[int][]int{}
	var roots []int
	for i := range h.Ops {
		r := rootOf(h, byID, i, rep)
		if _, ok := chains[r]; !ok {
			roots = append(roots, r)
		}
		chains[r] = append(chains[r], i)
	}
	out := make([]*lop, 0, len(roots))
	for _, r := range roots {
		idx := chains[r]
		sort.Slice(idx, func(a, b int) bool { return h.Ops[idx[a]].ID < h.Ops[idx[b]].ID })
		out = append(out, mergeChain(h, idx, rep))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Call < out[b].Call })
	checkRequestIDs(out, rep)
	markEchoes(out)
	return out
}

// markEchoes marks replayed answers to requests that another logical op
// (not linked to it as a resend) also sent.
func markEchoes(ops []*lop) {
	type key struct{ client, request string }
	n := map[key]int{}
	for _, l := range ops {
		if mutating(l.Kind) && l.ClientID != "" && l.RequestID != "" {
			n[key{l.ClientID, l.RequestID}]++
		}
	}
	for _, l := range ops {
		if l.Replayed && n[key{l.ClientID, l.RequestID}] > 1 {
			l.echo = true
		}
	}
}

// rootOf follows Of links from a resend to the op first sent.
func rootOf(h *history.History, byID map[int]int, i int, rep *reporter) int {
	op := &h.Ops[i]
	for n := 0; op.Resend && n < 64; n++ {
		j, ok := byID[op.Of]
		if !ok || h.Ops[j].ID == op.ID {
			rep.warnf("op %d re-sends op %d, which is not in the history", op.ID, op.Of)
			break
		}
		op = &h.Ops[j]
	}
	return op.ID
}

// mergeChain turns an op and its resends (ID order) into one logical op.
func mergeChain(h *history.History, idx []int, rep *reporter) *lop {
	var ans *history.Op
	call := int64(math.MaxInt64) // earliest attempt that may have applied it
	var ids []int
	for _, i := range idx {
		op := &h.Ops[i]
		ids = append(ids, op.ID)
		if ans != nil {
			if answered(op) {
				compareAnswers(ans, op, rep)
			}
			continue
		}
		switch {
		case answered(op):
			ans = op
			if op.Resend && op.Replayed && call == math.MaxInt64 {
				rep.warnf("op %d got a replayed answer, but every earlier attempt of its request (ops %v) was recorded as a definite failure", op.ID, ids[:len(ids)-1])
			}
			call = min(call, op.Call)
		case op.Outcome == history.Info:
			call = min(call, op.Call)
		}
	}
	if ans == nil {
		// No answer: the first info attempt stands for the request, or the
		// first definite failure if none is info.
		for _, i := range idx {
			if h.Ops[i].Outcome == history.Info {
				ans = &h.Ops[i]
				break
			}
		}
		if ans == nil {
			ans = &h.Ops[idx[0]]
		}
		call = ans.Call
	}
	l := &lop{Op: *ans}
	l.Call = call
	l.ids = append([]int{ans.ID}, without(ids, ans.ID)...)
	return l
}

func without(ids []int, x int) []int {
	var out []int
	for _, id := range ids {
		if id != x {
			out = append(out, id)
		}
	}
	return out
}

// compareAnswers checks that a later answer to a request equals the first.
func compareAnswers(first, again *history.Op, rep *reporter) {
	ops := []int{first.ID, again.ID}
	switch {
	case first.Outcome != again.Outcome || normReason(first.Reason) != normReason(again.Reason):
		rep.violation("S4", again.Show, ops, "request %s/%s answered %s on op %d but %s when re-sent on op %d",
			again.ClientID, again.RequestID, answerString(first), first.ID, answerString(again), again.ID)
	case first.OutHoldID != again.OutHoldID:
		rep.violation("S4", again.Show, ops, "request %s/%s returned hold %s on op %d but hold %s when re-sent on op %d",
			again.ClientID, again.RequestID, first.OutHoldID, first.ID, again.OutHoldID, again.ID)
	case first.Outcome == history.OK && !slices.Equal(first.OutSeats, again.OutSeats):
		rep.violation("S4", again.Show, ops, "request %s/%s was granted seats %v on op %d but %v when re-sent on op %d",
			again.ClientID, again.RequestID, first.OutSeats, first.ID, again.OutSeats, again.ID)
	case first.Outcome == history.OK && again.Kind == history.KindExtend && first.ExpiresAtMs != again.ExpiresAtMs:
		rep.violation("S4", again.Show, ops, "extend %s/%s set expiry %d on op %d but %d when re-sent on op %d",
			again.ClientID, again.RequestID, first.ExpiresAtMs, first.ID, again.ExpiresAtMs, again.ID)
	case again.Outcome == history.OK && !again.Replayed:
		rep.violation("S4", again.Show, ops, "request %s/%s of op %d was applied again when re-sent on op %d (replayed=false)",
			again.ClientID, again.RequestID, first.ID, again.ID)
	case first.Revision != 0 && again.Revision != 0 && first.Revision != again.Revision:
		rep.violation("S4", again.Show, ops, "request %s/%s answered at revision %d on op %d but %d when re-sent on op %d",
			again.ClientID, again.RequestID, first.Revision, first.ID, again.Revision, again.ID)
	}
}

func answerString(op *history.Op) string {
	if op.Outcome == history.OK {
		return "ok"
	}
	return fmt.Sprintf("%s %s", op.Outcome, op.Reason)
}

// checkRequestIDs checks S4 across logical ops: one (client_id, request_id)
// names at most one hold and takes effect (replayed=false) at most once.
func checkRequestIDs(ops []*lop, rep *reporter) {
	type key struct{ client, request string }
	seen := map[key]*lop{}
	fresh := map[key]*lop{}
	for _, l := range ops {
		if l.Outcome != history.OK || l.ClientID == "" || l.RequestID == "" || !mutating(l.Kind) {
			continue
		}
		k := key{l.ClientID, l.RequestID}
		if prev, ok := seen[k]; ok && prev.OutHoldID != l.OutHoldID {
			rep.violation("S4", l.Show, []int{prev.ID, l.ID}, "request %s/%s returned hold %q on op %d and hold %q on op %d",
				l.ClientID, l.RequestID, prev.OutHoldID, prev.ID, l.OutHoldID, l.ID)
		} else if !ok {
			seen[k] = l
		}
		if l.Replayed {
			continue
		}
		if prev, ok := fresh[k]; ok {
			rep.violation("S4", l.Show, []int{prev.ID, l.ID}, "request %s/%s took effect twice: ops %d and %d both applied it (replayed=false)",
				l.ClientID, l.RequestID, prev.ID, l.ID)
			continue
		}
		fresh[k] = l
	}
}

func mutating(k history.Kind) bool { return k.Mutating() }

// byShow partitions logical ops by show, shows in name order.
func byShow(ops []*lop) ([]string, map[string][]*lop) {
	m := map[string][]*lop{}
	for _, l := range ops {
		m[l.Show] = append(m[l.Show], l)
	}
	names := make([]string, 0, len(m))
	for s := range m {
		names = append(names, s)
	}
	sort.Strings(names)
	return names, m
}
