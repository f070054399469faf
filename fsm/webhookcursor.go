package fsm

import "github.com/seatledger/seatledger/proto/ledgerpb"

// A group's delivery cursors (webhook.go): how far each sink has the
// group's change log, proposed by the group's leader every second or so
// while delivery moves, so that the next leader resumes there.

// webhookCursor records delivery positions. A cursor only moves forward (a
// deposed leader's late proposal cannot send a sink back); revision 0
// forgets a sink's cursor (its webhook was deleted).
func (tx *txn) webhookCursor(c *ledgerpb.WebhookCursorCmd) *ledgerpb.Result {
	if fe := validateCursorCmd(c); fe != nil {
		return invalid(fe)
	}
	for _, cur := range c.Cursors {
		if cur.Revision >= tx.index { // a position is an entry applied before this one
			return reject(ledgerpb.Code_CODE_INVALID_ARGUMENT, "cursor of %s at %d, not before index %d", cur.SinkId, cur.Revision, tx.index)
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

// validateCursorCmd checks a cursor command's fields. A leader made it,
// so a failure is its bug, answered as a rejection like a client's.
func validateCursorCmd(c *ledgerpb.WebhookCursorCmd) *FieldError {
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
	if cur.GetSinkId() == "" || len(cur.GetSinkId()) > WebhookSinkIDLenMax {
		return fieldErr("cursors.sink_id", "must be 1..%d bytes", WebhookSinkIDLenMax)
	}
	return nil
}

func (m *Machine) webhookCursorKey(id string) []byte { return m.key(kindWebhookCursor, []byte(id)) }

// WebhookCursors returns the group's delivery positions in sink order.
func (v *View) WebhookCursors() ([]*ledgerpb.WebhookCursor, error) {
	return scanRecords(v, kindWebhookCursor, func() *ledgerpb.WebhookCursor { return &ledgerpb.WebhookCursor{} })
}
