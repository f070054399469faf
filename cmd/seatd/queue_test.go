// This file proves the waiting queue end to end over HTTP on a real 3-node
// cluster: a fan who asks to wait for a sold-out show gets 202 Accepted with a place
// in line, is offered the seats when another fan's hold expires (the
// leader's expiry driver frees them, the FSM offers them in line order),
// reads the offer with the queue token from any node, and books it; a
// second waiter behind keeps its place, can leave, and an unknown or
// forged entry is refused.
package main

import (
	"net/http"
	"testing"
	"time"
)

func TestClusterQueueOfferAfterExpiry(t *testing.T) {
	c := startCluster(t, true)
	base := "http://" + c.httpAddr[0]
	httpCall(t, "POST", base+"/v1/shows", `{"show":{"show_id":"q-1","rows":[{"name":"A","seats":2,"category":"std"}],
		"categories":[{"name":"std","price_minor":900,"currency":"EUR"}]}}`).wantStatus(t, "POST /v1/shows", http.StatusOK)
	holds := base + "/v1/shows/q-1/holds"

	// alice takes both seats for 2 s and walks away.
	httpCall(t, "POST", holds, `{"count":2,"ttl_seconds":2,"client_id":"alice","request_id":"r1"}`).
		wantStatus(t, "POST holds count=2 by alice", http.StatusOK)
	// bob and carol wait.
	bob := queued(t, httpCall(t, "POST", holds, `{"count":2,"wait":true,"client_id":"bob","request_id":"r1"}`), "bob", 1)
	carol := queued(t, httpCall(t, "POST", holds, `{"count":1,"wait":true,"client_id":"carol","request_id":"r1"}`), "carol", 2)

	// After alice's hold expires it is OFFERED.
	entry := base + "/v1/shows/q-1/queue/" + bob.id + "?queue_token=" + bob.token
	var r httpResult
	deadline := time.Now().Add(clusterWaitMax)
	for {
		r = httpCall(t, "GET", entry, "").wantStatus(t, "GET bob's entry", http.StatusOK)
		if r.str("state") == "OFFERED" || time.Now().After(deadline) {
			break
		}
		if r.str("state") != "WAITING" || r.body["position"] != float64(1) {
			t.Fatalf("GET bob's entry while alice holds = %s, want WAITING at position 1", r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
	holdID, token := r.str("hold_id"), r.str("hold_token")
	if r.str("state") != "OFFERED" || holdID == "" || token == "" || r.str("hold_state") != "HOLD_STATE_HELD" {
		t.Fatalf("GET bob's entry after alice's hold expired = %s, want OFFERED with a live hold and its token", r.raw)
	}
	// carol (1 seat) does not fit in what is left: she keeps her place, now first.
	r = httpCall(t, "GET", base+"/v1/shows/q-1/queue/"+carol.id+"?queue_token="+carol.token, "").
		wantStatus(t, "GET carol's entry", http.StatusOK)
	if r.str("state") != "WAITING" || r.body["position"] != float64(1) {
		t.Errorf("GET carol's entry after bob's offer = %s, want WAITING at position 1", r.raw)
	}
	httpCall(t, "POST", holds+"/"+holdID+":confirm", `{"payment_ref":"p1","client_id":"bob","request_id":"r2","hold_token":"`+token+`"}`).
		wantStatus(t, "POST confirm of bob's offer", http.StatusOK)
	r = httpCall(t, "GET", base+"/v1/shows/q-1/seats", "").wantStatus(t, "GET seats", http.StatusOK)
	if r.body["booked"] != float64(2) {
		t.Errorf("GET seats after bob's confirm = %s, want both seats booked", r.raw)
	}

	// Reading or leaving another's entry, or a forged one, is refused.
	httpCall(t, "GET", base+"/v1/shows/q-1/queue/"+carol.id+"?queue_token="+bob.token, "").
		wantStatus(t, "GET carol's entry with bob's token", http.StatusForbidden)
	httpCall(t, "GET", base+"/v1/shows/q-1/queue/q0-1-0?queue_token=x", "").
		wantStatus(t, "GET an unknown entry", http.StatusNotFound)
	httpCall(t, "DELETE", base+"/v1/shows/q-1/queue/"+carol.id+"?queue_token="+carol.token+"&client_id=carol&request_id=r2", "").
		wantStatus(t, "DELETE carol's entry", http.StatusOK)
	r = httpCall(t, "GET", base+"/v1/shows/q-1/queue/"+carol.id+"?queue_token="+carol.token, "").
		wantStatus(t, "GET carol's entry after leaving", http.StatusOK)
	if r.str("state") != "LEFT" {
		t.Errorf("GET carol's entry after leaving = %s, want LEFT", r.raw)
	}
}

// waiter is a queue entry and its secret.
type waiter struct{ id, token string }

// queued checks a 202 answer (the hold joined the line) and returns the
// entry it carries.
func queued(t *testing.T, r httpResult, who string, position float64) waiter {
	t.Helper()
	if r.code != http.StatusAccepted || r.str("state") != "WAITING" {
		t.Fatalf("POST holds wait=true by %s = %d %s, want 202 with a WAITING entry", who, r.code, r.raw)
	}
	if id, token := r.str("entry_id"), r.str("queue_token"); id != "" && token != "" && r.body["position"] == position {
		return waiter{id, token}
	}
	t.Fatalf("POST holds wait=true by %s = %s, want entry_id, queue_token and position %v", who, r.raw, position)
	return waiter{}
}
