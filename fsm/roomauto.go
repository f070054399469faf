package fsm

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Auto-open: an operator arms a show's room (SetRoom with
// auto_open_arrivals_per_second) to open by itself when a rush begins.
// While the room is closed, every hold in the show that gets as far as the
// admission check counts as an arrival in its second of log time; the
// arrival that brings a second's count to the threshold opens the room at
// the armed rate, and is itself the first hold to need admission. The
// count lives in the arming record, written with each arrival, so a
// replica that restarts counts on where it stopped and every replica opens
// the room at the same entry. Only armed shows pay for the count.
//
// Memory: one record per armed show.

// kindRoomAuto is the keyspace of the armings: show_id -> RoomAutoRecord.
const kindRoomAuto byte = 0x1E

func (m *Machine) roomAutoKey(show string) []byte { return m.key(kindRoomAuto, []byte(show)) }

// arm sets show's arming as c asks: armed at c's threshold and rate, or
// disarmed at 0. Its count starts again.
func (tx *txn) arm(c *ledgerpb.SetRoomCmd, ttl int64) *ledgerpb.RoomAutoRecord {
	led := &tx.m.led
	if c.AutoOpenArrivalsPerSecond == 0 {
		if led.roomAuto[c.ShowId] != nil {
			delete(led.roomAuto, c.ShowId)
			tx.del(tx.m.roomAutoKey(c.ShowId))
		}
		return nil
	}
	a := &ledgerpb.RoomAutoRecord{ShowId: c.ShowId, ArrivalsPerSecond: c.AutoOpenArrivalsPerSecond,
		AdmitPerSecond: c.AdmitPerSecond, AdmissionTtlMs: ttl}
	if led.roomAuto == nil {
		led.roomAuto = map[string]*ledgerpb.RoomAutoRecord{}
	}
	led.roomAuto[c.ShowId] = a
	tx.put(tx.m.roomAutoKey(c.ShowId), a)
	return cloneOf(a)
}

// arrival counts a hold in show, whose room is closed, against the show's
// arming, and opens the room when the hold reaches the threshold; it
// returns the room it opened, nil when it opened none.
func (tx *txn) arrival(show string) *room {
	a := tx.m.led.roomAuto[show]
	if a == nil {
		return nil
	}
	if sec := tx.now / 1000; a.Second != sec {
		a.Second, a.Arrivals = sec, 0
	}
	a.Arrivals++
	if a.Arrivals < a.ArrivalsPerSecond {
		tx.put(tx.m.roomAutoKey(show), a)
		return nil
	}
	a.Second, a.Arrivals = 0, 0
	tx.put(tx.m.roomAutoKey(show), a)
	return tx.openRoom(show, a.AdmitPerSecond, a.AdmissionTtlMs)
}

// openRoom opens show's room at rate (or sets the rate of the open one)
// and tells the show's watchers.
func (tx *txn) openRoom(show string, rate uint32, ttl int64) *room {
	r := tx.room(show)
	if r == nil {
		r = newRoom(&ledgerpb.RoomRecord{ShowId: show, OpenedAtMs: tx.now, CreditAtMs: tx.now})
		if tx.m.led.rooms == nil {
			tx.m.led.rooms = map[string]*room{}
		}
		tx.m.led.rooms[show] = r
	}
	r.rec.AdmitPerSecond, r.rec.AdmissionTtlMs = rate, ttl
	tx.putRoom(r)
	tx.roomChanged(show, r)
	return r
}

// loadRoomAuto reads the armings.
func (m *Machine) loadRoomAuto(r reader, led *ledger) error {
	return scanPrefix(r, m.key(kindRoomAuto), func(k, v []byte) error {
		show := string(k[groupPrefixLen+1:])
		a := &ledgerpb.RoomAutoRecord{}
		if err := proto.Unmarshal(v, a); err != nil {
			return fmt.Errorf("decode auto-open of show %s: %w", show, err)
		}
		if led.shows[show] == nil || a.ShowId != show {
			return fmt.Errorf("auto-open %q of show %s, show known %t", a.ShowId, show, led.shows[show] != nil)
		}
		if led.roomAuto == nil {
			led.roomAuto = map[string]*ledgerpb.RoomAutoRecord{}
		}
		led.roomAuto[show] = a
		return nil
	})
}

// diffRoomAuto describes how two ledgers' armings differ, "" when alike.
func (led *ledger) diffRoomAuto(o *ledger) string {
	if len(led.roomAuto) != len(o.roomAuto) {
		return fmt.Sprintf("%d armed rooms, against %d", len(led.roomAuto), len(o.roomAuto))
	}
	for show, a := range led.roomAuto {
		if !proto.Equal(a, o.roomAuto[show]) {
			return fmt.Sprintf("the auto-open of show %s differs", show)
		}
	}
	return ""
}
