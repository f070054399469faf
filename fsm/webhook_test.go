// This file proves the webhook state: every step of a hold's life lands in
// its show's change record at the entry that took it, in order; the
// group-wide read returns whole entries in revision order from a cursor;
// registrations are refused when they break a rule; and a cursor only moves
// forward, or is forgotten on purpose.
package fsm

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func cmdWebhook(request string, op *ledgerpb.WebhookCmd) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: "admin", RequestId: request, Op: &ledgerpb.Command_Webhook{Webhook: op}}
}

func cmdCursor(cursors ...*ledgerpb.WebhookCursor) *ledgerpb.Command {
	return &ledgerpb.Command{Op: &ledgerpb.Command_WebhookCursor{WebhookCursor: &ledgerpb.WebhookCursorCmd{Cursors: cursors}}}
}

// stepsOf renders change records as "rev:show:type(hold)" steps.
func stepsOf(evs []ShowEvent) []string {
	var out []string
	for _, e := range evs {
		for _, hc := range e.HoldChanges {
			t := strings.ToLower(strings.TrimPrefix(hc.Type.String(), "WEBHOOK_EVENT_"))
			out = append(out, fmt.Sprintf("%d:%s:%s(%s)", e.Revision, e.ShowID, t, hc.HoldId))
		}
	}
	return out
}

func groupEvents(t *testing.T, m *Machine, after *ledgerpb.WebhookCursor, limit int) []ShowEvent {
	t.Helper()
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	evs, gap, err := v.GroupEvents(after, limit)
	if err != nil || gap {
		t.Fatalf("GroupEvents(%v) = gap %v, %v", after, gap, err)
	}
	return evs
}

func TestWebhookHoldSteps(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	show := testShow("s1", "A:4:std", "std:1000:EUR")
	mustApply(t, m, 1, at(1000, cmdShow("c", "r1", show)), 1)
	mustApply(t, m, 2, at(1100, cmdShow("c", "r2", testShow("s2", "A:4:std", "std:1000:EUR"))), 1)
	h1 := mustApply(t, m, 3, at(1200, cmdHold("c", "r3", "s1", 60000, "A1", "A2")), 1)[0].HoldId
	mustApply(t, m, 4, at(1300, cmdConfirm("c", "r4", "s1", h1, "pay-1")), 1)
	// One entry, two shows: both records share the revision.
	res := mustApply(t, m, 5, at(1400, cmdBatch(cmdHold("c", "r5", "s2", 60000, "A1"), cmdHold("c", "r6", "s1", 1000, "A3"))), 2)
	h2, h3 := res[0].HoldId, res[1].HoldId
	mustApply(t, m, 6, at(1500, cmdRelease("c", "r7", "s2", h2)), 1)
	mustApply(t, m, 7, at(5000, cmdExpire(5000, 10)), 1)
	mustApply(t, m, 8, at(5100, cmdRefund("c", "r8", "s1", h1, "sick")), 1)

	want := []string{
		"3:s1:hold_created(" + h1 + ")", "4:s1:booking_confirmed(" + h1 + ")",
		"5:s1:hold_created(" + h3 + ")", "5:s2:hold_created(" + h2 + ")",
		"6:s2:hold_released(" + h2 + ")", "7:s1:hold_expired(" + h3 + ")", "8:s1:booking_refunded(" + h1 + ")",
	}
	if got := stepsOf(groupEvents(t, m, &ledgerpb.WebhookCursor{}, 100)); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("GroupEvents(from 0) steps =\n  %v\nwant\n  %v", got, want)
	}
	// From a cursor: what follows it, from its time on.
	if got := stepsOf(groupEvents(t, m, &ledgerpb.WebhookCursor{Revision: 5, AppliedAtMs: 1400}, 100)); strings.Join(got, " ") != strings.Join(want[4:], " ") {
		t.Fatalf("GroupEvents(after 5) steps = %v, want %v", got, want[4:])
	}
	// A limit never splits an entry: limit 1 at revision 5 gives both shows.
	if got := groupEvents(t, m, &ledgerpb.WebhookCursor{Revision: 4, AppliedAtMs: 1300}, 1); len(got) != 2 || got[0].Revision != 5 || got[1].Revision != 5 {
		t.Fatalf("GroupEvents(after 4, limit 1) = %d records, want revision 5's two", len(got))
	}
	hc := groupEvents(t, m, &ledgerpb.WebhookCursor{Revision: 3, AppliedAtMs: 1200}, 1)[0].HoldChanges[0]
	if hc.PaymentRef != "pay-1" || hc.AmountMinor != 2000 || hc.Currency != "EUR" || len(hc.SeatIds) != 2 || hc.ClientId != "c" {
		t.Fatalf("confirm step = %v, want pay-1, 2000 EUR, two seats, client c", hc)
	}
}

func TestWebhookRegistrations(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	add := func(id, url, secret string, events ...ledgerpb.WebhookEventType) *ledgerpb.WebhookCmd {
		return &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Add{Add: &ledgerpb.WebhookAddCmd{WebhookId: id, Url: url, Secret: secret, Events: events}}}
	}
	del := func(id string) *ledgerpb.WebhookCmd {
		return &ledgerpb.WebhookCmd{Op: &ledgerpb.WebhookCmd_Delete{Delete: &ledgerpb.WebhookDeleteCmd{WebhookId: id}}}
	}
	const secret = "0123456789abcdef"
	confirmed := ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED
	steps := []struct {
		cmd   *ledgerpb.WebhookCmd
		want  ledgerpb.Code
		field string
	}{
		{add("wh_a", "https://x.example/hook", secret), ledgerpb.Code_CODE_OK, ""},
		{add("wh_a", "https://y.example/hook", secret), ledgerpb.Code_CODE_WEBHOOK_EXISTS, ""},
		{add("wh_b", "ftp://x.example/", secret), ledgerpb.Code_CODE_INVALID_ARGUMENT, "url"},
		{add("wh_b", "https://x.example/", "short"), ledgerpb.Code_CODE_INVALID_ARGUMENT, "secret"},
		{add("wh_b", "https://x.example/", secret, confirmed, confirmed), ledgerpb.Code_CODE_INVALID_ARGUMENT, "events[1]"},
		{add("wh_b", "http://x.example:8080/b", secret, confirmed), ledgerpb.Code_CODE_OK, ""},
		{del("wh_c"), ledgerpb.Code_CODE_WEBHOOK_NOT_FOUND, ""},
		{del("wh_a"), ledgerpb.Code_CODE_OK, ""},
	}
	for i, s := range steps {
		r := mustApply(t, m, uint64(i+1), at(int64(1000+i), cmdWebhook(fmt.Sprint("r", i), s.cmd)), 1)[0]
		if r.Code != s.want || r.Field != s.field {
			t.Fatalf("step %d: Webhook(%v) = %v field %q, want %v field %q", i, s.cmd, r.Code, r.Field, s.want, s.field)
		}
	}
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	hooks, err := v.Webhooks()
	if err != nil || len(hooks) != 1 || hooks[0].WebhookId != "wh_b" || hooks[0].Secret != secret || len(hooks[0].Events) != 1 {
		t.Fatalf("Webhooks() = %v, %v; want wh_b alone, with its secret and one event", hooks, err)
	}
}

func TestWebhookCursorsMoveForward(t *testing.T) {
	m := newTestMachine(t, newTestDB(t), 0)
	cur := func(sink string, rev uint64) *ledgerpb.WebhookCursor {
		return &ledgerpb.WebhookCursor{SinkId: sink, Revision: rev, AppliedAtMs: int64(rev) * 10}
	}
	mustApply(t, m, 10, at(100, cmdCursor(cur("wh_a", 8), cur("kafka:t", 9))), 1)
	mustApply(t, m, 11, at(110, cmdCursor(cur("wh_a", 5))), 1) // a deposed leader's late word
	mustApply(t, m, 12, at(120, cmdCursor(&ledgerpb.WebhookCursor{SinkId: "kafka:t"})), 1)
	v, err := m.View()
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	got, err := v.WebhookCursors()
	if err != nil || len(got) != 1 || got[0].SinkId != "wh_a" || got[0].Revision != 8 {
		t.Fatalf("WebhookCursors() = %v, %v; want wh_a at 8 alone", got, err)
	}
}
