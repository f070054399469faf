// This file proves webhook delivery end to end on three in-process seatd
// nodes over loopback TCP, with a real HTTP receiver in the test:
//
//   - a scripted booking lifecycle (hold, confirm, hold, release, hold left
//     to expire, refund) reaches the receiver as events, every one at least
//     once, in revision order, each signed with the webhook's secret, while
//     the leader of the show's group is killed halfway through;
//   - a receiver that fails every request for 30 s gets every event after
//     it recovers, and meanwhile the failures and the backlog show in the
//     node's metrics;
//   - the position delivered is kept in the cluster: once the group has
//     recorded it, the new leader after the kill sends none of the events
//     before it again;
//   - registrations over HTTP/JSON: unknown event types are a 400 naming
//     the field, the secret is never returned, a deleted webhook is gone
//     (404 the second time).
//
// The backoff cap is lowered so that a recovered receiver is retried soon;
// the failure window stays the 30 s the issue names.
package main

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/codes"

	"github.com/seatledger/seatledger/delivery"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

const webhookSecret = "whsec-test-0123456789abcdef"

// fastDelivery makes a cluster's deliverers retry, record cursors and poll
// often, so that tests wait for events, not intervals.
func fastDelivery(cfg *nodeConfig) {
	cfg.Delivery.BackoffMin = 20 * time.Millisecond
	cfg.Delivery.BackoffMax = 500 * time.Millisecond
	cfg.Delivery.CursorInterval = 100 * time.Millisecond
	cfg.Delivery.PollInterval = 100 * time.Millisecond
}

// receiver is a webhook endpoint: it checks each request's signature and
// keeps every event it accepted, in arrival order; failing makes it
// answer 503 instead.
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	mu  struct {
		sync.Mutex
		got     []delivery.Event
		bodies  map[string]string // event id -> first body
		failing bool
		refused int
	}
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{t: t}
	r.mu.bodies = map[string]string{}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if sig := req.Header.Get(delivery.SignatureHeader); !hmac.Equal([]byte(sig), []byte(delivery.Sign(body, webhookSecret))) {
		r.t.Errorf("event %s: %s = %q, want the HMAC-SHA256 of its body", req.Header.Get("Seatledger-Event-Id"), delivery.SignatureHeader, sig)
	}
	var e delivery.Event
	if err := json.Unmarshal(body, &e); err != nil {
		r.t.Errorf("event body %q: %v", body, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.failing {
		r.mu.refused++
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	if first, ok := r.mu.bodies[e.ID]; ok && first != string(body) {
		r.t.Errorf("event %s delivered again with another body:\n  %s\n  %s", e.ID, first, body)
	} else if !ok {
		r.mu.bodies[e.ID] = string(body)
	}
	r.mu.got = append(r.mu.got, e)
}

func (r *receiver) setFailing(f bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.failing = f
}

// deliveries counts the deliveries of one event.
func (r *receiver) deliveries(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.mu.got {
		if e.ID == id {
			n++
		}
	}
	return n
}

// firsts returns each event's first delivery, in arrival order.
func (r *receiver) firsts() []delivery.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var out []delivery.Event
	for _, e := range r.mu.got {
		if !seen[e.ID] {
			seen[e.ID] = true
			out = append(out, e)
		}
	}
	return out
}

// step names an event as the script expects it: type(hold).
func step(e delivery.Event) string {
	id := ""
	switch {
	case e.Hold != nil:
		id = e.Hold.HoldID
	case e.Offer != nil:
		id = e.Offer.HoldID
	}
	return e.Type + "(" + id + ")"
}

// waitSteps waits until the receiver has the want steps of show, first
// deliveries in order, then checks that revisions never go back.
func (r *receiver) waitSteps(show string, want []string, within time.Duration) {
	r.t.Helper()
	deadline := time.Now().Add(within)
	for {
		var got []string
		var evs []delivery.Event
		for _, e := range r.firsts() {
			if e.ShowID == show {
				got = append(got, step(e))
				evs = append(evs, e)
			}
		}
		if slices.Equal(got, want) {
			for i := 1; i < len(evs); i++ {
				if evs[i].Revision < evs[i-1].Revision {
					r.t.Fatalf("event %s at revision %d arrived after %s at %d", evs[i].ID, evs[i].Revision, evs[i-1].ID, evs[i-1].Revision)
				}
			}
			return
		}
		if len(got) > len(want) || !slices.Equal(got, want[:len(got)]) || time.Now().After(deadline) {
			r.t.Fatalf("events of %s =\n  %v\nwant\n  %v", show, got, want)
		}
		time.Sleep(pollInterval)
	}
}

// addWebhook registers url through node i's Admin API.
func (c *testCluster) addWebhook(i int, url string, events ...string) *ledgerpb.WebhookInfo {
	c.t.Helper()
	admin := ledgerpb.NewAdminClient(c.conns[i])
	res, err := retrying(c.t, "AddWebhook", func(ctx context.Context) (*ledgerpb.WebhookResponse, error) {
		return admin.AddWebhook(ctx, &ledgerpb.WebhookAddRequest{Url: url, Secret: webhookSecret, Events: events})
	})
	if err != nil {
		c.t.Fatalf("AddWebhook(%s) = %s, want OK", url, outcomeOf(err))
	}
	return res.Webhook
}

// refund refunds a booking through node i.
func (c *testCluster) mustRefund(i int, show, holdID, client, request string) {
	c.t.Helper()
	_, err := retrying(c.t, "Refund("+holdID+")", func(ctx context.Context) (*ledgerpb.RefundResponse, error) {
		return c.clients[i].Refund(ctx, &ledgerpb.RefundRequest{ShowId: show, HoldId: holdID, ClientId: client, RequestId: request, HoldToken: c.token(holdID), Reason: "test"})
	})
	if err != nil {
		c.t.Fatalf("Refund(%s) = %s, want OK", holdID, outcomeOf(err))
	}
}

// waitExpired waits until hold is EXPIRED as its group's leader reads it.
func (c *testCluster) waitExpired(i int, show, holdID string) {
	c.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for c.getHold(i, show, holdID).State != ledgerpb.HoldState_HOLD_STATE_EXPIRED {
		if time.Now().After(deadline) {
			c.t.Fatalf("hold %s not expired after %v", holdID, clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
}

func TestWebhookLifecycleAcrossLeaderKill(t *testing.T) {
	c := startCluster(t, false, fastDelivery)
	rcv := newReceiver(t)
	wh := c.addWebhook(0, rcv.srv.URL+"/hooks")

	// Registrations never show their secrets; unknown ones are not found.
	admin := ledgerpb.NewAdminClient(c.conns[1])
	list, err := retrying(t, "ListWebhooks", func(ctx context.Context) (*ledgerpb.WebhookList, error) {
		return admin.ListWebhooks(ctx, &ledgerpb.WebhookListRequest{})
	})
	if err != nil || len(list.Webhooks) != 1 || list.Webhooks[0].WebhookId != wh.WebhookId || strings.Contains(fmt.Sprint(list), webhookSecret) {
		t.Fatalf("ListWebhooks = %v, %s; want %s alone, without its secret", list, outcomeOf(err), wh.WebhookId)
	}
	_, err = retrying(t, "DeleteWebhook(wh_none)", func(ctx context.Context) (*ledgerpb.WebhookResponse, error) {
		return admin.DeleteWebhook(ctx, &ledgerpb.WebhookDeleteRequest{WebhookId: "wh_none"})
	})
	wantRejected(t, "DeleteWebhook(wh_none)", err, "WEBHOOK_NOT_FOUND", codes.NotFound)

	show := c.showInGroup("hooks", 1)
	c.createShow(0, show)
	leader := c.leaderOf(show)
	via := (leader + 1) % clusterNodes // a node that survives the kill
	h1 := c.mustHold(via, show, "fan-1", "r1", 300, "A1", "A2").HoldId
	c.mustConfirm(via, show, h1, "fan-1", "r2", "pay-1")
	h2 := c.mustHold(via, show, "fan-2", "r3", 300, "B1").HoldId
	c.mustRelease(via, show, h2, "fan-2", "r4")
	want := []string{"hold.created(" + h1 + ")", "booking.confirmed(" + h1 + ")", "hold.created(" + h2 + ")", "hold.released(" + h2 + ")"}
	rcv.waitSteps(show, want, clusterWaitMax)
	before := rcv.firsts()
	c.waitCursor(leader, c.smap.GroupFor(show), wh.WebhookId, before[len(before)-1].Revision)

	c.kill(leader)
	c.leaderOf(show)
	h3 := c.mustHold(via, show, "fan-3", "r5", 1, "C1").HoldId
	c.waitExpired(via, show, h3)
	c.mustRefund(via, show, h1, "fan-1", "r6")
	h4 := c.mustHold(via, show, "fan-4", "r7", 300, "D1").HoldId
	want = append(want, "hold.created("+h3+")", "hold.expired("+h3+")", "booking.refunded("+h1+")", "hold.created("+h4+")")
	rcv.waitSteps(show, want, clusterWaitMax)
	for _, e := range before {
		if n := rcv.deliveries(e.ID); n != 1 {
			t.Errorf("event %s (%s), recorded as delivered before the kill, arrived %d times, want once", e.ID, step(e), n)
		}
	}
}

// waitCursor waits until node i's replica of group records that sink got
// every event up to revision.
func (c *testCluster) waitCursor(i int, group uint32, sink string, revision uint64) {
	c.t.Helper()
	deadline := time.Now().Add(clusterWaitMax)
	for {
		v := c.group(i, group).Machine().ReadView()
		cursors, err := v.WebhookCursors()
		v.Close()
		if err != nil {
			c.t.Fatalf("WebhookCursors: %v", err)
		}
		for _, cur := range cursors {
			if cur.SinkId == sink && cur.Revision >= revision {
				return
			}
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("group %d's cursor of %s = %v after %v, want at least revision %d", group, sink, cursors, clusterWaitMax, revision)
		}
		time.Sleep(pollInterval)
	}
}

func TestWebhookHTTPAdmin(t *testing.T) {
	c := startCluster(t, true)
	base := "http://" + c.httpAddr[0] + "/v1/admin/webhooks"
	r := httpCall(t, "POST", base, `{"url":"https://backend.example.com/h","secret":"`+webhookSecret+`","events":["hold.teleported"]}`).
		wantStatus(t, "POST /v1/admin/webhooks with an unknown event", http.StatusBadRequest)
	if !strings.Contains(r.raw, "events[0]") {
		t.Errorf("POST with an unknown event = %s, want the field events[0] named", r.raw)
	}
	r = httpCall(t, "POST", base, `{"url":"https://backend.example.com/h","secret":"`+webhookSecret+`","events":["booking.confirmed"]}`).
		wantStatus(t, "POST /v1/admin/webhooks", http.StatusOK)
	wh, _ := r.body["webhook"].(map[string]any)
	id, _ := wh["webhook_id"].(string)
	if id == "" || strings.Contains(r.raw, webhookSecret) {
		t.Fatalf("POST /v1/admin/webhooks = %s, want a webhook_id and no secret", r.raw)
	}
	r = httpCall(t, "GET", "http://"+c.httpAddr[1]+"/v1/admin/webhooks", "").wantStatus(t, "GET /v1/admin/webhooks", http.StatusOK)
	if !strings.Contains(r.raw, id) || !strings.Contains(r.raw, "booking.confirmed") || strings.Contains(r.raw, webhookSecret) {
		t.Fatalf("GET /v1/admin/webhooks = %s, want %s for booking.confirmed, without its secret", r.raw, id)
	}
	httpCall(t, "DELETE", base+"/"+id, "").wantStatus(t, "DELETE "+id, http.StatusOK)
	httpCall(t, "DELETE", base+"/"+id, "").wantStatus(t, "DELETE "+id+" again", http.StatusNotFound)
}

// TestWebhookAddExactlyOnce retries a registration with its request id
// through another node, as a client does after an unknown outcome: the
// retry returns the first registration and the list holds one. The same
// request id with another URL is refused, and a bad request id is named.
func TestWebhookAddExactlyOnce(t *testing.T) {
	c := startCluster(t, true)
	body := `{"url":"https://backend.example.com/once","secret":"` + webhookSecret + `","request_id":"reg-1"}`
	first := httpCall(t, "POST", "http://"+c.httpAddr[0]+"/v1/admin/webhooks", body).wantStatus(t, "POST with request_id", http.StatusOK)
	again := httpCall(t, "POST", "http://"+c.httpAddr[1]+"/v1/admin/webhooks", body).wantStatus(t, "the same POST through another node", http.StatusOK)
	id := func(r httpResult) string {
		wh, _ := r.body["webhook"].(map[string]any)
		s, _ := wh["webhook_id"].(string)
		return s
	}
	if id(first) == "" || id(first) != id(again) {
		t.Fatalf("retried registration = %s, first = %s: want the same webhook_id", again.raw, first.raw)
	}
	list := httpCall(t, "GET", "http://"+c.httpAddr[2]+"/v1/admin/webhooks", "").wantStatus(t, "GET /v1/admin/webhooks", http.StatusOK)
	if n := strings.Count(list.raw, "backend.example.com/once"); n != 1 {
		t.Fatalf("GET /v1/admin/webhooks = %s: want the URL registered once, got %d", list.raw, n)
	}
	other := `{"url":"https://backend.example.com/other","secret":"` + webhookSecret + `","request_id":"reg-1"}`
	r := httpCall(t, "POST", "http://"+c.httpAddr[0]+"/v1/admin/webhooks", other)
	if r.code == http.StatusOK {
		t.Fatalf("another URL under request_id reg-1 = %s, want it refused", r.raw)
	}
	r = httpCall(t, "POST", "http://"+c.httpAddr[0]+"/v1/admin/webhooks", `{"url":"https://backend.example.com/h","secret":"`+webhookSecret+`","request_id":"no spaces"}`).
		wantStatus(t, "POST with a bad request_id", http.StatusBadRequest)
	if !strings.Contains(r.raw, "request_id") {
		t.Errorf("POST with a bad request_id = %s, want the field named", r.raw)
	}
}

func TestWebhookReceiverDownFor30s(t *testing.T) {
	if testing.Short() {
		t.Skip("the receiver is down for 30 s")
	}
	c := startCluster(t, false, fastDelivery)
	rcv := newReceiver(t)
	rcv.setFailing(true)
	c.addWebhook(0, rcv.srv.URL, "hold.created", "booking.confirmed")
	down := time.Now()

	show := c.showInGroup("down", 2)
	c.createShow(0, show)
	var want []string
	for i := range 5 {
		seat := fmt.Sprintf("A%d", i+1)
		h := c.mustHold(0, show, "fan", fmt.Sprint("h", i), 300, seat).HoldId
		c.mustConfirm(1, show, h, "fan", fmt.Sprint("c", i), fmt.Sprint("pay-", i))
		want = append(want, "hold.created("+h+")", "booking.confirmed("+h+")")
	}
	// The failures and the backlog are visible (on the group's leader:
	// summed over the nodes, as leadership may move under load).
	deadline := time.Now().Add(clusterWaitMax)
	for c.metricSum("seatledger_webhook_failures_total") < 2 || c.metricSum("seatledger_webhook_backlog_seconds") <= 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no webhook failures and backlog in the nodes' metrics after %v", clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
	time.Sleep(time.Until(down.Add(30 * time.Second)))
	rcv.setFailing(false)
	rcv.waitSteps(show, want, clusterWaitMax)
	if n := c.metricSum("seatledger_webhook_deliveries_total"); n < float64(len(want)) {
		t.Fatalf("seatledger_webhook_deliveries_total = %v over the nodes, want at least %d", n, len(want))
	}
}

// metricSum adds up every series of a metric that the running nodes export.
func (c *testCluster) metricSum(name string) float64 {
	c.t.Helper()
	sum := 0.0
	for _, i := range c.live() {
		mfs, err := c.nodes[i].gather.Gather()
		if err != nil {
			c.t.Fatalf("gather %s's metrics: %v", c.peers[i].ID, err)
		}
		for _, mf := range mfs {
			if mf.GetName() != name {
				continue
			}
			for _, m := range mf.Metric {
				sum += value(m)
			}
		}
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return 0
}

// TestWebhookRoomAdmitted: a waiting room's admissions reach a webhook as
// room.admitted events, with the entry and its client and never a token.
func TestWebhookRoomAdmitted(t *testing.T) {
	c := startCluster(t, false, fastDelivery)
	rcv := newReceiver(t)
	c.addWebhook(0, rcv.srv.URL+"/hooks", "room.admitted")
	show := c.showInGroup("room-hooks", 1)
	c.createShow(0, show)
	room := ledgerpb.NewWaitingRoomClient(c.conns[0])
	if _, err := retrying(t, "SetWaitingRoom", func(ctx context.Context) (*ledgerpb.WaitingRoomStatus, error) {
		return room.SetWaitingRoom(ctx, &ledgerpb.SetWaitingRoomRequest{ShowId: show, Open: true, AdmitPerSecond: 50, ClientId: "ops", RequestId: "open-1"})
	}); err != nil {
		t.Fatalf("SetWaitingRoom(%s) = %s, want OK", show, outcomeOf(err))
	}
	entry, err := retrying(t, "JoinWaitingRoom", func(ctx context.Context) (*ledgerpb.WaitingRoomEntry, error) {
		return room.JoinWaitingRoom(ctx, &ledgerpb.JoinWaitingRoomRequest{ShowId: show, ClientId: "fan-1", RequestId: "join-1"})
	})
	if err != nil {
		t.Fatalf("JoinWaitingRoom(%s) = %s, want OK", show, outcomeOf(err))
	}
	deadline := time.Now().Add(clusterWaitMax)
	for {
		for _, e := range rcv.firsts() {
			if e.ShowID != show {
				continue
			}
			a := e.Admission
			if e.Type != "room.admitted" || a == nil || a.EntryID != entry.EntryId || a.ClientID != "fan-1" || a.ExpiresAt.IsZero() {
				t.Fatalf("event %s = %s %+v, want room.admitted of entry %s of fan-1 with its expiry", e.ID, e.Type, a, entry.EntryId)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no room.admitted event of %s's entry %s within %v", show, entry.EntryId, clusterWaitMax)
		}
		time.Sleep(pollInterval)
	}
}
