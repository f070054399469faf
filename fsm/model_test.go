// This file proves that the Machine implements the documented rules (doc.go)
// and nothing else: thousands of random entry sequences are applied both to
// a Machine on Pebble and to a reference model written with plain Go maps,
// and every Result (code, field, hold id, seat list, expires_at, state,
// amount, replayed, revision, applied_at — all but the message) must be
// equal, as must the final seat maps, hold records, expiry index, clock,
// applied index and the number of remembered requests. S1 is checked on the
// machine's stored records along the way. The seed is printed on failure;
// rerun one with -fsm.seed.
package fsm

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

var modelSeed = flag.Uint64("fsm.seed", 0, "seed of TestModel and TestDeterminism (0 picks one from the time)")

const (
	modelSequences = 300
	modelEntries   = 60
)

func testSeed(t *testing.T) uint64 {
	seed := *modelSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("seed %d: rerun with go test -run '%s' -fsm.seed=%d ./fsm/", seed, t.Name(), seed)
		}
	})
	return seed
}

func TestModel(t *testing.T) {
	seed := testSeed(t)
	db := newTestDB(t)
	seen := map[string]int{}
	defer func() { t.Logf("results seen: %v", seen) }()
	for seq := range modelSequences {
		group := uint32(seq + 1)
		m := newTestMachine(t, db, group)
		ref := newModel(group)
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, uint64(seq)))})
		for e := range modelEntries {
			index, cmd := g.entry()
			// Sometimes replay an entry raft already applied.
			if e > 3 && g.ch.intn(25) == 0 {
				index = uint64(1 + g.ch.intn(int(index-1)))
				g.next--
			}
			got, err := applyRecover(m, index, cmd)
			if err != nil {
				t.Fatalf("sequence %d entry %d %s: %v", seq, index, opName(cmd), err)
			}
			want := ref.apply(index, cmd)
			if msg := diffResults(cmd, got, want); msg != "" {
				t.Fatalf("sequence %d entry %d at %d: %s", seq, index, cmd.ProposedAtMs, msg)
			}
			g.observe(cmd, got)
			for _, r := range got {
				seen[resultKind(r)]++
			}
			if e%20 == 19 {
				if err := checkS1(m, genShows); err != nil {
					t.Fatalf("sequence %d after entry %d: %v", seq, index, err)
				}
			}
		}
		if err := ref.compareState(m); err != nil {
			t.Fatalf("sequence %d final state: %v", seq, err)
		}
		if err := checkS1(m, genShows); err != nil {
			t.Fatalf("sequence %d final state: %v", seq, err)
		}
	}
}

// resultKind buckets a result for the coverage log: its code, replayed or
// not, and for Expire whether it freed anything.
func resultKind(r *ledgerpb.Result) string {
	k := strings.TrimPrefix(r.Code.String(), "CODE_")
	if r.Replayed {
		k += "/replayed"
	}
	if r.Expired > 0 {
		k += "/expired"
	}
	return k
}

// diffResults compares the machine's results with the model's.
func diffResults(cmd *ledgerpb.Command, got, want []*ledgerpb.Result) string {
	if (got == nil) != (want == nil) || len(got) != len(want) {
		return fmt.Sprintf("Apply(%s) = %d results (nil %v), want %d (nil %v)", opName(cmd), len(got), got == nil, len(want), want == nil)
	}
	inner := []*ledgerpb.Command{cmd}
	if b := cmd.GetBatch(); b != nil {
		inner = b.Commands
	}
	for i := range got {
		g := proto.Clone(got[i]).(*ledgerpb.Result)
		g.Message = ""
		if !proto.Equal(g, want[i]) {
			return fmt.Sprintf("%s by %s/%s (command %d) = %s, want %s", opName(inner[i]), inner[i].ClientId, inner[i].RequestId, i,
				resultString(got[i]), resultString(want[i]))
		}
	}
	return ""
}

// model is the reference: the same rules as doc.go over plain maps.
type model struct {
	group    uint32
	applied  uint64
	clock    int64
	shows    map[string]*modelShow
	holds    map[string]*modelHold
	owner    map[string]string // show + "/" + seat -> hold id (HELD or CONFIRMED by state)
	requests map[string]*modelRequest
	// The waiting queue: each show's entries in join order (waiting or
	// not), and the shows whose seats the current entry freed.
	line  map[string][]*ledgerpb.QueueEntryRecord
	freed map[string]bool
}

type modelShow struct {
	seats    []string         // layout order
	price    map[string]int64 // seat -> price
	currency string
	rows     []*ledgerpb.Row
}

type modelHold struct {
	rec *ledgerpb.HoldRecord
}

type modelRequest struct {
	client, request string
	payload         *ledgerpb.Command // proposed_at cleared
	result          *ledgerpb.Result
	at              int64
}

func newModel(group uint32) *model {
	return &model{group: group, shows: map[string]*modelShow{}, holds: map[string]*modelHold{},
		owner: map[string]string{}, requests: map[string]*modelRequest{}, line: map[string][]*ledgerpb.QueueEntryRecord{},
		freed: map[string]bool{}}
}

func (md *model) apply(index uint64, cmd *ledgerpb.Command) []*ledgerpb.Result {
	if index <= md.applied {
		return nil
	}
	now := max(md.clock, cmd.ProposedAtMs)
	cmds := []*ledgerpb.Command{cmd}
	if b := cmd.GetBatch(); b != nil {
		cmds = b.Commands
	}
	out := make([]*ledgerpb.Result, len(cmds))
	for i, c := range cmds {
		out[i] = md.applyOne(c, index, now, i)
	}
	md.offer(index, now)
	md.applied, md.clock = index, now
	return out
}

// offer is the reference of the queue's offers at the end of an entry:
// for each show that had seats freed (sorted), each waiter in join order
// that fits gets a best-available hold for the claim window.
func (md *model) offer(index uint64, now int64) {
	k := 0
	for _, show := range slices.Sorted(maps.Keys(md.freed)) {
		scanned := 0
		for _, e := range md.line[show] {
			if e.State != ledgerpb.QueueState_QUEUE_STATE_WAITING {
				continue
			}
			if scanned++; scanned > QueueScanPerEntryMax {
				break
			}
			seats := md.best(show, int(e.Count), e.Category, now)
			if seats == nil {
				continue
			}
			r := md.grant(e.ClientId, show, seats, QueueClaimWindowMs, index, now, offerPosBase+k)
			k++
			e.State, e.HoldId, e.OfferedAtMs = ledgerpb.QueueState_QUEUE_STATE_OFFERED, r.HoldId, now
		}
	}
	md.freed = map[string]bool{}
}

// waiting returns show's waiting entries in line order.
func (md *model) waiting(show string) []*ledgerpb.QueueEntryRecord {
	var out []*ledgerpb.QueueEntryRecord
	for _, e := range md.line[show] {
		if e.State == ledgerpb.QueueState_QUEUE_STATE_WAITING {
			out = append(out, e)
		}
	}
	return out
}

// join is the reference of joining a show's queue.
func (md *model) join(client string, c *ledgerpb.HoldCmd, index uint64, now int64, pos int) *ledgerpb.Result {
	var ahead, position uint32
	for _, e := range md.waiting(c.ShowId) {
		position++
		if e.ClientId == client {
			return modelQueued(e.EntryId, position, ahead)
		}
		ahead += e.Count
	}
	if position >= QueueLenMax {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_QUEUE_FULL}
	}
	e := &ledgerpb.QueueEntryRecord{EntryId: fmt.Sprintf("q%d-%d-%d", md.group, index, pos), ShowId: c.ShowId,
		ClientId: client, Count: c.Count, Category: c.Category, JoinedAtMs: now,
		State: ledgerpb.QueueState_QUEUE_STATE_WAITING, JoinIndex: index, JoinPos: uint32(pos)}
	md.line[c.ShowId] = append(md.line[c.ShowId], e)
	return modelQueued(e.EntryId, position+1, ahead)
}

func modelQueued(id string, position, ahead uint32) *ledgerpb.Result {
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_QUEUED, QueueEntryId: id, QueuePosition: position,
		SeatsAhead: ahead, QueueToken: queueToken(nil, id)}
}

// leave is the reference of LeaveQueue.
func (md *model) leave(client string, c *ledgerpb.LeaveQueueCmd) *ledgerpb.Result {
	var e *ledgerpb.QueueEntryRecord
	for _, x := range md.line[c.ShowId] {
		if x.EntryId == c.EntryId {
			e = x
		}
	}
	switch {
	case e == nil:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_NOT_QUEUED}
	case e.ClientId != client:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_NOT_HOLD_OWNER}
	case c.QueueToken != queueToken(nil, e.EntryId):
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID}
	case e.State == ledgerpb.QueueState_QUEUE_STATE_OFFERED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_NOT_QUEUED}
	}
	e.State = ledgerpb.QueueState_QUEUE_STATE_LEFT
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, QueueEntryId: e.EntryId}
}

func (md *model) applyOne(c *ledgerpb.Command, index uint64, now int64, pos int) *ledgerpb.Result {
	stamp := func(r *ledgerpb.Result) *ledgerpb.Result {
		r.Revision, r.AppliedAtMs = index, now
		return r
	}
	if e := c.GetExpire(); e != nil {
		return stamp(md.expire(e, now))
	}
	if !modelValidID(c.ClientId, 64) {
		return stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: "client_id"})
	}
	if !modelValidID(c.RequestId, 128) {
		return stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: "request_id"})
	}
	// Fields are checked before the request id, and an invalid request is
	// not remembered (fsm/doc.go).
	if r := modelFields(c); r != nil {
		return stamp(r)
	}
	// Fields before the exactly-once lookup (doc.go's order); an invalid
	// request is not remembered.
	if r := md.validate(c); r != nil {
		return stamp(r)
	}
	payload := proto.Clone(c).(*ledgerpb.Command)
	payload.ProposedAtMs, payload.FirstSentAtMs = 0, 0
	key := c.ClientId + "\x00" + c.RequestId
	if prev, ok := md.requests[key]; ok {
		if !proto.Equal(prev.payload, payload) {
			return stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_REQUEST_ID_REUSED})
		}
		r := proto.Clone(prev.result).(*ledgerpb.Result)
		r.Replayed = true
		return r
	}
	// Without a record, the first send time (doc.go): at most 10 minutes
	// ahead, and a request first sent more than 23 hours ago is refused;
	// neither is remembered.
	if f := c.FirstSentAtMs; f != 0 {
		if f < 0 || f > 253402300799999 || f > now+10*60*1000 {
			return stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: "first_sent_at_ms"})
		}
		if now-f > 23*60*60*1000 {
			return stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_REQUEST_EXPIRED})
		}
	}
	var r *ledgerpb.Result
	switch {
	case c.GetCreateShow() != nil:
		r = md.createShow(c.GetCreateShow().Show)
	case c.GetHold() != nil:
		r = md.hold(c.ClientId, c.GetHold(), index, now, pos)
	case c.GetConfirm() != nil:
		r = md.confirm(c.ClientId, c.GetConfirm(), now)
	case c.GetRelease() != nil:
		r = md.release(c.ClientId, c.GetRelease(), now)
	case c.GetExtend() != nil:
		r = md.extend(c.ClientId, c.GetExtend(), now)
	case c.GetRefund() != nil:
		r = md.refund(c.ClientId, c.GetRefund(), now)
	case c.GetLeaveQueue() != nil:
		r = md.leave(c.ClientId, c.GetLeaveQueue())
	default:
		panic(fmt.Sprintf("model: unexpected command %v", c))
	}
	stamp(r)
	md.requests[key] = &modelRequest{client: c.ClientId, request: c.RequestId, payload: payload,
		result: proto.Clone(r).(*ledgerpb.Result), at: now}
	return r
}

// modelFields runs the field checks of each command on a throwaway model:
// they read no state, so an empty model gives the same verdict.
func modelFields(c *ledgerpb.Command) *ledgerpb.Result {
	var r *ledgerpb.Result
	empty := newModel(0)
	switch {
	case c.GetCreateShow() != nil:
		if len(c.GetCreateShow().Show.GetRows()) == 0 {
			r = invalidField("show.rows")
		}
	case c.GetHold() != nil:
		r = empty.hold(c.ClientId, c.GetHold(), 1, 0, 0)
	case c.GetConfirm() != nil:
		r = empty.confirm(c.ClientId, c.GetConfirm(), 0)
	case c.GetRelease() != nil:
		r = empty.release(c.ClientId, c.GetRelease(), 0)
	}
	if r == nil || r.Code != ledgerpb.Code_CODE_INVALID_ARGUMENT {
		r = empty.validate(c)
	}
	if r != nil && r.Code == ledgerpb.Code_CODE_INVALID_ARGUMENT {
		return r
	}
	return nil
}

func modelValidID(s string, n int) bool {
	if s == "" || len(s) > n {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-", c) {
			return false
		}
	}
	return true
}

func invalidField(f string) *ledgerpb.Result {
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: f}
}

// validate checks a client command's fields; nil if they are within limits.
// Shows are checked only as far as the generator breaks them (no rows).
func (md *model) validate(c *ledgerpb.Command) *ledgerpb.Result {
	switch {
	case c.GetCreateShow() != nil:
		if len(c.GetCreateShow().Show.GetRows()) == 0 {
			return invalidField("show.rows")
		}
	case c.GetHold() != nil:
		h := c.GetHold()
		if !modelValidID(h.ShowId, 64) {
			return invalidField("show_id")
		}
		if len(h.SeatIds) == 0 && h.Count == 0 {
			return invalidField("seat_ids")
		}
		if len(h.SeatIds) == 0 && (h.Count > 10 || h.Category != "" && !modelValidID(h.Category, 32)) {
			return invalidField(map[bool]string{true: "count", false: "category"}[h.Count > 10])
		}
		if len(h.SeatIds) > 0 && (h.Count != 0 || h.Category != "") {
			return invalidField("count")
		}
		if len(h.SeatIds) > 0 && h.Wait {
			return invalidField("wait")
		}
		if len(h.SeatIds) > 10 {
			return invalidField("seat_ids")
		}
		seen := map[string]bool{}
		for _, s := range h.SeatIds {
			if s == "" || len(s) > 8 || seen[s] {
				return invalidField("seat_ids")
			}
			seen[s] = true
		}
		if h.TtlMs != 0 && (h.TtlMs < 1000 || h.TtlMs > 1_800_000) {
			return invalidField("ttl_seconds")
		}
	case c.GetConfirm() != nil:
		cf := c.GetConfirm()
		if !modelValidID(cf.ShowId, 64) {
			return invalidField("show_id")
		}
		if !modelValidID(cf.HoldId, 64) {
			return invalidField("hold_id")
		}
		if cf.PaymentRef == "" || len(cf.PaymentRef) > 128 {
			return invalidField("payment_ref")
		}
		return modelTokenField(cf.HoldToken)
	case c.GetRelease() != nil:
		return modelRefFields(c.GetRelease().ShowId, c.GetRelease().HoldId, c.GetRelease().HoldToken)
	case c.GetExtend() != nil:
		e := c.GetExtend()
		if r := modelRefFields(e.ShowId, e.HoldId, e.HoldToken); r != nil {
			return r
		}
		if e.TtlMs != 0 && (e.TtlMs < 1000 || e.TtlMs > 1_800_000) {
			return invalidField("ttl_seconds")
		}
	case c.GetLeaveQueue() != nil:
		lq := c.GetLeaveQueue()
		if !modelValidID(lq.ShowId, 64) {
			return invalidField("show_id")
		}
		if !modelValidID(lq.EntryId, 64) {
			return invalidField("entry_id")
		}
		if !modelValidID(lq.QueueToken, 64) {
			return invalidField("queue_token")
		}
	case c.GetRefund() != nil:
		rf := c.GetRefund()
		if r := modelRefFields(rf.ShowId, rf.HoldId, rf.HoldToken); r != nil {
			return r
		}
		if len(rf.Reason) > 200 {
			return invalidField("reason")
		}
	}
	return nil
}

func modelRefFields(show, hold, token string) *ledgerpb.Result {
	if !modelValidID(show, 64) {
		return invalidField("show_id")
	}
	if !modelValidID(hold, 64) {
		return invalidField("hold_id")
	}
	return modelTokenField(token)
}

func modelTokenField(token string) *ledgerpb.Result {
	if !modelValidID(token, 64) {
		return invalidField("hold_token")
	}
	return nil
}

// createShow stores a show the generator made.
func (md *model) createShow(s *ledgerpb.Show) *ledgerpb.Result {
	if md.shows[s.ShowId] != nil {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SHOW_EXISTS}
	}
	ms := &modelShow{price: map[string]int64{}, currency: s.Categories[0].Currency, rows: s.Rows}
	prices := map[string]int64{}
	for _, c := range s.Categories {
		prices[c.Name] = c.PriceMinor
	}
	for _, r := range s.Rows {
		for n := 1; n <= int(r.Seats); n++ {
			id := fmt.Sprintf("%s%d", r.Name, n)
			ms.seats = append(ms.seats, id)
			ms.price[id] = prices[r.Category]
		}
	}
	md.shows[s.ShowId] = ms
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}

func (md *model) hold(client string, c *ledgerpb.HoldCmd, index uint64, now int64, pos int) *ledgerpb.Result {
	show := md.shows[c.ShowId]
	if show == nil {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SHOW_NOT_FOUND}
	}
	seats := c.SeatIds
	if len(seats) == 0 {
		known := false
		for _, r := range show.rows {
			known = known || r.Category == c.Category
		}
		if c.Category != "" && !known {
			return invalidField("category")
		}
		if seats = md.best(c.ShowId, int(c.Count), c.Category, now); seats == nil {
			if c.Wait {
				return md.join(client, c, index, now, pos)
			}
			return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SOLD_OUT}
		}
	}
	var unknown, taken []string
	for _, s := range seats {
		if _, ok := show.price[s]; !ok {
			unknown = append(unknown, s)
		}
	}
	if len(unknown) > 0 {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_UNKNOWN_SEAT, SeatIds: unknown}
	}
	live := 0
	for _, id := range slices.Sorted(maps.Keys(md.holds)) {
		h := md.holds[id].rec
		if h.ShowId == c.ShowId && h.ClientId == client && h.State == ledgerpb.HoldState_HOLD_STATE_HELD && now < h.ExpiresAtMs {
			live++
		}
	}
	if live >= 8 {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_TOO_MANY_HOLDS, Limit: 8}
	}
	var stale []*modelHold
	for _, s := range seats {
		id, ok := md.owner[c.ShowId+"/"+s]
		if !ok {
			continue
		}
		h := md.holds[id]
		if h.rec.State == ledgerpb.HoldState_HOLD_STATE_HELD && now >= h.rec.ExpiresAtMs {
			if !slices.Contains(stale, h) {
				stale = append(stale, h)
			}
			continue
		}
		taken = append(taken, s)
	}
	if len(taken) > 0 {
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_SEATS_TAKEN, SeatIds: taken,
			AlternativeSeatIds: md.alternatives(c.ShowId, seats, now)}
	}
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = 300_000
	}
	return md.grant(client, c.ShowId, seats, ttl, index, now, pos)
}

// grant holds free seats (closing holds expired by the clock that still
// sit on them) for client.
func (md *model) grant(client, showID string, seats []string, ttl int64, index uint64, now int64, pos int) *ledgerpb.Result {
	show := md.shows[showID]
	for _, s := range seats {
		if id, ok := md.owner[showID+"/"+s]; ok {
			h := md.holds[id]
			if h.rec.State != ledgerpb.HoldState_HOLD_STATE_HELD || now < h.rec.ExpiresAtMs {
				panic(fmt.Sprintf("model: grant of taken seat %s", s))
			}
			md.close(h, ledgerpb.HoldState_HOLD_STATE_EXPIRED, now)
		}
	}
	rec := &ledgerpb.HoldRecord{HoldId: fmt.Sprintf("h%d-%d-%d", md.group, index, pos), ShowId: showID,
		SeatIds: slices.Clone(seats), ClientId: client, CreatedAtMs: now, ExpiresAtMs: now + ttl,
		State: ledgerpb.HoldState_HOLD_STATE_HELD, Currency: show.currency, Revision: index}
	for _, s := range seats {
		rec.AmountMinor += show.price[s]
		md.owner[showID+"/"+s] = rec.HoldId
	}
	md.holds[rec.HoldId] = &modelHold{rec: rec}
	r := modelHoldResult(rec)
	r.HoldToken = HoldToken(nil, rec.HoldId)
	return r
}

// modelSeat is a seat as the reference best-available sees it.
type modelSeat struct {
	id        string
	row, num  int // row index, 0-based seat number
	rowLen    int
	category  string
	free      bool
	layoutIdx int
}

// seatsOf lists a show's seats with whether a hold could take each now.
func (md *model) seatsOf(showID string, now int64) [][]modelSeat {
	show := md.shows[showID]
	var rows [][]modelSeat
	i := 0
	for ri, r := range show.rows {
		var row []modelSeat
		for n := 0; n < int(r.Seats); n++ {
			id := fmt.Sprintf("%s%d", r.Name, n+1)
			free := true
			if hid, ok := md.owner[showID+"/"+id]; ok {
				h := md.holds[hid].rec
				free = h.State == ledgerpb.HoldState_HOLD_STATE_HELD && now >= h.ExpiresAtMs
			}
			row = append(row, modelSeat{id, ri, n, int(r.Seats), r.Category, free, i})
			i++
		}
		rows = append(rows, row)
	}
	return rows
}

// best is the reference best-available (fsm/best.go states the policy):
// every candidate party is listed and the list sorted by the policy's keys.
func (md *model) best(showID string, n int, category string, now int64) []string {
	rows := md.seatsOf(showID, now)
	type cand struct {
		seats               []string
		orphan, dist, first int
	}
	var cands []cand
	free := func(row []modelSeat, i int) bool { return i >= 0 && i < len(row) && row[i].free }
	for ri, row := range rows {
		for start := 0; start+n <= len(row); start++ {
			ok := row[start].category == category || category == ""
			var ids []string
			for i := start; i < start+n; i++ {
				ok = ok && row[i].free
				ids = append(ids, row[i].id)
			}
			if !ok {
				continue
			}
			orphan := 0
			if free(row, start-1) && !free(row, start-2) {
				orphan = 1
			}
			if free(row, start+n) && !free(row, start+n+1) {
				orphan = 1
			}
			dist := abs(2*ri-(len(rows)-1)) + abs(2*start+n-1-(len(row)-1))
			cands = append(cands, cand{ids, orphan, dist, row[start].layoutIdx})
		}
	}
	if len(cands) > 0 {
		slices.SortStableFunc(cands, func(a, b cand) int {
			return cmp.Or(cmp.Compare(a.orphan, b.orphan), cmp.Compare(a.dist, b.dist), cmp.Compare(a.first, b.first))
		})
		return cands[0].seats
	}
	var singles []modelSeat
	for ri, row := range rows {
		for _, st := range row {
			if st.free && (category == "" || st.category == category) {
				st.row = abs(2*ri-(len(rows)-1)) + abs(2*st.num-(st.rowLen-1)) // reuse row as distance
				singles = append(singles, st)
			}
		}
	}
	if len(singles) < n {
		return nil
	}
	slices.SortStableFunc(singles, func(a, b modelSeat) int {
		return cmp.Or(cmp.Compare(a.row, b.row), cmp.Compare(a.layoutIdx, b.layoutIdx))
	})
	singles = singles[:n]
	slices.SortFunc(singles, func(a, b modelSeat) int { return cmp.Compare(a.layoutIdx, b.layoutIdx) })
	var ids []string
	for _, st := range singles {
		ids = append(ids, st.id)
	}
	return ids
}

// alternatives is the reference suggestion for a conflict over seats.
func (md *model) alternatives(showID string, seats []string, now int64) []string {
	category := ""
	for i, id := range seats {
		var cat string
		for _, row := range md.seatsOf(showID, now) {
			for _, st := range row {
				if st.id == id {
					cat = st.category
				}
			}
		}
		if i == 0 {
			category = cat
		} else if cat != category {
			category = ""
			break
		}
	}
	alt := md.best(showID, len(seats), category, now)
	if alt == nil && category != "" {
		alt = md.best(showID, len(seats), "", now)
	}
	return alt
}

func modelHoldResult(h *ledgerpb.HoldRecord) *ledgerpb.Result {
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, HoldId: h.HoldId, SeatIds: slices.Clone(h.SeatIds),
		ExpiresAtMs: h.ExpiresAtMs, HoldState: h.State, AmountMinor: h.AmountMinor, Currency: h.Currency,
		MaxExpiresAtMs: h.CreatedAtMs + 45*60*1000}
}

func (md *model) close(h *modelHold, state ledgerpb.HoldState, now int64) {
	for _, s := range h.rec.SeatIds {
		delete(md.owner, h.rec.ShowId+"/"+s)
	}
	md.freed[h.rec.ShowId] = true
	h.rec.State = state
	h.rec.ClosedAtMs = now
}

// target finds the hold a confirm or release names, or the rejection.
func (md *model) target(client, show, id, token string, now int64) (*modelHold, *ledgerpb.Result) {
	h := md.holds[id]
	if h == nil || h.rec.ShowId != show {
		return nil, &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_NOT_FOUND}
	}
	if h.rec.ClientId != client {
		return nil, &ledgerpb.Result{Code: ledgerpb.Code_CODE_NOT_HOLD_OWNER}
	}
	if token != HoldToken(nil, id) {
		return nil, &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_TOKEN_INVALID}
	}
	st := h.rec.State
	if st == ledgerpb.HoldState_HOLD_STATE_EXPIRED || st == ledgerpb.HoldState_HOLD_STATE_HELD && now >= h.rec.ExpiresAtMs {
		return nil, &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_EXPIRED, HoldState: ledgerpb.HoldState_HOLD_STATE_EXPIRED}
	}
	return h, nil
}

func (md *model) confirm(client string, c *ledgerpb.ConfirmCmd, now int64) *ledgerpb.Result {
	h, rej := md.target(client, c.ShowId, c.HoldId, c.HoldToken, now)
	if rej != nil {
		return rej
	}
	switch h.rec.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
		if h.rec.PaymentRef == c.PaymentRef {
			return modelHoldResult(h.rec)
		}
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CONFIRMED, HoldState: h.rec.State}
	case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CONFIRMED, HoldState: h.rec.State}
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CANCELLED, HoldState: h.rec.State}
	}
	h.rec.State = ledgerpb.HoldState_HOLD_STATE_CONFIRMED
	h.rec.PaymentRef = c.PaymentRef
	h.rec.ClosedAtMs = now
	return modelHoldResult(h.rec)
}

func (md *model) release(client string, c *ledgerpb.ReleaseCmd, now int64) *ledgerpb.Result {
	h, rej := md.target(client, c.ShowId, c.HoldId, c.HoldToken, now)
	if rej != nil {
		return rej
	}
	switch h.rec.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED, ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CONFIRMED, HoldState: h.rec.State}
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return modelHoldResult(h.rec)
	}
	md.close(h, ledgerpb.HoldState_HOLD_STATE_CANCELLED, now)
	return modelHoldResult(h.rec)
}

func (md *model) extend(client string, c *ledgerpb.ExtendCmd, now int64) *ledgerpb.Result {
	h, rej := md.target(client, c.ShowId, c.HoldId, c.HoldToken, now)
	if rej != nil {
		return rej
	}
	switch h.rec.State {
	case ledgerpb.HoldState_HOLD_STATE_CONFIRMED, ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CONFIRMED, HoldState: h.rec.State}
	case ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_CANCELLED, HoldState: h.rec.State}
	}
	ttl := c.TtlMs
	if ttl == 0 {
		ttl = 300_000
	}
	if want := now + ttl; want > h.rec.ExpiresAtMs {
		h.rec.ExpiresAtMs = min(want, h.rec.CreatedAtMs+45*60*1000)
	}
	return modelHoldResult(h.rec)
}

func (md *model) refund(client string, c *ledgerpb.RefundCmd, now int64) *ledgerpb.Result {
	h, rej := md.target(client, c.ShowId, c.HoldId, c.HoldToken, now)
	if rej != nil {
		return rej
	}
	switch h.rec.State {
	case ledgerpb.HoldState_HOLD_STATE_REFUNDED:
		return modelHoldResult(h.rec)
	case ledgerpb.HoldState_HOLD_STATE_HELD, ledgerpb.HoldState_HOLD_STATE_CANCELLED:
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_HOLD_NOT_CONFIRMED, HoldState: h.rec.State}
	}
	for _, s := range h.rec.SeatIds {
		delete(md.owner, h.rec.ShowId+"/"+s)
	}
	md.freed[h.rec.ShowId] = true
	h.rec.State = ledgerpb.HoldState_HOLD_STATE_REFUNDED
	h.rec.RefundedAtMs, h.rec.RefundReason = now, c.Reason
	return modelHoldResult(h.rec)
}

// expire frees live holds with expires_at <= min(upto, now), oldest first
// (ties by hold id), at most limit; then forgets the requests of every hour
// of log time that ended by now - RequestRetentionMs.
func (md *model) expire(c *ledgerpb.ExpireCmd, now int64) *ledgerpb.Result {
	upto := min(c.UptoMs, now)
	limit := int(c.Limit)
	if limit == 0 || limit > ExpirePerEntryMax {
		limit = ExpirePerEntryDefault
	}
	var due []*modelHold
	for _, h := range md.holds {
		if h.rec.State == ledgerpb.HoldState_HOLD_STATE_HELD && h.rec.ExpiresAtMs <= upto {
			due = append(due, h)
		}
	}
	slices.SortFunc(due, func(a, b *modelHold) int {
		return cmp.Or(cmp.Compare(a.rec.ExpiresAtMs, b.rec.ExpiresAtMs), strings.Compare(a.rec.HoldId, b.rec.HoldId))
	})
	due = due[:min(len(due), limit)]
	for _, h := range due {
		md.close(h, ledgerpb.HoldState_HOLD_STATE_EXPIRED, now)
	}
	if horizon := now - RequestRetentionMs; horizon > 0 {
		for id, r := range md.requests {
			if r.at/requestBucketMs < horizon/requestBucketMs { // its hour ended by the horizon
				delete(md.requests, id)
			}
		}
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Expired: uint32(len(due))}
}

// compareState compares everything a reader can see, plus the number of
// remembered requests.
func (md *model) compareState(m *Machine) error {
	if m.Applied() != md.applied || m.Clock() != md.clock {
		return fmt.Errorf("Applied(), Clock() = %d, %d, want %d, %d", m.Applied(), m.Clock(), md.applied, md.clock)
	}
	v, err := m.View()
	if err != nil {
		return err
	}
	defer v.Close()
	for _, id := range genShows {
		if err := md.compareSeatMap(v, id); err != nil {
			return err
		}
	}
	if err := md.compareHolds(v); err != nil {
		return err
	}
	next, ok, err := v.NextExpiry()
	if err != nil {
		return err
	}
	wantOK, wantNext := false, int64(0)
	for _, h := range md.holds {
		if h.rec.State == ledgerpb.HoldState_HOLD_STATE_HELD && (!wantOK || h.rec.ExpiresAtMs < wantNext) {
			wantOK, wantNext = true, h.rec.ExpiresAtMs
		}
	}
	if ok != wantOK || next != wantNext {
		return fmt.Errorf("NextExpiry() = %d, %v, want %d, %v", next, ok, wantNext, wantOK)
	}
	for _, kind := range []byte{kindRequest} {
		n, err := countKeys(v, kind)
		if err != nil {
			return err
		}
		if n != len(md.requests) {
			return fmt.Errorf("%d keys of kind %#x, want %d remembered requests", n, kind, len(md.requests))
		}
	}
	return nil
}

func (md *model) compareSeatMap(v *View, id string) error {
	sm, err := v.SeatMap(id)
	show := md.shows[id]
	if show == nil {
		if !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("SeatMap(%s) error = %v, want ErrNotFound", id, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("SeatMap(%s): %v", id, err)
	}
	if len(sm.Seats) != len(show.seats) {
		return fmt.Errorf("SeatMap(%s) has %d seats, want %d", id, len(sm.Seats), len(show.seats))
	}
	var counts [4]uint32
	for i, s := range sm.Seats {
		want := ledgerpb.SeatState_FREE
		if hid, ok := md.owner[id+"/"+show.seats[i]]; ok {
			h := md.holds[hid].rec
			switch {
			case h.State == ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
				want = ledgerpb.SeatState_BOOKED
			case md.clock < h.ExpiresAtMs:
				want = ledgerpb.SeatState_HELD
			}
		}
		counts[want]++
		if s.SeatId != show.seats[i] || s.State != want || s.PriceMinor != show.price[s.SeatId] {
			return fmt.Errorf("SeatMap(%s) seat %d = %s %s %d, want %s %s %d", id, i, s.SeatId, s.State, s.PriceMinor,
				show.seats[i], want, show.price[show.seats[i]])
		}
	}
	if sm.Free != counts[ledgerpb.SeatState_FREE] || sm.Held != counts[ledgerpb.SeatState_HELD] || sm.Booked != counts[ledgerpb.SeatState_BOOKED] {
		return fmt.Errorf("SeatMap(%s) counts free/held/booked = %d/%d/%d, want %d/%d/%d", id, sm.Free, sm.Held, sm.Booked,
			counts[ledgerpb.SeatState_FREE], counts[ledgerpb.SeatState_HELD], counts[ledgerpb.SeatState_BOOKED])
	}
	return nil
}

func (md *model) compareHolds(v *View) error {
	stored, err := storedHolds(v)
	if err != nil {
		return err
	}
	if len(stored) != len(md.holds) {
		return fmt.Errorf("%d hold records, want %d", len(stored), len(md.holds))
	}
	for id, h := range md.holds {
		got, err := v.Hold(id)
		if err != nil {
			return fmt.Errorf("Hold(%s): %v", id, err)
		}
		want := proto.Clone(h.rec).(*ledgerpb.HoldRecord)
		if want.State == ledgerpb.HoldState_HOLD_STATE_HELD && md.clock >= want.ExpiresAtMs {
			want.State = ledgerpb.HoldState_HOLD_STATE_EXPIRED
		}
		if !proto.Equal(got, want) {
			return fmt.Errorf("Hold(%s) = %v, want %v", id, got, want)
		}
	}
	return nil
}

func countKeys(v *View, kind byte) (int, error) {
	lo := v.m.key(kind)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Error()
}
