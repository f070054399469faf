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
	"time"

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
			{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED, HoldId: "h3", PaymentRef: "p"}},
			Admissions: []*ledgerpb.RoomAdmission{{EntryId: "r1", ClientId: "c1", AdmissionExpiresAtMs: 121000}}}},
	}
	want := []struct{ id, typ, show string }{
		{"ev_3_7_0", "hold.expired", "s1"}, {"ev_3_7_1", "hold.created", "s1"},
		{"ev_3_7_2", "queue.offer", "s1"}, {"ev_3_7_3", "booking.confirmed", "s2"},
		{"ev_3_7_4", "room.admitted", "s2"},
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
	if a := got[4].Admission; a == nil || a.EntryID != "r1" || a.ClientID != "c1" || !a.ExpiresAt.Equal(time.UnixMilli(121000)) {
		t.Errorf("room.admitted's admission = %+v, want entry r1 of c1 until 121 s", a)
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

// A read's events split into lanes so that each show's events stay on one
// lane, in revision order, and unwanted types are left out.
func TestLanesKeepShowOrder(t *testing.T) {
	var recs []fsm.ShowEvent
	for rev := uint64(1); rev <= 30; rev++ {
		for _, show := range []string{"s1", "s2", "s3"} {
			recs = append(recs, fsm.ShowEvent{ShowID: show, SeatEvent: fsm.SeatEvent{Revision: rev, HoldChanges: []*ledgerpb.WebhookHoldChange{
				{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED, HoldId: "h"},
				{Type: ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_RELEASED, HoldId: "h"}}}})
		}
	}
	w := newWebhook(&ledgerpb.WebhookRecord{WebhookId: "wh", Events: []ledgerpb.WebhookEventType{ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED}}, nil)
	laneOf := map[string]int{}
	last := map[string]uint64{}
	n := 0
	for i, lane := range lanesOf(1, w, recs, 4) {
		for _, e := range lane {
			n++
			if e.Type != "hold.created" {
				t.Fatalf("lane %d has a %s event, which the webhook does not take", i, e.Type)
			}
			if l, ok := laneOf[e.ShowID]; ok && l != i {
				t.Fatalf("show %s on lanes %d and %d", e.ShowID, l, i)
			}
			laneOf[e.ShowID] = i
			if e.Revision <= last[e.ShowID] {
				t.Fatalf("show %s: revision %d after %d on lane %d", e.ShowID, e.Revision, last[e.ShowID], i)
			}
			last[e.ShowID] = e.Revision
		}
	}
	if n != 90 {
		t.Fatalf("lanes hold %d events, want 90", n)
	}
}
