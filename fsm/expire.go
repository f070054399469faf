package fsm

import (
	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// expire frees the holds with expires_at <= upto, oldest first, at most limit
// of them, and forgets exactly-once records and seat change records older
// than their retention horizons (at most limit of each). upto is capped at the log clock: a leader can only expire holds
// whose time has come by the log's own time (S3).
func (tx *txn) expire(c *ledgerpb.ExpireCmd) *ledgerpb.Result {
	upto := min(c.UptoMs, tx.now)
	limit := int(c.Limit)
	if limit <= 0 || limit > ExpirePerEntryMax {
		limit = ExpirePerEntryDefault
	}
	n := 0
	for ; n < limit; n++ {
		h := tx.m.led.popDue(upto)
		if h == nil {
			break
		}
		assertf(h.ExpiresAtMs <= upto, "expiry queue out of order")
		tx.closeHold(h, ledgerpb.HoldState_HOLD_STATE_EXPIRED)
	}
	tx.pruneRequests(limit)
	tx.pruneEvents(limit)
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK, Expired: uint32(n)}
}

// pruneRequests forgets at most limit exactly-once records older than the
// retention horizon.
func (tx *txn) pruneRequests(limit int) {
	horizon := tx.now - RequestRetentionMs
	if horizon <= 0 {
		return
	}
	var keys [][]byte
	tx.scan(tx.m.key(kindRequestAge), tx.m.key(kindRequestAge, u64(uint64(horizon))), limit, func(k []byte) {
		keys = append(keys, append([]byte(nil), k...))
	})
	for _, k := range keys {
		_, client, request, err := decodeRequestAgeKey(k)
		must(err, "decode request age key")
		tx.del(tx.m.requestKey(client, request))
		tx.del(k)
	}
	if len(keys) < limit {
		// Every record applied before the horizon is gone.
		tx.m.requests.prunedBelow(horizon)
	}
}

// scan calls fn for at most limit keys in [lo, hi) as the batch sees them.
func (tx *txn) scan(lo, hi []byte, limit int, fn func(k []byte)) {
	it, err := tx.b.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	must(err, "open iterator")
	defer it.Close()
	n := 0
	for ok := it.First(); ok && n < limit; ok = it.Next() {
		fn(it.Key())
		n++
	}
	must(it.Error(), "iterate")
}
