package fsm

import (
	"bytes"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// ShowLastChange returns the revision of show's newest change record at or
// below the view's index (doc.go, "Change log"), 0 when the log holds none:
// the show did not change since the floor, or never. It reads the
// replicated change log, so every replica answers alike at one index; a
// seat map read with it tells a watcher that nothing of the show changed
// between the two revisions (watch's relay feeds lean on this).
//
// A record it returns lies above the floor (pruning drops whole buckets),
// so a reader from that revision on is never told ErrEventsPruned by this
// view. It costs a seek per retained bucket, newest first, until one holds
// a record of the show.
func (v *View) ShowLastChange(show string) (uint64, error) {
	buckets, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.eventBucketKey(0), UpperBound: prefixEnd(v.m.appendKind(nil, kindEventBucket))})
	if err != nil {
		return 0, err
	}
	defer buckets.Close()
	records, err := v.snapIter(&pebble.IterOptions{LowerBound: v.m.eventKey(0, "", 0), UpperBound: prefixEnd(v.m.appendKind(nil, kindEvent))})
	if err != nil {
		return 0, err
	}
	defer records.Close()
	for ok := buckets.Last(); ok; ok = buckets.Prev() {
		bucket, err := decodeEventBucketKey(buckets.Key())
		if err != nil {
			return 0, fmt.Errorf("fsm: change bucket key %x: %w", buckets.Key(), err)
		}
		// Bounded by the view's index, which its snapshot holds no record
		// above anyway.
		prefix := v.m.eventShowPrefix(bucket, show)
		if !records.SeekLT(v.m.eventKey(bucket, show, v.applied+1)) || !bytes.HasPrefix(records.Key(), prefix) {
			if err := records.Error(); err != nil {
				return 0, err
			}
			continue // no record of the show in this bucket
		}
		_, _, rev, err := decodeEventKey(records.Key())
		if err != nil {
			return 0, fmt.Errorf("fsm: change record key %x: %w", records.Key(), err)
		}
		return rev, nil
	}
	return 0, buckets.Error()
}
