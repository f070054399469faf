package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The waiting queue of a show. A best-available hold that asks to wait and
// finds too few free seats joins the show's line (CODE_QUEUED) instead of
// failing. At the end of every log entry that freed seats of a show
// (release, expiry, refund), the FSM offers them in line order: each
// waiter, oldest first, whose count (and category) fits the seats free now
// gets a hold in its own name for QueueClaimWindowMs; a waiter that does
// not fit does not block a later one that does. An offered hold that is not
// confirmed expires like any hold, and its seats move on to the next waiter.
// Everything is replicated state, so positions survive crashes and leader
// changes.
//
// Policy details: a client has at most one waiting entry per show (asking
// again answers with the same entry); an offer is best available (best.go)
// among the seats free at the end of the entry; seats freed by an entry are
// offered before any later entry can take them, but a command later in the
// same batch as the release may; offers skip the per-client hold limit (the
// waiter asked before it was reached).

// offerPosBase numbers offered holds after every batch position, so their
// ids (h<group>-<index>-<pos>) never collide with client holds.
const offerPosBase = BatchCommandsMax

// queueStat is a show's waiting count and the seats those waiters want.
type queueStat struct{ waiting, seats uint32 }

// queueStat is a show's line totals, from the ledger.
func (tx *txn) queueStat(show string) queueStat {
	s := tx.m.led.shows[show]
	if s == nil {
		violated("queue of missing show %s", show)
	}
	return s.queue
}

func decodeQueueStat(v []byte) queueStat {
	return queueStat{binary.BigEndian.Uint32(v), binary.BigEndian.Uint32(v[4:])}
}

func (tx *txn) putQueueStat(show string, s queueStat) {
	tx.m.led.shows[show].queue = s
	if s.waiting == 0 {
		if s.seats != 0 {
			violated("empty queue of show %s wants %d seats", show, s.seats)
		}
		tx.del(tx.m.queueStatKey(show))
		return
	}
	var b [8]byte
	binary.BigEndian.PutUint32(b[:], s.waiting)
	binary.BigEndian.PutUint32(b[4:], s.seats)
	tx.set(tx.m.queueStatKey(show), b[:])
}

// QueueTotals sums every show's waiting queue in the group: the entries
// waiting and the seats they ask for (the metrics' queue lengths). It walks
// one small record per show that has waiters.
func (v *View) QueueTotals() (waiting, seats uint64, err error) {
	prefix := v.m.key(kindQueueStat)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		val := it.Value()
		if len(val) != 8 {
			return 0, 0, fmt.Errorf("fsm: queue stat %x has %d bytes", it.Key(), len(val))
		}
		waiting += uint64(binary.BigEndian.Uint32(val))
		seats += uint64(binary.BigEndian.Uint32(val[4:]))
	}
	return waiting, seats, it.Error()
}

// queueToken is the secret of a queue entry: the show's token key over a
// domain-separated entry id, so it can never equal a hold token.
func queueToken(key []byte, entryID string) string { return HoldToken(key, "queue:"+entryID) }

// joinQueue puts client in show's line for c.Count seats.
func (tx *txn) joinQueue(client string, c *ledgerpb.HoldCmd, pos int) *ledgerpb.Result {
	if v, closer, err := tx.store().Get(tx.m.queueOwnerKey(c.ShowId, client)); err == nil {
		id := string(v)
		closer.Close()
		rec := tx.queueEntry(id)
		if !(rec != nil && rec.State == ledgerpb.QueueState_QUEUE_STATE_WAITING) {
			violated("owner index names entry %s that is not waiting", id)
		}
		return tx.queuedResult(rec, 0, 0, false)
	} else if !errors.Is(err, pebble.ErrNotFound) {
		must(err, "read queue owner")
	}
	st := tx.queueStat(c.ShowId)
	if st.waiting >= QueueLenMax {
		return reject(ledgerpb.Code_CODE_QUEUE_FULL, "the queue of show %s is full (%d waiters)", c.ShowId, QueueLenMax)
	}
	rec := &ledgerpb.QueueEntryRecord{
		EntryId: fmt.Sprintf("q%d-%d-%d", tx.m.group, tx.index, pos), ShowId: c.ShowId, ClientId: client,
		Count: c.Count, Category: c.Category, JoinedAtMs: tx.now, State: ledgerpb.QueueState_QUEUE_STATE_WAITING,
		JoinIndex: tx.index, JoinPos: uint32(pos),
	}
	if tx.queueEntry(rec.EntryId) != nil {
		violated("queue entry id %s reused", rec.EntryId)
	}
	tx.put(tx.m.queueEntryKey(rec.EntryId), rec)
	tx.set(tx.m.queueLineKey(c.ShowId, rec.JoinIndex, rec.JoinPos), []byte(rec.EntryId))
	tx.set(tx.m.queueOwnerKey(c.ShowId, client), []byte(rec.EntryId))
	tx.putQueueStat(c.ShowId, queueStat{st.waiting + 1, st.seats + c.Count})
	return tx.queuedResult(rec, st.waiting+1, st.seats, true)
}

// queuedResult answers a join. A new entry knows its place from the stat;
// an existing one is placed by walking the line.
func (tx *txn) queuedResult(rec *ledgerpb.QueueEntryRecord, position, ahead uint32, known bool) *ledgerpb.Result {
	if !known {
		position, ahead = tx.placeInLine(rec)
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_QUEUED, QueueEntryId: rec.EntryId, QueuePosition: position,
		SeatsAhead: ahead, QueueToken: queueToken(tx.showTokenKey(rec.ShowId), rec.EntryId),
		Message: fmt.Sprintf("show %s has fewer than %d free seats: waiting at position %d", rec.ShowId, rec.Count, position)}
}

// placeInLine walks a waiting entry's line up to it.
func (tx *txn) placeInLine(rec *ledgerpb.QueueEntryRecord) (position, ahead uint32) {
	position, ahead, err := tx.m.placeInLine(tx.store(), rec)
	must(err, "walk queue line")
	return position, ahead
}

func (tx *txn) queueEntry(id string) *ledgerpb.QueueEntryRecord {
	rec := &ledgerpb.QueueEntryRecord{}
	if !tx.get(tx.m.queueEntryKey(id), rec) {
		return nil
	}
	return rec
}

// leaveWaiting takes a waiting entry out of its line: state becomes state
// (LEFT or OFFERED).
func (tx *txn) leaveWaiting(rec *ledgerpb.QueueEntryRecord, state ledgerpb.QueueState) {
	if rec.State != ledgerpb.QueueState_QUEUE_STATE_WAITING {
		violated("entry %s leaves the line in state %s", rec.EntryId, rec.State)
	}
	tx.del(tx.m.queueLineKey(rec.ShowId, rec.JoinIndex, rec.JoinPos))
	tx.del(tx.m.queueOwnerKey(rec.ShowId, rec.ClientId))
	st := tx.queueStat(rec.ShowId)
	if !(st.waiting >= 1 && st.seats >= rec.Count) {
		violated("queue stat of show %s (%d waiting, %d seats) lacks entry %s", rec.ShowId, st.waiting, st.seats, rec.EntryId)
	}
	tx.putQueueStat(rec.ShowId, queueStat{st.waiting - 1, st.seats - rec.Count})
	rec.State = state
	tx.put(tx.m.queueEntryKey(rec.EntryId), rec)
}

// leaveQueue takes a waiter out of the line. Leaving again succeeds again;
// an entry that was offered seats cannot leave (release the hold instead).
func (tx *txn) leaveQueue(client string, c *ledgerpb.LeaveQueueCmd) *ledgerpb.Result {
	rec := tx.queueEntry(c.EntryId)
	if rec == nil || rec.ShowId != c.ShowId {
		return reject(ledgerpb.Code_CODE_NOT_QUEUED, "show %s has no queue entry %s", c.ShowId, c.EntryId)
	}
	if rec.ClientId != client {
		return reject(ledgerpb.Code_CODE_NOT_HOLD_OWNER, "queue entry %s belongs to another client", c.EntryId)
	}
	if queueToken(tx.showTokenKey(c.ShowId), rec.EntryId) != c.QueueToken {
		return reject(ledgerpb.Code_CODE_QUEUE_TOKEN_INVALID, "queue_token is not the token of entry %s", c.EntryId)
	}
	switch rec.State {
	case ledgerpb.QueueState_QUEUE_STATE_OFFERED:
		return reject(ledgerpb.Code_CODE_NOT_QUEUED, "entry %s was offered hold %s: release that hold instead", rec.EntryId, rec.HoldId)
	case ledgerpb.QueueState_QUEUE_STATE_WAITING:
		tx.leaveWaiting(rec, ledgerpb.QueueState_QUEUE_STATE_LEFT)
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, QueueEntryId: rec.EntryId}
}

// seatsFreed notes that show has seats free again, for offerFreed.
func (tx *txn) seatsFreed(show string) {
	if tx.freed == nil {
		tx.freed = map[string]bool{}
	}
	tx.freed[show] = true
}

// offerFreed offers the seats freed by the entry just applied to the
// waiters of each show, shows in sorted order (no map-order dependence).
func (tx *txn) offerFreed() {
	if len(tx.freed) == 0 {
		return
	}
	shows := tx.freedShows[:0]
	for s := range tx.freed {
		shows = append(shows, s)
	}
	slices.Sort(shows)
	tx.freedShows = shows
	k := 0
	for _, s := range shows {
		k = tx.offer(s, k)
	}
	// Kept for the next entry, empty: shows freed by the offers
	// themselves wait for a later entry, as they always did.
	clear(tx.freed)
}

// offer walks show's line and holds seats for each waiter that fits. k
// numbers the entry's offers so far; it returns the new count.
func (tx *txn) offer(show string, k int) int {
	if tx.queueStat(show).waiting == 0 {
		return k
	}
	l := tx.layout(show)
	if l == nil {
		violated("queue of missing show %s", show)
	}
	free := tx.freeSeatMap(show, l, nil)
	var ids []string
	prefix := tx.m.queueLinePrefix(show)
	tx.scan(prefix, prefixEnd(prefix), QueueScanPerEntryMax, func(k []byte) {
		ids = append(ids, string(k)) // keys are copied: values are read below
	})
	for _, lineKey := range ids {
		if !slices.Contains(free, true) {
			break
		}
		v, closer, err := tx.store().Get([]byte(lineKey))
		must(err, "read queue line")
		rec := tx.queueEntry(string(v))
		closer.Close()
		if !(rec != nil && rec.State == ledgerpb.QueueState_QUEUE_STATE_WAITING) {
			violated("queue line of show %s names an entry that is not waiting", show)
		}
		best := bestSeats(nil, l, free, int(rec.Count), rec.Category)
		if best == nil {
			continue // does not fit now: a later waiter may
		}
		seatIDs := make([]string, len(best))
		idx := make([]uint16, len(best))
		for i, n := range best {
			seatIDs[i], idx[i] = l.seatID(n), uint16(n)
			free[n] = false
		}
		taken, stale := tx.takenSeats(show, seatIDs, idx)
		if len(taken) != 0 {
			violated("S1: an offer to %s picked taken seats %v of show %s", rec.EntryId, taken, show)
		}
		for _, r := range stale {
			tx.closeHold(r, ledgerpb.HoldState_HOLD_STATE_EXPIRED, false)
		}
		r := tx.createHold(rec.ClientId, &ledgerpb.HoldCmd{ShowId: show, TtlMs: QueueClaimWindowMs}, l, seatIDs, idx, offerPosBase+k)
		k++
		tx.leaveWaiting(rec, ledgerpb.QueueState_QUEUE_STATE_OFFERED)
		rec.HoldId, rec.OfferedAtMs = r.HoldId, tx.now
		tx.put(tx.m.queueEntryKey(rec.EntryId), rec)
		tx.offerMade(show, rec.EntryId, r.HoldId)
	}
	return k
}

// ErrBadToken is returned by reads that present another entry's token.
var ErrBadToken = errors.New("fsm: token does not match")

// QueueView is a waiter's entry as a read sees it.
type QueueView struct {
	Entry *ledgerpb.QueueEntryRecord
	// Position (1 = next) and the seats asked for ahead, while WAITING.
	Position, SeatsAhead uint32
	// The offered hold and its token, once OFFERED.
	Hold      *ledgerpb.HoldRecord
	HoldToken string
}

// QueueEntry reads a show's queue entry for the holder of its token.
func (v *View) QueueEntry(showID, entryID, token string) (*QueueView, error) {
	rec := &ledgerpb.QueueEntryRecord{}
	ok, err := v.get(v.m.queueEntryKey(entryID), rec)
	if err != nil {
		return nil, fmt.Errorf("fsm: read queue entry %s: %w", entryID, err)
	}
	if !ok || rec.ShowId != showID {
		return nil, ErrNotFound
	}
	key, err := v.showTokenKey(showID)
	if err != nil {
		return nil, err
	}
	if queueToken(key, entryID) != token {
		return nil, ErrBadToken
	}
	qv := &QueueView{Entry: rec}
	switch rec.State {
	case ledgerpb.QueueState_QUEUE_STATE_WAITING:
		qv.Position, qv.SeatsAhead, err = v.placeInLine(rec)
	case ledgerpb.QueueState_QUEUE_STATE_OFFERED:
		qv.Hold, err = v.Hold(rec.HoldId)
		qv.HoldToken = HoldToken(key, rec.HoldId)
	}
	if err != nil {
		return nil, err
	}
	return qv, nil
}

func (v *View) showTokenKey(show string) ([]byte, error) {
	b, closer, err := v.snapGet(v.m.showTokenKey(show))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("fsm: read token key of show %s: %w", show, err)
	}
	defer closer.Close()
	return append([]byte(nil), b...), nil
}

// placeInLine walks a waiting entry's line up to it, in the view.
func (v *View) placeInLine(rec *ledgerpb.QueueEntryRecord) (position, ahead uint32, err error) {
	s, err := v.snapshot()
	if err != nil {
		return 0, 0, err
	}
	return v.m.placeInLine(s, rec)
}

// placeInLine counts the waiters ahead of rec and the seats they want, as
// r (the apply batch or a read snapshot) sees the line.
func (m *Machine) placeInLine(r reader, rec *ledgerpb.QueueEntryRecord) (position, ahead uint32, err error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: m.queueLinePrefix(rec.ShowId),
		UpperBound: m.queueLineKey(rec.ShowId, rec.JoinIndex, rec.JoinPos)})
	if err != nil {
		return 0, 0, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		b, closer, err := r.Get(m.queueEntryKey(string(it.Value())))
		if err != nil {
			return 0, 0, fmt.Errorf("fsm: queue line names entry %s: %w", it.Value(), err)
		}
		e := &ledgerpb.QueueEntryRecord{}
		err = proto.Unmarshal(b, e)
		closer.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("fsm: decode queue entry %s: %w", it.Value(), err)
		}
		position++
		ahead += e.Count
	}
	return position + 1, ahead, it.Error()
}
