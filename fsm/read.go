package fsm

import (
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// ErrNotFound is returned by reads of a show or hold that does not exist.
var ErrNotFound = errors.New("fsm: not found")

// View is a consistent read-only view of a group's state at one applied
// index. Close it when done.
type View struct {
	m       *Machine
	snap    *pebble.Snapshot
	applied uint64
	clock   int64
}

// View opens a point-in-time view. Reads never block apply.
func (m *Machine) View() (*View, error) {
	snap := m.db.NewSnapshot()
	v := &View{m: m, snap: snap}
	b, closer, err := snap.Get(m.metaKey())
	switch {
	case errors.Is(err, pebble.ErrNotFound):
		return v, nil
	case err != nil:
		snap.Close()
		return nil, fmt.Errorf("fsm: read meta: %w", err)
	}
	defer closer.Close()
	v.applied, v.clock, err = decodeMeta(b)
	if err != nil {
		snap.Close()
		return nil, err
	}
	return v, nil
}

// Close releases the view's snapshot.
func (v *View) Close() error { return v.snap.Close() }

// Applied is the raft index the view reflects.
func (v *View) Applied() uint64 { return v.applied }

// Clock is the log clock at the view's index.
func (v *View) Clock() int64 { return v.clock }

func (v *View) get(key []byte, msg proto.Message) (bool, error) {
	b, closer, err := v.snap.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closer.Close()
	return true, proto.Unmarshal(b, msg)
}

// Hold returns a hold record. A hold still HELD whose expiry has passed by
// the view's clock is reported EXPIRED: that is what a confirm would find.
func (v *View) Hold(id string) (*ledgerpb.HoldRecord, error) {
	h := &ledgerpb.HoldRecord{}
	ok, err := v.get(v.m.holdKey(id), h)
	if err != nil {
		return nil, fmt.Errorf("fsm: read hold %s: %w", id, err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	if h.State == ledgerpb.HoldState_HOLD_STATE_HELD && v.clock >= h.ExpiresAtMs {
		h.State = ledgerpb.HoldState_HOLD_STATE_EXPIRED
	}
	return h, nil
}

// SeatMap returns every seat of a show in layout order with its state. Seats
// of holds expired by the view's clock read FREE, as a hold would find them.
func (v *View) SeatMap(showID string) (*ledgerpb.SeatMap, error) {
	show := &ledgerpb.Show{}
	ok, err := v.get(v.m.showKey(showID), show)
	if err != nil {
		return nil, fmt.Errorf("fsm: read show %s: %w", showID, err)
	}
	if !ok {
		return nil, ErrNotFound
	}
	l := newLayout(show)
	sm := &ledgerpb.SeatMap{ShowId: show.ShowId, Title: show.Title, Categories: show.Categories,
		Seats: make([]*ledgerpb.Seat, 0, l.total), Revision: v.applied}
	for i, r := range show.Rows {
		for n := 1; n <= int(r.Seats); n++ {
			sm.Seats = append(sm.Seats, &ledgerpb.Seat{SeatId: fmt.Sprintf("%s%d", r.Name, n), Row: r.Name,
				Number: uint32(n), Category: r.Category, PriceMinor: l.price(show.Rows[i]), State: ledgerpb.SeatState_FREE})
		}
	}
	if err := v.overlaySeats(showID, sm); err != nil {
		return nil, err
	}
	for _, s := range sm.Seats {
		switch s.State {
		case ledgerpb.SeatState_FREE:
			sm.Free++
		case ledgerpb.SeatState_HELD:
			sm.Held++
		case ledgerpb.SeatState_BOOKED:
			sm.Booked++
		}
	}
	return sm, nil
}

// overlaySeats applies the stored seat records (held or booked) to sm.
func (v *View) overlaySeats(showID string, sm *ledgerpb.SeatMap) error {
	prefix := v.m.seatPrefix(showID)
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	expired := map[string]bool{}
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		idx := int(k[len(k)-2])<<8 | int(k[len(k)-1])
		if idx >= len(sm.Seats) {
			return fmt.Errorf("fsm: seat index %d beyond show %s", idx, showID)
		}
		rec := &ledgerpb.SeatRecord{}
		if err := proto.Unmarshal(it.Value(), rec); err != nil {
			return fmt.Errorf("fsm: decode seat record: %w", err)
		}
		if rec.State == ledgerpb.SeatState_HELD {
			exp, seen := expired[rec.HoldId]
			if !seen {
				h, err := v.Hold(rec.HoldId)
				if err != nil {
					return err
				}
				exp = h.State == ledgerpb.HoldState_HOLD_STATE_EXPIRED
				expired[rec.HoldId] = exp
			}
			if exp {
				continue
			}
		}
		sm.Seats[idx].State = rec.State
	}
	return it.Error()
}

// NextExpiry returns the earliest expires_at among live holds.
func (v *View) NextExpiry() (int64, bool, error) {
	lo := v.m.key(kindExpiry)
	it, err := v.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
	if err != nil {
		return 0, false, err
	}
	defer it.Close()
	if !it.First() {
		return 0, false, it.Error()
	}
	at, _, err := decodeExpiryKey(it.Key())
	return at, err == nil, err
}

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil
}
