package fsm

// The node's Pebble store, which holds every group's state: how it is
// opened, and how a group's records leave it.

import (
	"errors"
	"fmt"
	"log"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
)

// OpenDB opens the node's Pebble database that holds every group's state.
func OpenDB(dir string) (*pebble.DB, error) {
	cache := pebble.NewCache(blockCacheBytes)
	defer cache.Unref() // the DB holds its own reference
	opts := &pebble.Options{
		Cache: cache,
		// No WAL: the raft log is the write-ahead log. A group's state
		// reaches Pebble only as checkpoints' ingested tables, which
		// are durable once ingested: a crash leaves each group at its
		// last checkpoint, at or past raft's last snapshot, and raft
		// replays the rest (checkpoint.go). The other writes that must
		// last (Restore's ingestion, DropGroup, ResetNodes) flush
		// themselves, which also keeps the group's keys out of the
		// memtables that a checkpoint's table must not overlap.
		DisableWAL:         true,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{},
		// Larger memtables than the 4 MiB default flush less often, so
		// less flushing and compaction runs behind the write-behind
		// (docs/PERFORMANCE.md). Pebble grows them from 256 KiB on demand,
		// so an idle node does not pay for them.
		MemTableSize: memTableBytes,
		// Compactions from level 0 wait for more checkpoint tables
		// (l0CompactionSublevels) than Pebble's 4: each checkpoint's
		// table spans its group's keys, so each such compaction rewrites
		// the group's slice of the base level, and more input per
		// compaction rewrites it less often (docs/PERFORMANCE.md).
		L0CompactionThreshold: l0CompactionSublevels,
		L0StopWritesThreshold: 4 * l0CompactionSublevels,
	}
	// Apply reads the store only for a request id the request filter
	// cannot rule out, or a hold that ended: most such reads find nothing,
	// and bloom filters answer those without reading blocks. Set on L0;
	// later levels inherit it.
	opts.Levels[0].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, fmt.Errorf("fsm: open pebble at %s: %w", dir, err)
	}
	return db, nil
}

// bloomBitsPerKey sizes the bloom filters of the store's tables (about 1 %
// false positives).
const bloomBitsPerKey = 10

// blockCacheBytes is the node's Pebble block cache, shared by all groups.
// The ledger and seat maps are read from memory; Pebble serves loads,
// snapshots, the change log, bookings and the catalog, so a small cache
// does.
const blockCacheBytes = 32 << 20

// memTableBytes is the size of one Pebble memtable (at most two are full
// at once before writes stall).
const memTableBytes = 32 << 20

// l0CompactionSublevels is how many sublevels level 0 gathers before it
// is compacted; ingesting stops at four times as many.
const l0CompactionSublevels = 16

// quietLogger drops Pebble's informational chatter but keeps its errors.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any) {}

func (quietLogger) Errorf(format string, args ...any) {
	log.Printf("pebble: "+format, args...)
}

func (quietLogger) Fatalf(format string, args ...any) {
	log.Fatalf("pebble: "+format, args...)
}

// DropGroup deletes every record of a group from db (flushed), for a
// replica that leaves the group or joins it afresh. No Machine of the group
// may be in use.
func DropGroup(db *pebble.DB, group uint32) error {
	p := groupPrefix(group)
	if err := db.DeleteRange(p, prefixEnd(p), pebble.NoSync); err != nil {
		return fmt.Errorf("fsm: drop group %d: %w", group, err)
	}
	if err := db.Flush(); err != nil {
		return fmt.Errorf("fsm: drop group %d: %w", group, err)
	}
	return nil
}

// CloseDB flushes the store and closes it. The groups' state is in it as
// far as their last checkpoints (Machine.Checkpoint, which a closing node
// calls first); raft replays the rest.
func CloseDB(db *pebble.DB) error {
	return errors.Join(db.Flush(), db.Close())
}
