package fsm

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// expire frees the holds with expires_at <= upto, oldest first, at most limit
// of them, forgets the hours of exactly-once records that ended before
// their horizon (requests.go), and at most limit seat change records older
// than theirs. upto is capped at the log clock: a leader can only expire holds
// whose time has come by the log's own time (S3).
func (tx *txn) expire(c *ledgerpb.ExpireCmd) *ledgerpb.Result {
	upto := min(c.UptoMs, tx.now)
	limit := int(c.Limit)
	if limit <= 0 || limit > ExpirePerEntryMax {
		limit = ExpirePerEntryDefault
	}
	n := 0
	for ; n < limit; n++ {
		r := tx.m.led.firstDue(upto)
		if r == 0 {
			break
		}
		if tx.m.led.holds.at(r).expiresAt > upto {
			violated("expiry queue out of order")
		}
		tx.closeHold(r, ledgerpb.HoldState_HOLD_STATE_EXPIRED, false)
	}
	tx.pruneRequests()
	tx.pruneEvents()
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Expired: uint32(n)}
}

// scan calls fn for at most limit keys in [lo, hi) as the batch sees them.
func (tx *txn) scan(lo, hi []byte, limit int, fn func(k []byte)) {
	it, err := tx.store().NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	must(err, "open iterator")
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		fn(it.Key())
		n++
	}
	must(it.Error(), "iterate")
}
