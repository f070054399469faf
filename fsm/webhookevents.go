package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The events webhooks and Kafka deliver (webhook.go): each hold's steps,
// written into its show's change record with the seat changes, and the
// group-wide read of the change log in revision order.

// ShowEvent is one show's change record in a group-wide read.
type ShowEvent struct {
	ShowID string
	SeatEvent
}

// GroupEvents returns the group's change records after the cursor, every
// show's, in revision order: whole entries, at least one and up to about
// limit records. gap reports that records after the cursor were pruned
// before they were read (a sink behind by more than EventRetentionMs); the
// read then starts at the oldest record kept.
//
// It walks the revision records (eventRevKey), one per entry, which sort by
// bucket of log time and then revision; the clock never goes backwards, so
// that is revision order, and the cursor's time names the bucket its
// revision is in.
func (v *View) GroupEvents(after *ledgerpb.WebhookCursor, limit int) (out []ShowEvent, gap bool, err error) {
	floor, err := v.EventFloor()
	if err != nil {
		return nil, false, err
	}
	gap = after.GetRevision() > 0 && after.GetRevision() < floor
	lo := v.m.eventRevKey(eventBucket(after.GetAppliedAtMs()), after.GetRevision()+1)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(v.m.appendKind(nil, kindEventRev))})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		bucket, rev, err := decodeEventRevKey(it.Key())
		if err != nil {
			return nil, false, fmt.Errorf("fsm: change record revision key %x: %w", it.Key(), err)
		}
		if rev <= after.GetRevision() {
			continue
		}
		if rev > v.applied || len(out) >= limit {
			break // whole entries only, so that a cursor never splits one
		}
		shows, err := decodeEventRevShows(it.Value())
		if err != nil {
			return nil, false, fmt.Errorf("fsm: change record revision %d: %w", rev, err)
		}
		for _, show := range shows {
			ev, err := v.eventAt(bucket, show, rev)
			if err != nil {
				return nil, false, err
			}
			out = append(out, ShowEvent{ShowID: show, SeatEvent: ev})
		}
	}
	return out, gap, it.Error()
}

// eventAt reads one show's change record at rev in bucket.
func (v *View) eventAt(bucket uint64, show string, rev uint64) (SeatEvent, error) {
	b, closer, err := v.snapGet(v.m.eventKey(bucket, show, rev))
	if err != nil {
		return SeatEvent{}, fmt.Errorf("fsm: change record of show %s at %d named by the revision index: %w", show, rev, err)
	}
	defer closer.Close()
	return decodeSeatEvent(show, rev, b)
}

// ---- hold lifecycle in the change log ----

// Field numbers of SeatEventRecord.hold_changes and WebhookHoldChange.
const (
	eventHoldChangesField protowire.Number = 4
	hcTypeField           protowire.Number = 1
	hcHoldField           protowire.Number = 2
	hcSeatField           protowire.Number = 3
	hcClientField         protowire.Number = 4
	hcAmountField         protowire.Number = 5
	hcCurrencyField       protowire.Number = 6
	hcPaymentField        protowire.Number = 7
)

// holdChanged records that h took step t in the entry being applied. Each
// caller reports the step's seat changes first, so the step follows them
// in the show's change list (flushEvents writes it as the record's fields 2
// and 4, interleaved: a repeated field may be split, and the order the
// entry took its steps is kept). Encoded by hand, for the same reason as
// seatChanged: no buffer or map of its own on the hold path. (A fault
// build that skips the seat check may close a hold whose seats another
// took: then the step is the show's only change.)
func (tx *txn) holdChanged(h *ledgerpb.HoldRecord, t ledgerpb.WebhookEventType) {
	sc := tx.changesOf(h.ShowId)
	sc.changes = appendHoldChange(sc.changes, h, t)
}

// The waiting room's admission, when it exists, is a step that changes no
// seat: give it a field of its own in SeatEventRecord (not hold_changes),
// let flushEvents write a record for a show that has only such steps, and
// name its type in delivery/event.go; WebhookEventType keeps 7 for it.

// closeEvent is the step of a hold closed in state.
func closeEvent(state ledgerpb.HoldState) ledgerpb.WebhookEventType {
	if state == ledgerpb.HoldState_HOLD_STATE_EXPIRED {
		return ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_EXPIRED
	}
	return ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_RELEASED
}

func appendHoldChange(b []byte, h *ledgerpb.HoldRecord, t ledgerpb.WebhookEventType) []byte {
	size := protowire.SizeTag(hcTypeField) + protowire.SizeVarint(uint64(t)) + sizeString(hcHoldField, h.HoldId) +
		sizeString(hcClientField, h.ClientId) + sizeString(hcCurrencyField, h.Currency) + sizeString(hcPaymentField, h.PaymentRef)
	for _, s := range h.SeatIds {
		size += protowire.SizeTag(hcSeatField) + protowire.SizeBytes(len(s))
	}
	if h.AmountMinor != 0 {
		size += protowire.SizeTag(hcAmountField) + protowire.SizeVarint(uint64(h.AmountMinor))
	}
	b = protowire.AppendTag(b, eventHoldChangesField, protowire.BytesType)
	b = protowire.AppendVarint(b, uint64(size))
	b = protowire.AppendTag(b, hcTypeField, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(t))
	b = appendString(b, hcHoldField, h.HoldId)
	for _, s := range h.SeatIds {
		b = protowire.AppendTag(b, hcSeatField, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	b = appendString(b, hcClientField, h.ClientId)
	if h.AmountMinor != 0 {
		b = protowire.AppendTag(b, hcAmountField, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(h.AmountMinor))
	}
	b = appendString(b, hcCurrencyField, h.Currency)
	return appendString(b, hcPaymentField, h.PaymentRef)
}

// sizeString and appendString write a proto3 string field, which is left
// out when empty.
func sizeString(f protowire.Number, s string) int {
	if s == "" {
		return 0
	}
	return protowire.SizeTag(f) + protowire.SizeBytes(len(s))
}

func appendString(b []byte, f protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, f, protowire.BytesType)
	return protowire.AppendString(b, s)
}
