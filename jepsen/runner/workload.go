package runner

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sl "github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The workload: shows rotate so that each is busy for a short window, every
// hold's TTL (and every extend's) is short so holds expire during the run,
// and each client picks among the shows that are busy now. A show's first
// row is "vip", the others "std": the small vip category sells out, which
// best-available holds asking for it then meet as SOLD_OUT.
const (
	showRows       = 3
	showRowSeats   = 10
	vipRows        = 1
	activeShows    = 3
	showWindow     = 6 * time.Second
	holdTTLMinS    = 1 // the API's TTLs are whole seconds
	holdTTLMaxS    = 4 // also bounds an extend's TTL: the final reads wait it out
	seatsPerHold   = 3 // at most
	attemptTimeout = 500 * time.Millisecond
	// opDeadline bounds one operation with its retries; after it an
	// uncertain write is recorded as indeterminate.
	opDeadline = 8 * time.Second
	// thinkMax bounds a client's pause between operations.
	thinkMax = 20 * time.Millisecond
)

// recorder collects the history; IDs are dense in call order.
type recorder struct {
	start time.Time
	mu    struct {
		sync.Mutex
		ops    []history.Op
		faults []history.Fault
	}
	processes atomic.Int64 // next fresh process id
}

func (r *recorder) now() int64 { return int64(time.Since(r.start)) }

// begin records a call and returns its id.
func (r *recorder) begin(op history.Op) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	op.ID = len(r.mu.ops)
	op.Call = r.now()
	r.mu.ops = append(r.mu.ops, op)
	return op.ID
}

// end records a return.
func (r *recorder) end(op history.Op) {
	if op.Outcome != history.Info {
		op.Return = r.now()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	op.Call = r.mu.ops[op.ID].Call
	r.mu.ops[op.ID] = op
}

func (r *recorder) fault(kind, nodes string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.faults = append(r.mu.faults, history.Fault{At: r.now(), Kind: kind, Nodes: nodes})
}

// showName is the i-th show of a run.
func showName(seed int64, i int) string { return fmt.Sprintf("j%d-s%03d", seed, i) }

// showsAt returns the shows busy at elapsed time t.
func showsAt(seed int64, t time.Duration) []string {
	epoch := int(t / showWindow)
	out := make([]string, activeShows)
	for k := range out {
		out[k] = showName(seed, epoch*activeShows+k)
	}
	return out
}

// showCount is how many shows a run of d uses.
func showCount(d time.Duration) int { return (int(d/showWindow) + 2) * activeShows }

func testShow(id string) *ledgerpb.Show {
	s := &ledgerpb.Show{ShowId: id, Title: "jepsen " + id, Categories: []*ledgerpb.Category{
		{Name: "vip", PriceMinor: 1500, Currency: "EUR"}, {Name: "std", PriceMinor: 900, Currency: "EUR"}}}
	for r := 0; r < showRows; r++ {
		s.Rows = append(s.Rows, &ledgerpb.Row{Name: string(rune('A' + r)), Seats: showRowSeats, Category: rowCategory(r)})
	}
	return s
}

func rowCategory(r int) string {
	if r < vipRows {
		return "vip"
	}
	return "std"
}

// showLayouts are the layouts of a run's n shows, for the history.
func showLayouts(seed int64, n int) []history.Layout {
	out := make([]history.Layout, n)
	for i := range out {
		show := testShow(showName(seed, i))
		l := history.Layout{Show: show.ShowId, Seats: map[string]string{}}
		for _, row := range show.Rows {
			for k := 1; k <= int(row.Seats); k++ {
				l.Seats[fmt.Sprintf("%s%d", row.Name, k)] = row.Category
			}
		}
		out[i] = l
	}
	return out
}

func seatIDs() []string {
	var out []string
	for r := 0; r < showRows; r++ {
		for n := 1; n <= showRowSeats; n++ {
			out = append(out, fmt.Sprintf("%c%d", 'A'+r, n))
		}
	}
	return out
}

// client is one client process: it issues one operation at a time.
type client struct {
	id      int
	process int
	rng     *rand.Rand
	seed    int64
	rec     *recorder
	booking []ledgerpb.BookingClient     // one per node, through the client proxies
	rooms   []ledgerpb.WaitingRoomClient // the same, for the waiting room (room.go)
	nodeIDs []string
	reqSeq  int
	// holds this client may confirm, release or extend
	holds []ownHold
	// bookings this client may refund
	bookings []ownHold
	// last is the last definite write, for resends
	last *history.Op
	// queues are the client's waiting queue entries (at most one per show)
	queues []ownEntry
	// next is an op to issue at once: the answer to an offer.
	next *history.Op
	// done is the op do recorded last.
	done history.Op
	// as, when set, is the client id to act as (the cleanup after healing
	// acts for the waiters), with request ids of its own.
	as string
}

type ownHold struct {
	show, id, token string
}

// ownEntry is a waiting entry of a show's queue.
type ownEntry struct {
	show, id, token string
}

func (c *client) clientID() string {
	if c.as != "" {
		return c.as
	}
	return fmt.Sprintf("jc%d", c.id)
}

func (c *client) nextRequest() string {
	c.reqSeq++
	if c.as != "" {
		return fmt.Sprintf("end%d", c.reqSeq) // never one of the waiter's own
	}
	return fmt.Sprintf("r%d", c.reqSeq)
}

// run issues operations until ctx ends.
func (c *client) run(ctx context.Context) {
	for ctx.Err() == nil {
		shows := showsAt(c.seed, time.Duration(c.rec.now()))
		show := shows[c.rng.IntN(len(shows))]
		var op history.Op
		switch p := c.rng.IntN(100); {
		case c.next != nil:
			op, c.next = *c.next, nil
		case p < 35:
			op = c.holdOp(show)
		case p < 42 && len(c.holds) > 0:
			h := c.pickHold()
			op = history.Op{Kind: history.KindConfirm, Show: h.show, HoldID: h.id, HoldToken: c.token(h), PaymentRef: fmt.Sprintf("pay-%d-%d", c.id, c.reqSeq+1)}
		case p < 54 && len(c.holds) > 0:
			h := c.pickHold()
			op = history.Op{Kind: history.KindRelease, Show: h.show, HoldID: h.id, HoldToken: c.token(h)}
		case p < 62 && len(c.holds) > 0:
			// Short TTLs: an extend often decides whether the hold expires.
			h := c.pickHold()
			op = history.Op{Kind: history.KindExtend, Show: h.show, HoldID: h.id, HoldToken: c.token(h), TTLms: c.ttl()}
		case p < 65 && len(c.bookings) > 0:
			h := c.pickBooking()
			op = history.Op{Kind: history.KindRefund, Show: h.show, HoldID: h.id, HoldToken: c.token(h)}
		case p < 70 && len(c.holds) > 0:
			h := c.pickHold()
			op = history.Op{Kind: history.KindGetHold, Show: h.show, HoldID: h.id}
		case p < 75 && c.last != nil:
			op = *c.last
			op.Resend, op.Of = true, c.last.ID
		case p < 85 && len(c.pickEntry().id) > 0:
			// A waiter polls its entry now and then, and sometimes gives up.
			e := c.pickEntry()
			op = history.Op{Kind: history.KindQueueEntry, Show: e.show, QueueEntryID: e.id, QueueToken: e.token}
			if c.rng.IntN(8) == 0 {
				op.Kind = history.KindLeave
			}
		default:
			op = history.Op{Kind: history.KindRead, Show: show}
		}
		c.do(ctx, op)
		// Think time keeps the history small enough to check exhaustively.
		time.Sleep(time.Duration(c.rng.IntN(int(thinkMax))))
	}
}

// holdOp is a hold of named seats or, two times in five, of the best
// available ones: of any category, or (half of those) of vip or std. A
// third of those ask to wait in the show's queue when too few seats are
// free, unless the client already waits there.
func (c *client) holdOp(show string) history.Op {
	n := 1 + c.rng.IntN(seatsPerHold)
	op := history.Op{Kind: history.KindHold, Show: show, TTLms: c.ttl()}
	if c.rng.IntN(5) < 2 {
		op.Count = n
		if c.rng.IntN(2) == 0 {
			op.Category = rowCategory(c.rng.IntN(2) * vipRows) // vip or std
		}
		op.Wait = c.rng.IntN(3) == 0 && !slices.ContainsFunc(c.queues, func(e ownEntry) bool { return e.show == show })
		return op
	}
	// Adjacent seats in one row, as people book.
	seats := seatIDs()
	row := c.rng.IntN(showRows)
	first := c.rng.IntN(showRowSeats - n + 1)
	op.Seats = seats[row*showRowSeats+first : row*showRowSeats+first+n]
	return op
}

// ttl is a hold's or an extend's TTL.
func (c *client) ttl() int64 {
	return int64(holdTTLMinS+c.rng.IntN(holdTTLMaxS-holdTTLMinS+1)) * 1000
}

// token is the hold's token, or now and then a wrong one: the server must
// answer HOLD_TOKEN_INVALID and change nothing.
func (c *client) token(h ownHold) string {
	if c.rng.IntN(25) == 0 {
		return "jepsenWrongToken000000"
	}
	return h.token
}

func (c *client) pickHold() ownHold {
	c.holds = c.busyOnly(c.holds)
	if len(c.holds) == 0 {
		return ownHold{}
	}
	return c.holds[c.rng.IntN(len(c.holds))]
}

func (c *client) pickBooking() ownHold {
	c.bookings = c.busyOnly(c.bookings)
	if len(c.bookings) == 0 {
		return ownHold{}
	}
	return c.bookings[c.rng.IntN(len(c.bookings))]
}

// pickEntry is one of the client's waiting entries of a busy show, if any.
// Entries of shows no longer busy are forgotten: the cleanup after healing
// leaves them.
func (c *client) pickEntry() ownEntry {
	busy := map[string]bool{}
	for _, s := range showsAt(c.seed, time.Duration(c.rec.now())) {
		busy[s] = true
	}
	c.queues = slices.DeleteFunc(c.queues, func(e ownEntry) bool { return !busy[e.show] })
	if len(c.queues) == 0 {
		return ownEntry{}
	}
	return c.queues[c.rng.IntN(len(c.queues))]
}

// busyOnly forgets holds of shows no longer busy: they have expired by now,
// and the checker's histories stay per show short.
func (c *client) busyOnly(hs []ownHold) []ownHold {
	busy := map[string]bool{}
	for _, s := range showsAt(c.seed, time.Duration(c.rec.now())) {
		busy[s] = true
	}
	return slices.DeleteFunc(hs, func(h ownHold) bool { return !busy[h.show] })
}

// do runs one operation with retries and records it.
func (c *client) do(ctx context.Context, op history.Op) {
	switch op.Kind {
	case history.KindRead, history.KindHold, history.KindJoin, history.KindRoomEntry, history.KindRoomHold:
	case history.KindQueueEntry, history.KindLeave:
		if op.QueueEntryID == "" {
			return // no entry to act on
		}
	default:
		if op.HoldID == "" {
			return // no hold to act on
		}
	}
	op.Process = c.process
	if !op.Resend && isWrite(op.Kind) {
		op.ClientID, op.RequestID = c.clientID(), c.nextRequest()
	}
	op.Outcome, op.Reason, op.Error = "", "", ""
	op.ID = c.rec.begin(op)
	deadline, cancel := context.WithTimeout(context.WithoutCancel(ctx), opDeadline)
	defer cancel()
	if isWrite(op.Kind) {
		// Every attempt states the first one's send time, as a client
		// should (docs/API.md, the retry horizon).
		deadline = sl.WithFirstSent(deadline, time.Now())
	}
	uncertain := false
	node := c.rng.IntN(len(c.booking))
	for backoff := 20 * time.Millisecond; ; backoff = min(2*backoff, 400*time.Millisecond) {
		op.Node = c.nodeIDs[node]
		actx, acancel := context.WithTimeout(deadline, attemptTimeout)
		err := c.attempt(actx, c.booking[node], &op)
		acancel()
		cls := classify(err)
		if cls == clsDone {
			break
		}
		op.Reason, op.Error = reasonOf(err), err.Error()
		if cls == clsUncertain {
			uncertain = true
		}
		if deadline.Err() != nil || ctx.Err() != nil && cls != clsUncertain {
			if uncertain && isWrite(op.Kind) {
				op.Outcome = history.Info
			} else {
				op.Outcome = history.Fail
			}
			break
		}
		// Retry elsewhere, as a client with a list of endpoints does.
		node = (node + 1 + c.rng.IntN(len(c.booking)-1)) % len(c.booking)
		select {
		case <-deadline.Done():
		case <-time.After(backoff):
		}
	}
	if op.Outcome == "" {
		op.Outcome = history.OK
		if err := op.Error; err != "" {
			op.Outcome = history.Fail
		}
	}
	c.rec.end(op)
	c.done = op
	c.after(op)
}

// lastOp is the op do recorded last.
func (c *client) lastOp() history.Op { return c.done }

func isWrite(k history.Kind) bool { return k.Mutating() }

// after updates the client's own state from an operation's outcome.
func (c *client) after(op history.Op) {
	if op.Outcome == history.Info {
		// The op may still take effect: later ops belong to a new process.
		c.process = int(c.rec.processes.Add(1))
		return
	}
	if isWrite(op.Kind) && !op.Resend {
		o := op
		c.last = &o
	}
	if op.Resend {
		return
	}
	c.afterQueue(op)
	if op.Outcome != history.OK {
		return
	}
	own := func(hs []ownHold) (ownHold, bool) {
		i := slices.IndexFunc(hs, func(h ownHold) bool { return h.id == op.HoldID })
		if i < 0 {
			return ownHold{}, false
		}
		return hs[i], true
	}
	forget := func(hs []ownHold) []ownHold {
		return slices.DeleteFunc(hs, func(h ownHold) bool { return h.id == op.HoldID })
	}
	switch op.Kind {
	case history.KindHold:
		c.holds = append(c.holds, ownHold{show: op.Show, id: op.OutHoldID, token: op.OutToken})
	case history.KindConfirm:
		if h, ok := own(c.holds); ok {
			if _, dup := own(c.bookings); !dup {
				c.bookings = append(c.bookings, h)
			}
		}
	}
	// A finished hold or booking is mostly forgotten; sometimes kept, to act
	// on again (a confirm, release or refund again answers OK).
	if c.rng.IntN(4) == 0 {
		return
	}
	switch op.Kind {
	case history.KindConfirm, history.KindRelease:
		c.holds = forget(c.holds)
	case history.KindRefund:
		c.bookings = forget(c.bookings)
	}
}

// afterQueue keeps the client's queue entries: a QUEUED hold adds one, a
// read that finds it LEFT or a leave that succeeds drops it, and a read
// that finds it OFFERED adopts the hold: the client confirms it or releases
// it at once, or (one time in five) keeps it like its other holds, which
// may lapse.
func (c *client) afterQueue(op history.Op) {
	drop := func() {
		c.queues = slices.DeleteFunc(c.queues, func(e ownEntry) bool { return e.id == op.QueueEntryID })
	}
	switch {
	case op.Kind == history.KindHold && op.Reason == "QUEUED" && op.QueueEntryID != "":
		if !slices.ContainsFunc(c.queues, func(e ownEntry) bool { return e.id == op.QueueEntryID }) {
			c.queues = append(c.queues, ownEntry{show: op.Show, id: op.QueueEntryID, token: op.QueueToken})
		}
	case op.Kind == history.KindLeave && op.Outcome == history.OK:
		drop()
	case op.Kind != history.KindQueueEntry || op.Outcome != history.OK:
	case op.QueueState == "LEFT":
		drop()
	case op.QueueState == "OFFERED":
		drop()
		if op.OutHoldID == "" || normState(op.HoldState) != "HELD" {
			return
		}
		h := ownHold{show: op.Show, id: op.OutHoldID, token: op.OutToken}
		c.holds = append(c.holds, h)
		switch c.rng.IntN(5) {
		case 0, 1:
			c.next = &history.Op{Kind: history.KindConfirm, Show: h.show, HoldID: h.id, HoldToken: h.token, PaymentRef: fmt.Sprintf("pay-%d-%d", c.id, c.reqSeq+1)}
		case 2, 3:
			c.next = &history.Op{Kind: history.KindRelease, Show: h.show, HoldID: h.id, HoldToken: h.token}
		}
	}
}

func normState(s string) string {
	return strings.TrimPrefix(s, "HOLD_STATE_")
}

// resolveQueues, after healing, settles every queue entry the history does
// not know the end of (no OFFERED or LEFT read, no successful leave): it
// leaves it as its waiter, reads it, and releases the hold it was offered,
// if any. Without this the checker would only know that an entry may have
// been offered some seats of its category, at any time after it was
// joined, which blurs every check of the show; and an offered hold would
// hold its seats for the whole claim window. c sends them (acting for each
// waiter); it returns how many entries it settled.
func resolveQueues(ctx context.Context, rec *recorder, c *client) int {
	rec.mu.Lock()
	settled := map[string]bool{}
	var todo []history.Op
	for _, op := range rec.mu.ops {
		switch {
		case op.Outcome != history.OK:
		case op.Kind == history.KindLeave, op.Kind == history.KindQueueEntry && op.QueueState != "WAITING":
			settled[op.QueueEntryID] = true
		}
	}
	seen := map[string]bool{}
	for _, op := range rec.mu.ops {
		if op.Kind == history.KindHold && op.Reason == "QUEUED" && op.QueueEntryID != "" && !settled[op.QueueEntryID] && !seen[op.QueueEntryID] {
			seen[op.QueueEntryID] = true
			todo = append(todo, op)
		}
	}
	rec.mu.Unlock()
	for _, j := range todo {
		c.as, c.process = j.ClientID, j.Process
		e := history.Op{Show: j.Show, QueueEntryID: j.QueueEntryID, QueueToken: j.QueueToken}
		leave := e
		leave.Kind = history.KindLeave
		if c.do(ctx, leave); c.lastOp().Outcome == history.OK {
			continue
		}
		read := e
		read.Kind = history.KindQueueEntry
		c.do(ctx, read)
		if r := c.lastOp(); r.Outcome == history.OK && r.QueueState == "OFFERED" && normState(r.HoldState) == "HELD" {
			c.do(ctx, history.Op{Kind: history.KindRelease, Show: r.Show, HoldID: r.OutHoldID, HoldToken: r.OutToken})
		}
	}
	return len(todo)
}

// resolveInfoHolds re-sends, after healing, every best-available hold whose
// outcome stayed unknown, with its client_id and request_id, as a client
// would retry until it gets an answer. The answer (the original replayed,
// or a first application now) names the seats the hold took: without it
// the checker only knows the hold may have taken any seats of its category,
// which blurs every check of that show. c sends them; it returns how many
// it sent.
func resolveInfoHolds(ctx context.Context, rec *recorder, c *client) int {
	rec.mu.Lock()
	var todo []history.Op
	for _, op := range rec.mu.ops {
		if op.Kind == history.KindHold && op.Count > 0 && op.Outcome == history.Info {
			todo = append(todo, op)
		}
	}
	rec.mu.Unlock()
	for _, op := range todo {
		c.process = op.Process // the same request: one logical op
		c.do(ctx, history.Op{Kind: op.Kind, Show: op.Show, ClientID: op.ClientID, RequestID: op.RequestID,
			Count: op.Count, Category: op.Category, TTLms: op.TTLms, Resend: true, Of: op.ID})
	}
	return len(todo)
}

// attempt sends op once to one node and fills in its outputs. A non-nil
// error is what the node answered (or the transport's failure).
func (c *client) attempt(ctx context.Context, b ledgerpb.BookingClient, op *history.Op) error {
	op.Error, op.Reason = "", ""
	if op.Kind.Room() {
		return c.roomAttempt(ctx, b, op) // room.go
	}
	var err error
	switch op.Kind {
	case history.KindHold:
		var r *ledgerpb.HoldResponse
		r, err = b.Hold(ctx, &ledgerpb.HoldRequest{ShowId: op.Show, SeatIds: op.Seats, ClientId: op.ClientID,
			RequestId: op.RequestID, TtlSeconds: uint32(op.TTLms / 1000), Count: uint32(op.Count), Category: op.Category, Wait: op.Wait})
		if err == nil {
			op.OutHoldID, op.ExpiresAtMs, op.Revision, op.AppliedAtMs, op.Replayed =
				r.HoldId, r.ExpiresAt.AsTime().UnixMilli(), r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
			op.OutToken = r.HoldToken
			if op.Count > 0 {
				op.OutSeats = r.SeatIds
			}
		}
	case history.KindConfirm:
		var r *ledgerpb.ConfirmResponse
		r, err = b.Confirm(ctx, &ledgerpb.ConfirmRequest{ShowId: op.Show, HoldId: op.HoldID, PaymentRef: op.PaymentRef,
			ClientId: op.ClientID, RequestId: op.RequestID, HoldToken: op.HoldToken})
		if err == nil {
			op.HoldState, op.Revision, op.AppliedAtMs, op.Replayed = r.State.String(), r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindRelease:
		var r *ledgerpb.ReleaseResponse
		r, err = b.Release(ctx, &ledgerpb.ReleaseRequest{ShowId: op.Show, HoldId: op.HoldID, ClientId: op.ClientID, RequestId: op.RequestID, HoldToken: op.HoldToken})
		if err == nil {
			op.HoldState, op.Revision, op.AppliedAtMs, op.Replayed = r.State.String(), r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindExtend:
		var r *ledgerpb.ExtendResponse
		r, err = b.Extend(ctx, &ledgerpb.ExtendRequest{ShowId: op.Show, HoldId: op.HoldID, HoldToken: op.HoldToken,
			ClientId: op.ClientID, RequestId: op.RequestID, TtlSeconds: uint32(op.TTLms / 1000)})
		if err == nil {
			op.ExpiresAtMs, op.Revision, op.AppliedAtMs, op.Replayed = r.ExpiresAt.AsTime().UnixMilli(), r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindRefund:
		var r *ledgerpb.RefundResponse
		r, err = b.Refund(ctx, &ledgerpb.RefundRequest{ShowId: op.Show, HoldId: op.HoldID, HoldToken: op.HoldToken,
			ClientId: op.ClientID, RequestId: op.RequestID, Reason: "jepsen"})
		if err == nil {
			op.HoldState, op.Revision, op.AppliedAtMs, op.Replayed = r.State.String(), r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindQueueEntry:
		err = c.readEntry(ctx, b, op)
	case history.KindLeave:
		var r *ledgerpb.LeaveQueueResponse
		r, err = b.LeaveQueue(ctx, &ledgerpb.LeaveQueueRequest{ShowId: op.Show, EntryId: op.QueueEntryID, QueueToken: op.QueueToken,
			ClientId: op.ClientID, RequestId: op.RequestID})
		if err == nil {
			op.Revision, op.AppliedAtMs, op.Replayed = r.Revision, r.AppliedAt.AsTime().UnixMilli(), r.Replayed
		}
	case history.KindRead:
		var r *ledgerpb.SeatMap
		r, err = b.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: op.Show, Consistency: ledgerpb.Consistency_LINEARIZABLE})
		if err == nil {
			op.SeatStates = map[string]string{}
			for _, s := range r.Seats {
				op.SeatStates[s.SeatId] = s.State.String()
			}
			op.Revision, op.AppliedAtMs = r.Revision, r.AsOf.AsTime().UnixMilli()
		}
	case history.KindGetHold:
		var r *ledgerpb.HoldInfo
		r, err = b.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: op.Show, HoldId: op.HoldID, Consistency: ledgerpb.Consistency_LINEARIZABLE})
		if err == nil {
			op.HoldState, op.ExpiresAtMs, op.Revision, op.AppliedAtMs = r.State.String(), r.ExpiresAt.AsTime().UnixMilli(), r.Revision, r.AsOf.AsTime().UnixMilli()
		}
	}
	if err != nil {
		op.Error, op.Reason = err.Error(), reasonOf(err)
		if d := detailOf(err); d != nil {
			op.Taken, op.Revision, op.HoldState = d.TakenSeatIds, d.Revision, holdStateName(d.HoldState)
			if d.AppliedAt != nil {
				op.AppliedAtMs = d.AppliedAt.AsTime().UnixMilli()
			}
			if op.Kind == history.KindHold && d.QueueEntryId != "" {
				op.QueueEntryID, op.QueueToken, op.QueuePosition = d.QueueEntryId, d.QueueToken, int(d.QueuePosition)
			}
		}
	}
	return err
}

// readEntry reads op's queue entry (linearizably: the server has no other
// way) and records what the waiter sees.
func (c *client) readEntry(ctx context.Context, b ledgerpb.BookingClient, op *history.Op) error {
	r, err := b.GetQueueEntry(ctx, &ledgerpb.GetQueueEntryRequest{ShowId: op.Show, EntryId: op.QueueEntryID, QueueToken: op.QueueToken})
	if err != nil {
		return err
	}
	op.QueueState, op.QueuePosition, op.Count, op.Category = r.State, int(r.Position), int(r.Count), r.Category
	op.Revision, op.AppliedAtMs = r.Revision, r.AsOf.AsTime().UnixMilli()
	if r.HoldId != "" {
		op.OutHoldID, op.OutToken, op.OutSeats, op.HoldState = r.HoldId, r.HoldToken, r.SeatIds, holdStateName(r.HoldState)
		if r.OfferExpiresAt != nil {
			op.ExpiresAtMs = r.OfferExpiresAt.AsTime().UnixMilli()
		}
	}
	return nil
}

func holdStateName(s ledgerpb.HoldState) string {
	if s == ledgerpb.HoldState_HOLD_STATE_UNSPECIFIED {
		return ""
	}
	return s.String()
}

// Error classes.
type errClass int

const (
	clsDone      errClass = iota // an answer: success or a definite rejection
	clsRetry                     // definitely not applied: retry
	clsUncertain                 // may have been applied: retry with the same request_id
)

func classify(err error) errClass {
	if err == nil {
		return clsDone
	}
	switch reasonOf(err) {
	case "NOT_LEADER", "UNAVAILABLE":
		return clsRetry
	case "OUTCOME_UNKNOWN", "DEADLINE_EXCEEDED", "CANCELED", "INTERNAL":
		return clsUncertain
	case "":
		// No ErrorInfo: the transport failed (the request may have been sent).
		if c := status.Code(err); c == codes.Unavailable || c == codes.DeadlineExceeded || c == codes.Canceled || c == codes.Unknown || c == codes.Internal {
			return clsUncertain
		}
		return clsDone
	}
	return clsDone
}

// reasonOf and detailOf read a node's error (client/).
var (
	reasonOf = sl.Reason
	detailOf = sl.Detail
)

// createShows creates every show of the run before the clients start.
func createShows(ctx context.Context, b ledgerpb.BookingClient, seed int64, n int) error {
	for i := 0; i < n; i++ {
		req := &ledgerpb.CreateShowRequest{Show: testShow(showName(seed, i)), ClientId: "jepsen-admin", RequestId: showName(seed, i)}
		var err error
		for try := 0; try < 100; try++ {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = b.CreateShow(cctx, req)
			cancel()
			if err == nil || reasonOf(err) == "SHOW_EXISTS" {
				err = nil
				break
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				return ctx.Err()
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			return fmt.Errorf("create show %s: %w", showName(seed, i), err)
		}
	}
	return nil
}

// knownHolds lists every hold id the history learned of, by show.
func knownHolds(ops []history.Op) map[string]string {
	out := map[string]string{}
	for _, op := range ops {
		if op.OutHoldID != "" {
			out[op.OutHoldID] = op.Show
		}
		if op.HoldID != "" {
			out[op.HoldID] = op.Show
		}
	}
	return out
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
