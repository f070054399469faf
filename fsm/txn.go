package fsm

// A txn applies entries to the group's overlay (Machine.begin, commit,
// end): here are the records it reads and writes, and the buffers it keeps
// from batch to batch.

import (
	"errors"
	"fmt"
	"hash"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// txn is the state of applying entries to one batch: the index and clock of
// the entry being applied, and its seat changes by show (events.go; empty
// between entries).
type txn struct {
	m *Machine
	// arenaBytes is the overlay's size when the txn began.
	arenaBytes int
	// writes counts the records written (storeWrites).
	writes int
	index  uint64
	now    int64
	// freed names the shows whose seats the current entry freed, for the
	// waiting queue's offers at the end of the entry (queue.go).
	freed map[string]bool
	// freedShows is offerFreed's buffer for freed's shows, in order.
	freedShows []string
	// events are the entry's changes by show (events.go), eventAt the
	// position of each show's in events.
	events  []showChanges
	eventAt map[string]int
	// touched are the shows whose change log grew, with the index, in
	// order: a slice, not a map by show, as nearly every command changes
	// a show of its own.
	touched []showTouch
	// committed is set once b is committed (Machine.end).
	committed bool
	// scratch is reused to encode records (put, set); keyBuf to build
	// the keys of records written (the batch copies both); tokenBuf to
	// compute hold tokens (token.go).
	scratch  []byte
	keyBuf   []byte
	tokenBuf []byte
	// freeBuf holds the free-seat map of a hold's show (holdFreeMap);
	// seatBuf the layout indexes of a hold's named seats (pickSeats).
	freeBuf []bool
	seatBuf []uint16
	// bestBuf holds the best available seats of a hold or its
	// alternatives (txn.bestSeats).
	bestBuf []int
	// hash is the payload hash of the command being applied, rec its
	// request record while it is encoded (applyOne).
	hash [16]byte
	rec  ledgerpb.RequestRecord
	// sha computes hold tokens (holdTokenBytes), shaState holds its
	// state for it to restore.
	sha      hash.Hash
	shaState *[sha256StateLen]byte
	// holdBuf is the record a live hold is encoded from (view).
	holdBuf *ledgerpb.HoldRecord
	// unanswered is set for entries whose results nobody reads
	// (ApplyEntriesUnanswered): a hold's or a booking's result is then
	// built in resultBuf, and an entry's results in results, both reused
	// (each result lives only until its request record is encoded).
	unanswered bool
	resultBuf  *holdResultBuf
	results    []*ledgerpb.Result
}

// begin starts a Pebble batch for one or more entries. The txn is the
// previous one's, reset: its buffers and maps are kept for the next batch,
// so a command does not allocate them again.
func (m *Machine) begin() *txn {
	tx := m.spare
	if tx == nil {
		tx = &txn{}
	}
	m.spare = nil
	m.ov.commit() // what end goes back to if the batch does not commit
	*tx = txn{m: m, arenaBytes: m.ov.bytes(), index: m.Applied(), now: m.Clock(),
		freed: tx.freed, freedShows: tx.freedShows[:0], events: tx.events[:0], eventAt: tx.eventAt, touched: tx.touched[:0],
		scratch: tx.scratch[:0], keyBuf: tx.keyBuf[:0], tokenBuf: tx.tokenBuf[:0], freeBuf: tx.freeBuf[:0], seatBuf: tx.seatBuf[:0], bestBuf: tx.bestBuf[:0], holdBuf: tx.holdBuf, sha: tx.sha, shaState: tx.shaState,
		resultBuf: tx.resultBuf, results: tx.results[:0]}
	clear(tx.freed)
	clear(tx.eventAt)
	clear(tx.touched[:cap(tx.touched)]) // drop the shows' ids
	return tx
}

// end ends tx. A batch that did not commit (apply panicked) is discarded,
// and with it what the ledger learned from it: the overlay drops the
// batch's runs and records, and the ledger is read again from the store,
// where nothing of the batch is.
func (m *Machine) end(tx *txn) {
	if tx.committed {
		m.spare = tx
		return
	}
	m.ov.abort()
	m.reload()
}

// bytes is the size of the records tx wrote.
func (tx *txn) bytes() int { return tx.m.ov.bytes() - tx.arenaBytes }

// set writes a record; the overlay copies key and value.
func (tx *txn) set(key, val []byte) {
	tx.writes++
	tx.m.ov.set(key, val)
}

// del deletes a record.
func (tx *txn) del(key []byte) {
	tx.writes++
	tx.m.ov.del(key)
}

// deleteRange deletes the records in [start, end).
func (tx *txn) deleteRange(start, end []byte) {
	tx.writes++
	tx.m.ov.deleteRange(start, end)
}

// store is the group's state as tx has it: its own writes so far, the
// overlay's and Pebble's. Its reads see the writes made since it was
// opened too, and a Get leaves the pending records unsealed
// (overlay.get), so reads between writes do not make tiny runs.
func (tx *txn) store() reader { return reader{r: tx.m.db, o: tx.m.ov} }

// get reads and decodes a record through the batch; false if absent.
func (tx *txn) get(key []byte, msg proto.Message) bool {
	v, ok := tx.read(key)
	if !ok {
		return false
	}
	if err := proto.Unmarshal(v, msg); err != nil {
		panic(fmt.Sprintf("fsm: decode %T: %v", msg, err)) // formatted only when it fails: get is hot
	}
	return true
}

// read returns a record's encoded value as the batch has it: for the
// records the ledger does not keep (ledger.go). The value is a copy.
func (tx *txn) read(key []byte) ([]byte, bool) {
	tx.m.storeReads++
	v, closer, err := tx.store().Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false
	}
	must(err, "read")
	defer closer.Close()
	return append([]byte(nil), v...), true
}

// checkLedger makes every commit compare the ledger with one loaded from
// the store, readers compare the ledger's seat states with the store's,
// and the request filter's misses be checked against the store (tests turn
// it on; see helpers_test.go).
var checkLedger = false

// checkHoldIDs makes createHold look up each new hold id to prove it was
// never used (tests turn it on; see helpers_test.go).
var checkHoldIDs = false

// put writes a record; the batch copies it, so the encoding reuses one
// buffer.
func (tx *txn) put(key []byte, msg proto.Message) {
	b, err := proto.MarshalOptions{Deterministic: true}.MarshalAppend(tx.scratch[:0], msg)
	must(err, "marshal record")
	tx.set(key, b)
	tx.scratch = b[:0]
}

// putHold writes a hold record, as put does.
func (tx *txn) putHold(key []byte, h *ledgerpb.HoldRecord) {
	b := appendHoldRecord(tx.scratch[:0], h)
	tx.set(key, b)
	tx.scratch = b[:0]
}

// The keys of records tx writes, built in tx.keyBuf: each is valid until
// the next, which is enough for a write (the batch copies it).
func (tx *txn) holdKey(id string) []byte {
	tx.keyBuf = tx.m.appendHoldKey(tx.keyBuf[:0], id)
	return tx.keyBuf
}

func (tx *txn) liveKey(show, hold string) []byte {
	tx.keyBuf = tx.m.appendLiveKey(tx.keyBuf[:0], show, hold)
	return tx.keyBuf
}

func (tx *txn) bookingKey(client string, index uint64, hold string) []byte {
	tx.keyBuf = tx.m.appendBookingKey(tx.keyBuf[:0], client, index, hold)
	return tx.keyBuf
}

func (tx *txn) requestKey(bucket uint64, client, request string) []byte {
	tx.keyBuf = tx.m.appendRequestKey(tx.keyBuf[:0], bucket, client, request)
	return tx.keyBuf
}

// layout returns a show's layout, nil if the show does not exist.
func (tx *txn) layout(id string) *layout {
	if s := tx.m.led.shows[id]; s != nil {
		return s.l
	}
	return nil
}

// endedHold returns a hold that ended as the batch has it, nil if none
// did: the ledger has the live holds and bookings (holdTable.find).
func (tx *txn) endedHold(id string) *ledgerpb.HoldRecord {
	h := &ledgerpb.HoldRecord{}
	if !tx.get(tx.m.holdKey(id), h) {
		return nil
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_HELD || h.State == ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
		violated("hold %s is %s in the store but not in the ledger", h.HoldId, h.State)
	}
	return h
}
