// This file proves the wire form of events: every type has a name that
// parses back, an entry's events get ids numbered across its shows in
// order, and a signature is the HMAC-SHA256 of the body a receiver can
// recompute.
package delivery

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestTypeNamesRoundTrip(t *testing.T) {
	for v := range ledgerpb.WebhookEventType_name {
		typ := ledgerpb.WebhookEventType(v)
		if typ == ledgerpb.WebhookEventType_WEBHOOK_EVENT_TYPE_UNSPECIFIED {
			continue
		}
		name := TypeName(typ)
		if back, ok := ParseType(name); !ok || back != typ {
			t.Errorf("ParseType(TypeName(%v) = %q) = %v, %v; want %v", typ, name, back, ok, typ)
		}
	}
	if _, ok := ParseType("hold.teleported"); ok {
		t.Errorf("ParseType(hold.teleported) = ok, want not a type")
	}
}

func TestEventsOfEntry(t *testing.T) {
	recs := []fsm.ShowEvent{
		{ShowID: "s1", SeatEvent: fsm.SeatEvent{Revision: 7, AppliedAtMs: 1000, HoldChanges: []*ledgerpb.WebhookHoldChange{
			{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_EXPIRED, HoldId: "h1"},
			{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED, HoldId: "h2"}},
			Offers: []*ledgerpb.QueueOffer{{EntryId: "q1", HoldId: "h2"}}}},
		{ShowID: "s2", SeatEvent: fsm.SeatEvent{Revision: 7, AppliedAtMs: 1000, HoldChanges: []*ledgerpb.WebhookHoldChange{
			{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED, HoldId: "h3", PaymentRef: "p"}}}},
	}
	want := []struct{ id, typ, show string }{
		{"ev_3_7_0", "hold.expired", "s1"}, {"ev_3_7_1", "hold.created", "s1"},
		{"ev_3_7_2", "queue.offer", "s1"}, {"ev_3_7_3", "booking.confirmed", "s2"},
	}
	got := eventsOf(3, recs)
	if len(got) != len(want) {
		t.Fatalf("eventsOf = %d events, want %d", len(got), len(want))
	}
	for i, w := range want {
		if got[i].ID != w.id || got[i].Type != w.typ || got[i].ShowID != w.show || got[i].Revision != 7 {
			t.Errorf("event %d = %s %s %s, want %s %s %s", i, got[i].ID, got[i].Type, got[i].ShowID, w.id, w.typ, w.show)
		}
	}
}

func TestSign(t *testing.T) {
	body := []byte(`{"id":"ev_1_2_0"}`)
	mac := hmac.New(sha256.New, []byte("secret-0123456789"))
	mac.Write(body)
	if got, want := Sign(body, "secret-0123456789"), "sha256="+hex.EncodeToString(mac.Sum(nil)); got != want {
		t.Fatalf("Sign = %s, want %s", got, want)
	}
}
