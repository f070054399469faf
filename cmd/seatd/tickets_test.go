// This file proves bookings and tickets end to end over HTTP on a real
// 3-node cluster: a confirmed booking has one ticket per seat whose code
// verifies offline with the public key the cluster publishes (and fails
// when altered), each ticket is served as a QR PNG, the booking needs its
// hold token, a client's bookings are listed across groups, and a refund
// voids the tickets.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/seatledger/seatledger/gateway"
)

func TestClusterTickets(t *testing.T) {
	c := startCluster(t, true)
	base := "http://" + c.httpAddr[0]
	httpCall(t, "POST", base+"/v1/shows", `{"show":{"show_id":"t-1","rows":[{"name":"A","seats":4,"category":"std"}],
		"categories":[{"name":"std","price_minor":1250,"currency":"EUR"}]}}`).wantStatus(t, "POST /v1/shows", http.StatusOK)
	holds := base + "/v1/shows/t-1/holds"
	r := httpCall(t, "POST", holds, `{"seat_ids":["A2","A3"],"client_id":"tina","request_id":"r1"}`).wantStatus(t, "POST holds", http.StatusOK)
	id, token := r.str("hold_id"), r.str("hold_token")
	httpCall(t, "GET", base+"/v1/shows/t-1/bookings/"+id+"?hold_token="+token, "").
		wantStatus(t, "GET booking of a hold not yet confirmed", http.StatusConflict)
	httpCall(t, "POST", holds+"/"+id+":confirm", `{"payment_ref":"p1","client_id":"tina","request_id":"r2","hold_token":"`+token+`"}`).
		wantStatus(t, "POST confirm", http.StatusOK)

	httpCall(t, "GET", base+"/v1/shows/t-1/bookings/"+id+"?hold_token=forged", "").
		wantStatus(t, "GET booking with another token", http.StatusForbidden)
	httpCall(t, "GET", base+"/v1/shows/t-1/bookings/"+id, "").
		wantStatus(t, "GET booking without a token", http.StatusBadRequest)
	var b struct {
		Booking struct{ State string } `json:"booking"`
		Tickets []struct {
			TicketID   string `json:"ticket_id"`
			SeatID     string `json:"seat_id"`
			PriceMinor string `json:"price_minor"`
			Code       string `json:"code"`
			QRURL      string `json:"qr_url"`
		} `json:"tickets"`
	}
	getJSON(t, base+"/v1/shows/t-1/bookings/"+id+"?hold_token="+token, &b)
	if b.Booking.State != "HOLD_STATE_CONFIRMED" || len(b.Tickets) != 2 || b.Tickets[0].SeatID != "A2" || b.Tickets[0].PriceMinor != "1250" {
		t.Fatalf("GET booking = %+v, want CONFIRMED with tickets for A2 and A3 at 1250", b)
	}
	var key struct {
		PublicKey string `json:"public_key"`
	}
	getJSON(t, base+"/v1/ticket-key", &key)
	pub, err := gateway.ParseTicketKey(key.PublicKey)
	if err != nil {
		t.Fatalf("GET /v1/ticket-key: %v", err)
	}
	for _, tk := range b.Tickets {
		claims, err := gateway.VerifyTicket(pub, tk.Code)
		if err != nil || claims.ShowID != "t-1" || claims.HoldID != id || claims.SeatID != tk.SeatID || claims.ConfirmedAtMs == 0 {
			t.Errorf("VerifyTicket(%s) = %+v, %v, want show t-1, hold %s, seat %s", tk.Code, claims, err, id, tk.SeatID)
		}
		forged := strings.Replace(tk.Code, ".", ".x", 1)
		if _, err := gateway.VerifyTicket(pub, forged); err == nil {
			t.Errorf("VerifyTicket(altered %s) = ok, want an error", forged)
		}
		resp, err := http.Get(base + tk.QRURL)
		if err != nil {
			t.Fatal(err)
		}
		png, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "image/png" || !bytes.HasPrefix(png, []byte("\x89PNG")) {
			t.Errorf("GET %s = %d %s (%d bytes), want a PNG", tk.QRURL, resp.StatusCode, resp.Header.Get("Content-Type"), len(png))
		}
	}

	var list struct {
		Bookings []struct {
			HoldID string `json:"hold_id"`
		} `json:"bookings"`
	}
	getJSON(t, base+"/v1/clients/tina/bookings", &list)
	if len(list.Bookings) != 1 || list.Bookings[0].HoldID != id {
		t.Errorf("GET tina's bookings = %+v, want the one booking %s", list, id)
	}

	httpCall(t, "POST", holds+"/"+id+":refund", `{"client_id":"tina","request_id":"r3","hold_token":"`+token+`"}`).
		wantStatus(t, "POST refund", http.StatusOK)
	getJSON(t, base+"/v1/shows/t-1/bookings/"+id+"?hold_token="+token, &b)
	if b.Booking.State != "HOLD_STATE_REFUNDED" || len(b.Tickets) != 2 || b.Tickets[0].Code != "" {
		t.Errorf("GET booking after refund = %+v, want REFUNDED tickets without codes", b)
	}
	httpCall(t, "GET", fmt.Sprintf("%s/v1/shows/t-1/bookings/%s/tickets/A2/qr.png?hold_token=%s", base, id, token), "").
		wantStatus(t, "GET QR of a refunded ticket", http.StatusConflict)
}

// getJSON GETs url, wants 200 and decodes the body into v.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	r := httpCall(t, "GET", url, "").wantStatus(t, "GET "+url, http.StatusOK)
	if err := json.Unmarshal([]byte(r.raw), v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, r.raw)
	}
}
