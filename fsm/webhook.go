package fsm

import (
	"fmt"
	"net/url"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Webhooks (docs/WEBHOOKS.md): the registrations, here; each group's
// delivery cursors, webhookcursor.go; the events, webhookevents.go.
//
// Registrations are cluster state: they live
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
	// WebhookSinkIDLenMax bounds a cursor's sink id: a webhook id, or
	// kafka: and a Kafka topic name (at most 249 bytes).
	WebhookSinkIDLenMax = 256
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

// ---- keys ----

func (m *Machine) webhookKey(id string) []byte { return m.key(kindWebhook, []byte(id)) }

// ---- reads ----

// Webhooks returns the registrations in id order (catalog group).
func (v *View) Webhooks() ([]*ledgerpb.WebhookRecord, error) {
	out, err := scanRecords(v, kindWebhook, func() *ledgerpb.WebhookRecord { return &ledgerpb.WebhookRecord{} })
	return out, err
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
