package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// KindUsage is what one kind of record takes in a node's store, over
// every group: the records, and the bytes of their keys and values as
// written (before Pebble's compression).
type KindUsage struct {
	Kind       string
	Records    int64
	KeyBytes   int64
	ValueBytes int64
}

// kindNames names the record kinds for StoreUsage.
var kindNames = map[byte]string{
	kindMeta: "meta", kindShow: "show", kindHold: "ended hold", kindLiveHold: "live hold or booking",
	kindRequest: "request record", kindShowKey: "show token key", kindEvent: "seat change",
	kindEventBucket: "change bucket", kindEventFloor: "change floor", kindQueueEntry: "queue entry",
	kindQueueLine: "queue line", kindQueueOwner: "queue owner", kindQueueStat: "queue totals",
	kindBooking: "client's booking", kindRevoked: "refunded booking", kindRoom: "waiting room",
	kindRoomEntry: "waiting-room entry", kindEventRev: "change by revision", kindWebhookCursor: "webhook cursor",
	kindRoomAuto: "waiting room armed", kindCity: "city", kindCinema: "cinema", kindMovie: "movie",
	kindListing: "listing", kindCityCinema: "city's cinema", kindCinemaShow: "cinema's show",
	kindCityShow: "city's show", kindShowTime: "show by time", kindCityMovie: "city's movie",
	kindCityMovieCine: "city's movie's cinema", kindWebhook: "webhook", kindNode: "node",
}

// StoreUsage reads a node's closed store at dir (read-only) and tallies its
// records by kind, in kind order: what fills a node's state/ directory
// (docs/DEPLOY.md, "Sizing the data disk"). It reads every record.
func StoreUsage(dir string) ([]KindUsage, error) {
	db, err := pebble.Open(dir, &pebble.Options{ReadOnly: true, Logger: quietLogger{}})
	if err != nil {
		return nil, fmt.Errorf("fsm: open store at %s: %w", dir, err)
	}
	defer db.Close()
	it, err := db.NewIter(nil)
	if err != nil {
		return nil, fmt.Errorf("fsm: store usage: %w", err)
	}
	var byKind [256]KindUsage
	for ok := it.First(); ok; ok = it.Next() {
		k := it.Key()
		kind := byte(0)
		if len(k) > groupPrefixLen && k[0] == 'G' {
			kind = k[groupPrefixLen]
		}
		u := &byKind[kind]
		u.Records++
		u.KeyBytes += int64(len(k))
		u.ValueBytes += int64(len(it.Value()))
	}
	if err := it.Close(); err != nil {
		return nil, fmt.Errorf("fsm: store usage: %w", err)
	}
	var out []KindUsage
	for kind, u := range byKind {
		if u.Records == 0 {
			continue
		}
		u.Kind = kindNames[byte(kind)]
		if u.Kind == "" {
			u.Kind = fmt.Sprintf("kind 0x%02x", kind)
		}
		out = append(out, u)
	}
	return out, nil
}
