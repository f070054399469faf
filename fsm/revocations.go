package fsm

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Revocation is a booking refunded at Revision: its tickets no longer
// admit.
type Revocation struct {
	Hold     *ledgerpb.HoldRecord
	Revision uint64
}

// Revocations returns up to limit of show's bookings refunded after
// revision after, oldest first, and whether more follow. It reads the
// view's snapshot: the feed of door scanners, who check ticket signatures
// offline and learn here which tickets a refund revoked.
func (v *View) Revocations(show string, after uint64, limit int) ([]Revocation, bool, error) {
	if after == ^uint64(0) {
		return nil, false, nil
	}
	prefix := v.m.revokedPrefix(show)
	lo := binary.BigEndian.AppendUint64(append([]byte(nil), prefix...), after+1)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	var out []Revocation
	for ok := it.First(); ok; ok = it.Next() {
		if len(out) == limit {
			return out, true, it.Error()
		}
		k := it.Key()[len(prefix):]
		if len(k) < 8 {
			return nil, false, fmt.Errorf("fsm: revocation key %x: %w", it.Key(), errBadKey)
		}
		id := string(k[8:])
		h, err := getHold(v.rd(), v.m.holdKey(id))
		if err != nil || h == nil {
			return nil, false, fmt.Errorf("fsm: revocation of show %s names hold %s: %v", show, id, err)
		}
		out = append(out, Revocation{Hold: h, Revision: binary.BigEndian.Uint64(k)})
	}
	return out, false, it.Error()
}
