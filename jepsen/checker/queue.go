package checker

import (
	"sort"
	"strconv"
	"strings"

	"github.com/seatledger/seatledger/jepsen/history"
)

// The waiting queue (fsm/queue.go). A best-available hold that asks to wait
// and finds too few seats answers QUEUED with an entry: the model judges it
// like SOLD_OUT (fewer than count seats of the category free) and it
// changes no seat. The entry's offer is a hold the FSM makes in the
// waiter's name at the end of some later entry that freed seats; no client
// asked for it, so the checker derives it from what the waiter read:
//
//   - an entry read OFFERED becomes an offer: an acknowledged best-available
//     hold of the seats read, with the entry's count and category, that took
//     effect somewhere between the latest call of a join naming the entry or
//     of a read that found it WAITING (each was linearized while the entry
//     waited: a client that waits already is answered its entry, and a
//     replayed answer's logical op starts at the attempt that applied it)
//     and the return of the first read that found it OFFERED. The offer's hold id (h<group>-<index>-<pos>) names
//     the raft index that made it, and its expiry, read before the waiter
//     could extend it, is the log clock there + the claim window: so the
//     offer is pinned to its place in the log, and every check treats it
//     as any acknowledged hold (its seats must be free there, S1, S3, the
//     waiter's confirm, release or extend of it, the final reads).
//   - an entry left (a leave answered OK, or a read found it LEFT) was never
//     offered: leaving an offered entry answers NOT_QUEUED.
//   - any other entry may have been offered count seats of its category at
//     any time after that latest call, unseen (with joins that disagree,
//     the largest count of any category): it becomes an info
//     best-available hold, a wildcard (model.go) that may explain seats
//     HELD, SEATS_TAKEN and SOLD_OUT, and never certainly holds a seat.
//     The runner leaves or reads every such entry after healing, so these
//     are rare.
//
// An entry read OFFERED and also left, or read WAITING by a read called
// after one that found it OFFERED returned, is an ordering violation.

// queueClaimWindowMs mirrors fsm.QueueClaimWindowMs: an offered hold's TTL.
const queueClaimWindowMs = 2 * 60 * 1000

// queueProcess numbers the processes of derived ops apart from the
// history's: an offer overlaps its waiter's own ops.
const queueProcess = 1 << 30

// queueEntry is what the history says about one entry of a show's queue.
type queueEntry struct {
	show, id string
	joins    []*lop // QUEUED holds that named it
	waiting  []*lop // OK reads that found it WAITING
	offered  *lop   // the OK read that found it OFFERED and returned first
	left     *lop   // an OK leave, or an OK read that found it LEFT
}

// queueOps derives the offers and wildcards of the queue entries that
// lops name, in entry order.
func queueOps(lops []*lop, rep *reporter) []*lop {
	entries := map[string]*queueEntry{}
	var keys []string
	get := func(l *lop) *queueEntry {
		k := l.Show + "\x00" + l.QueueEntryID
		e, ok := entries[k]
		if !ok {
			e = &queueEntry{show: l.Show, id: l.QueueEntryID}
			entries[k] = e
			keys = append(keys, k)
		}
		return e
	}
	for _, l := range lops {
		if l.QueueEntryID == "" || l.Outcome == history.Info || l.echo {
			continue
		}
		switch {
		case l.Kind == history.KindHold && l.Reason == "QUEUED":
			e := get(l)
			e.joins = append(e.joins, l)
		case l.Outcome != history.OK:
		case l.Kind == history.KindLeave, l.Kind == history.KindQueueEntry && l.QueueState == "LEFT":
			if e := get(l); e.left == nil {
				e.left = l
			}
		case l.Kind == history.KindQueueEntry && l.QueueState == "WAITING":
			e := get(l)
			e.waiting = append(e.waiting, l)
		case l.Kind == history.KindQueueEntry && l.QueueState == "OFFERED":
			if e := get(l); e.offered == nil || l.Return < e.offered.Return {
				e.offered = l
			}
		}
	}
	sort.Strings(keys)
	var out []*lop
	for _, k := range keys {
		if l := entries[k].derive(rep); l != nil {
			out = append(out, l)
		}
	}
	return out
}

// derive returns the offer e's reads show, the wildcard for an entry whose
// fate is unknown, or nil for an entry never offered.
func (e *queueEntry) derive(rep *reporter) *lop {
	op := history.Op{Kind: history.KindHold, Show: e.show, TTLms: queueClaimWindowMs, QueueEntryID: e.id}
	for k, j := range e.joins {
		if k > 0 && j.Category != op.Category {
			op.Category = ""
		}
		op.Call, op.ClientID, op.Count = max(op.Call, j.Call), j.ClientID, max(op.Count, j.Count)
		if k == 0 {
			op.Category = j.Category
		}
	}
	o := e.offered
	for _, w := range e.waiting {
		if o != nil && w.Call > o.Return {
			rep.violation(CheckOrdering, e.show, []int{o.ID, w.ID}, "queue entry %s was read WAITING by op %d, called after op %d had read it OFFERED",
				e.id, w.ID, o.ID)
			continue
		}
		op.Call = max(op.Call, w.Call)
		if w.Count > 0 { // the entry's own request, whichever join made it
			op.Count, op.Category = w.Count, w.Category
		}
	}
	switch {
	case o != nil && e.left != nil:
		rep.violation(CheckOrdering, e.show, []int{e.left.ID, o.ID}, "queue entry %s was left (op %d %s) and offered hold %s (op %d): a left entry is never offered",
			e.id, e.left.ID, e.left.Kind, o.OutHoldID, o.ID)
		return nil
	case e.left != nil:
		return nil
	case o == nil && op.Count == 0:
		return nil // no join and no read says what it asked for
	case o == nil: // an offer nobody saw may hold seats
		op.ID, op.Outcome, op.Reason = e.firstID(), history.Info, "QUEUED"
		op.Process = queueProcess + op.ID
		return &lop{Op: op, ids: []int{op.ID}, queue: true}
	}
	if o.Count > 0 {
		op.Count, op.Category = o.Count, o.Category
	}
	op.ID, op.Process, op.Node, op.Return, op.Outcome = o.ID, queueProcess+o.ID, o.Node, o.Return, history.OK
	op.OutHoldID, op.OutToken, op.OutSeats, op.ExpiresAtMs = o.OutHoldID, o.OutToken, o.OutSeats, o.ExpiresAtMs
	op.HoldState, op.Revision = "HOLD_STATE_HELD", holdRevision(o.OutHoldID)
	if o.ExpiresAtMs != 0 {
		op.AppliedAtMs = o.ExpiresAtMs - queueClaimWindowMs
	}
	return &lop{Op: op, ids: []int{o.ID}, queue: true}
}

// firstID is the op that stands for e: its join, or its first read.
func (e *queueEntry) firstID() int {
	if len(e.joins) > 0 {
		return e.joins[0].ID
	}
	return e.waiting[0].ID
}

// holdRevision is the raft index in a hold id h<group>-<index>-<pos>, 0 if
// the id has another form.
func holdRevision(id string) uint64 {
	parts := strings.Split(strings.TrimPrefix(id, "h"), "-")
	if !strings.HasPrefix(id, "h") || len(parts) != 3 {
		return 0
	}
	n, err := strconv.ParseUint(parts[1], 10, 64)
	if err != nil {
		return 0
	}
	return n
}
