package delivery

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Event is what a sink receives, as JSON: one step of a hold, a booking or
// a waiter, at the revision (the group's raft index) and log time of the
// entry that made it. Its id is the same on every delivery of it, so a
// receiver drops repeats by id (delivery is at least once).
type Event struct {
	ID        string         `json:"id"`
	Type      string         `json:"type"`
	ShowID    string         `json:"show_id"`
	Revision  uint64         `json:"revision"`
	Time      time.Time      `json:"time"`
	Hold      *HoldData      `json:"hold,omitempty"`
	Offer     *OfferData     `json:"offer,omitempty"`
	Admission *AdmissionData `json:"admission,omitempty"`
}

// HoldData describes the hold or booking of a hold.* or booking.* event.
type HoldData struct {
	HoldID      string   `json:"hold_id"`
	SeatIDs     []string `json:"seat_ids"`
	ClientID    string   `json:"client_id,omitempty"`
	AmountMinor int64    `json:"amount_minor,omitempty"`
	Currency    string   `json:"currency,omitempty"`
	PaymentRef  string   `json:"payment_ref,omitempty"`
}

// OfferData is the queue.offer event's: the waiting entry and the hold it
// was offered (the waiter reads its token with its queue token).
type OfferData struct {
	EntryID string `json:"entry_id"`
	HoldID  string `json:"hold_id"`
}

// AdmissionData is the room.admitted event's: the waiting room entry let
// through to the seats, its client, and until when its admission holds.
// Never the admission token: the fan reads it with its entry token.
type AdmissionData struct {
	EntryID   string    `json:"entry_id"`
	ClientID  string    `json:"client_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Event types, as the API and the payloads name them.
var typeNames = map[ledgerpb.WebhookEventType]string{
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_CREATED:      "hold.created",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_RELEASED:     "hold.released",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_HOLD_EXPIRED:      "hold.expired",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_CONFIRMED: "booking.confirmed",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_BOOKING_REFUNDED:  "booking.refunded",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_QUEUE_OFFER:       "queue.offer",
	ledgerpb.WebhookEventType_WEBHOOK_EVENT_ROOM_ADMITTED:     "room.admitted",
}

// TypeName is the wire name of an event type ("" for none).
func TypeName(t ledgerpb.WebhookEventType) string { return typeNames[t] }

// ParseType is the event type of a wire name.
func ParseType(name string) (ledgerpb.WebhookEventType, bool) {
	for t, n := range typeNames {
		if n == name {
			return t, true
		}
	}
	return 0, false
}

// TypeNames lists every wire name in type order (for help and docs).
func TypeNames() []string {
	out := make([]string, 0, len(typeNames))
	for t := ledgerpb.WebhookEventType(1); int(t) < len(ledgerpb.WebhookEventType_name); t++ {
		if n := typeNames[t]; n != "" {
			out = append(out, n)
		}
	}
	return out
}

// eventsOf turns one entry's change records (every show's, as
// GroupEvents returns them for one revision) into events: per show, the
// holds' steps in the order the entry took them, then the queue's offers,
// then the waiting room's admissions in place order.
// The n in an id counts the entry's events across its shows.
func eventsOf(group uint32, recs []fsm.ShowEvent) []*Event {
	var out []*Event
	for _, rec := range recs {
		at := time.UnixMilli(rec.AppliedAtMs).UTC()
		for _, hc := range rec.HoldChanges {
			out = append(out, &Event{Type: TypeName(hc.Type), ShowID: rec.ShowID, Revision: rec.Revision, Time: at,
				Hold: &HoldData{HoldID: hc.HoldId, SeatIDs: hc.SeatIds, ClientID: hc.ClientId,
					AmountMinor: hc.AmountMinor, Currency: hc.Currency, PaymentRef: hc.PaymentRef}})
		}
		for _, o := range rec.Offers {
			out = append(out, &Event{Type: TypeName(ledgerpb.WebhookEventType_WEBHOOK_EVENT_QUEUE_OFFER), ShowID: rec.ShowID,
				Revision: rec.Revision, Time: at, Offer: &OfferData{EntryID: o.EntryId, HoldID: o.HoldId}})
		}
		for _, a := range rec.Admissions {
			out = append(out, &Event{Type: TypeName(ledgerpb.WebhookEventType_WEBHOOK_EVENT_ROOM_ADMITTED), ShowID: rec.ShowID,
				Revision: rec.Revision, Time: at, Admission: &AdmissionData{EntryID: a.EntryId, ClientID: a.ClientId,
					ExpiresAt: time.UnixMilli(a.AdmissionExpiresAtMs).UTC()}})
		}
	}
	for i, e := range out {
		e.ID = "ev_" + strconv.FormatUint(uint64(group), 10) + "_" + strconv.FormatUint(e.Revision, 10) + "_" + strconv.Itoa(i)
	}
	return out
}

// encode is the event's JSON body: the exact bytes signed and sent.
func (e *Event) encode() ([]byte, error) { return json.Marshal(e) }
