package fsm

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Webhooks (docs/WEBHOOKS.md). Registrations are cluster state: they live
// in the catalog group next to the node registry (the gateway sends
// WebhookCmd nowhere else), so one replicated list serves every group's
// leader. Each group keeps its own delivery cursors (WebhookCursorCmd, from
// its leader), because a cursor is a position in that group's log and
// nowhere else is it meaningful.
//
// The events themselves are the shows' change records (events.go): every
// entry that creates, closes, confirms or refunds a hold adds a
// WebhookHoldChange to its show's record, next to the seat changes.

// Key kinds of webhook state; see doc.go for the layout.
const (
	// kindWebhookCursor is a group's delivery position per sink.
	kindWebhookCursor byte = 0x1C // sink_id -> WebhookCursor
	// kindWebhook is a registration, in the catalog group.
	kindWebhook byte = 0x2D // webhook_id -> WebhookRecord
)

// Webhook limits.
const (
	// WebhooksMax bounds the registrations: every group's leader walks
	// them all on each delivery round.
	WebhooksMax = 16
	// WebhookIDLenMax bounds a webhook id (ValidID's alphabet).
	WebhookIDLenMax = 64
	// WebhookURLLenMax bounds a webhook's URL.
	WebhookURLLenMax = 2048
	// WebhookSecretLenMin and WebhookSecretLenMax bound a signing secret:
	// too short a key makes the signature guessable.
	WebhookSecretLenMin = 16
	WebhookSecretLenMax = 256
	// WebhookCursorsMax bounds a group's cursors: the webhooks plus the
	// Kafka sink, with room for cursors of deleted webhooks that a leader
	// has not forgotten yet.
	WebhookCursorsMax = 4 * WebhooksMax
)

// webhook applies a registration command whose fields validateOp checked.
func (tx *txn) webhook(c *ledgerpb.WebhookCmd) *ledgerpb.Result {
	switch op := c.Op.(type) {
	case *ledgerpb.WebhookCmd_Add:
		return tx.addWebhook(op.Add)
	case *ledgerpb.WebhookCmd_Delete:
		key := tx.m.webhookKey(op.Delete.WebhookId)
		if _, ok := tx.read(key); !ok {
			return reject(ledgerpb.Code_CODE_WEBHOOK_NOT_FOUND, "no webhook %s", op.Delete.WebhookId)
		}
		tx.del(key)
		return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
	}
	panic(fmt.Sprintf("fsm: webhook command without op at index %d", tx.index))
}

func (tx *txn) addWebhook(c *ledgerpb.WebhookAddCmd) *ledgerpb.Result {
	key := tx.m.webhookKey(c.WebhookId)
	if _, ok := tx.read(key); ok {
		return reject(ledgerpb.Code_CODE_WEBHOOK_EXISTS, "webhook %s exists", c.WebhookId)
	}
	n := 0
	tx.scan(tx.m.key(kindWebhook), prefixEnd(tx.m.key(kindWebhook)), WebhooksMax, func([]byte) { n++ })
	if n >= WebhooksMax {
		return reject(ledgerpb.Code_CODE_INVALID_ARGUMENT, "at most %d webhooks may be registered", WebhooksMax)
	}
	tx.put(key, &ledgerpb.WebhookRecord{WebhookId: c.WebhookId, Url: c.Url, Secret: c.Secret,
		Events: c.Events, CreatedAtMs: tx.now, Revision: tx.index})
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}

// webhookCursor records delivery positions. A cursor only moves forward (a
// deposed leader's late proposal cannot send a sink back); revision 0
// forgets a sink's cursor (its webhook was deleted).
func (tx *txn) webhookCursor(c *ledgerpb.WebhookCursorCmd) *ledgerpb.Result {
	for _, cur := range c.Cursors {
		if fe := validateCursor(cur); fe != nil {
			return invalid(fe)
		}
	}
	for _, cur := range c.Cursors {
		key := tx.m.webhookCursorKey(cur.SinkId)
		old := &ledgerpb.WebhookCursor{}
		had := tx.get(key, old)
		switch {
		case cur.Revision == 0:
			if had {
				tx.del(key)
			}
		case !had && tx.cursorCount() >= WebhookCursorsMax:
			return reject(ledgerpb.Code_CODE_INVALID_ARGUMENT, "at most %d webhook cursors per group", WebhookCursorsMax)
		case !had || cur.Revision > old.Revision:
			assertf(cur.Revision <= tx.index, "cursor of %s at %d, past index %d", cur.SinkId, cur.Revision, tx.index)
			tx.put(key, cur)
		}
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_OK}
}

func (tx *txn) cursorCount() int {
	n := 0
	p := tx.m.key(kindWebhookCursor)
	tx.scan(p, prefixEnd(p), WebhookCursorsMax, func([]byte) { n++ })
	return n
}

// ValidateWebhookCmd checks a registration command's fields.
func ValidateWebhookCmd(c *ledgerpb.WebhookCmd) *FieldError {
	switch op := c.GetOp().(type) {
	case *ledgerpb.WebhookCmd_Add:
		a := op.Add
		if !ValidID(a.WebhookId, WebhookIDLenMax) {
			return fieldErr("webhook_id", "must be 1..%d letters, digits, '-', '_' or '.'", WebhookIDLenMax)
		}
		if fe := ValidateWebhookURL(a.Url); fe != nil {
			return fe
		}
		if len(a.Secret) < WebhookSecretLenMin || len(a.Secret) > WebhookSecretLenMax {
			return fieldErr("secret", "must be %d..%d bytes", WebhookSecretLenMin, WebhookSecretLenMax)
		}
		for i, e := range a.Events {
			if e == ledgerpb.WebhookEventType_WEBHOOK_EVENT_TYPE_UNSPECIFIED || ledgerpb.WebhookEventType_name[int32(e)] == "" {
				return fieldErr(fmt.Sprintf("events[%d]", i), "is not an event type")
			}
			if slices.Contains(a.Events[:i], e) {
				return fieldErr(fmt.Sprintf("events[%d]", i), "is listed twice")
			}
		}
		return nil
	case *ledgerpb.WebhookCmd_Delete:
		if !ValidID(op.Delete.WebhookId, WebhookIDLenMax) {
			return fieldErr("webhook_id", "must be 1..%d letters, digits, '-', '_' or '.'", WebhookIDLenMax)
		}
		return nil
	}
	return fieldErr("webhook", "names no webhook command")
}

// ValidateWebhookURL checks that u is an absolute http or https URL.
func ValidateWebhookURL(u string) *FieldError {
	if len(u) == 0 || len(u) > WebhookURLLenMax {
		return fieldErr("url", "must be 1..%d bytes", WebhookURLLenMax)
	}
	p, err := url.Parse(u)
	if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
		return fieldErr("url", "must be an absolute http:// or https:// URL")
	}
	return nil
}

// ValidateWebhookCursorCmd checks a cursor command's fields.
func ValidateWebhookCursorCmd(c *ledgerpb.WebhookCursorCmd) *FieldError {
	if len(c.GetCursors()) == 0 || len(c.GetCursors()) > WebhookCursorsMax {
		return fieldErr("cursors", "must list 1..%d cursors", WebhookCursorsMax)
	}
	for _, cur := range c.Cursors {
		if fe := validateCursor(cur); fe != nil {
			return fe
		}
	}
	return nil
}

func validateCursor(cur *ledgerpb.WebhookCursor) *FieldError {
	if cur.GetSinkId() == "" || len(cur.GetSinkId()) > 2*WebhookIDLenMax+len("kafka:") {
		return fieldErr("cursors.sink_id", "must be 1..%d bytes", 2*WebhookIDLenMax+len("kafka:"))
	}
	return nil
}

// ---- keys ----

func (m *Machine) webhookKey(id string) []byte       { return m.key(kindWebhook, []byte(id)) }
func (m *Machine) webhookCursorKey(id string) []byte { return m.key(kindWebhookCursor, []byte(id)) }

// ---- reads ----

// Webhooks returns the registrations in id order (catalog group).
func (v *View) Webhooks() ([]*ledgerpb.WebhookRecord, error) {
	out, err := scanRecords(v, kindWebhook, func() *ledgerpb.WebhookRecord { return &ledgerpb.WebhookRecord{} })
	return out, err
}

// WebhookCursors returns the group's delivery positions in sink order.
func (v *View) WebhookCursors() ([]*ledgerpb.WebhookCursor, error) {
	return scanRecords(v, kindWebhookCursor, func() *ledgerpb.WebhookCursor { return &ledgerpb.WebhookCursor{} })
}

func scanRecords[T proto.Message](v *View, kind byte, fresh func() T) ([]T, error) {
	prefix := v.m.key(kind)
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	var out []T
	for ok := it.First(); ok; ok = it.Next() {
		rec := fresh()
		if err := proto.Unmarshal(it.Value(), rec); err != nil {
			return nil, fmt.Errorf("fsm: read record of kind %#x: %w", kind, err)
		}
		out = append(out, rec)
	}
	return out, it.Error()
}

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
// It walks the age index, which sorts by log time and then revision; the
// clock never goes backwards, so that is revision order, and the cursor's
// time is where its revision's records start.
func (v *View) GroupEvents(after *ledgerpb.WebhookCursor, limit int) (out []ShowEvent, gap bool, err error) {
	floor, err := v.EventFloor()
	if err != nil {
		return nil, false, err
	}
	gap = after.GetRevision() > 0 && after.GetRevision() < floor
	lo := v.m.key(kindEventAge, u64(uint64(max(after.GetAppliedAtMs(), 0))))
	it, err := v.snapIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(v.m.key(kindEventAge))})
	if err != nil {
		return nil, false, err
	}
	defer it.Close()
	for ok := it.First(); ok; ok = it.Next() {
		_, rev, show, err := decodeEventAgeKey(it.Key())
		if err != nil {
			return nil, false, fmt.Errorf("fsm: change record age key %x: %w", it.Key(), err)
		}
		if rev <= after.GetRevision() {
			continue
		}
		if rev > v.applied || (len(out) >= limit && out[len(out)-1].Revision != rev) {
			break // whole entries only, so that a cursor never splits one
		}
		ev, err := v.eventAt(show, rev)
		if err != nil {
			return nil, false, err
		}
		out = append(out, ShowEvent{ShowID: show, SeatEvent: ev})
	}
	return out, gap, it.Error()
}

// eventAt reads one show's change record at rev.
func (v *View) eventAt(show string, rev uint64) (SeatEvent, error) {
	b, closer, err := v.snapGet(v.m.eventKey(show, rev))
	if err != nil {
		return SeatEvent{}, fmt.Errorf("fsm: change record of show %s at %d named by the age index: %w", show, rev, err)
	}
	defer closer.Close()
	rec := &ledgerpb.SeatEventRecord{}
	if err := proto.Unmarshal(b, rec); err != nil {
		return SeatEvent{}, fmt.Errorf("fsm: decode change record of show %s at %d: %w", show, rev, err)
	}
	return SeatEvent{Revision: rev, AppliedAtMs: rec.AppliedAtMs, Changes: rec.Changes, Offers: rec.Offers, HoldChanges: rec.HoldChanges}, nil
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
	if tx.events == nil {
		tx.events = map[string][]byte{}
	}
	tx.events[h.ShowId] = appendHoldChange(tx.events[h.ShowId], h, t)
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
