// This file proves seatctl webhook add, list and delete against the real
// seatd processes of TestEndToEnd: a webhook added with a secret file
// receives the next hold as a signed hold.created event, its secret never
// shows in list's output (table or JSON), and once deleted it is gone.
package main

import (
	"crypto/hmac"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/seatledger/seatledger/delivery"
)

const e2eWebhookSecret = "e2e-webhook-secret-0123456789"

// webhooks runs the webhook commands; dir holds the secret file.
func (sc *seatctl) webhooks(dir string) {
	t := sc.t
	got := make(chan delivery.Event, 64)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if sig := r.Header.Get(delivery.SignatureHeader); !hmac.Equal([]byte(sig), []byte(delivery.Sign(body, e2eWebhookSecret))) {
			t.Errorf("webhook request signed %q, want the HMAC of its body with the secret", sig)
		}
		var e delivery.Event
		if err := json.Unmarshal(body, &e); err != nil {
			t.Errorf("webhook body %q: %v", body, err)
		}
		select {
		case got <- e:
		default:
		}
	}))
	defer rcv.Close()
	secretFile := filepath.Join(dir, "webhook.secret")
	if err := os.WriteFile(secretFile, []byte(e2eWebhookSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	add := []string{"webhook", "add", rcv.URL, "--secret-file", secretFile, "--event", "hold.created", "-o", "json"}
	out, errOut, code := sc.run(add...)
	var added struct {
		Webhook struct {
			ID string `json:"webhook_id"`
		} `json:"webhook"`
	}
	if err := json.Unmarshal([]byte(out), &added); code != exitOK || err != nil || added.Webhook.ID == "" || strings.Contains(out, e2eWebhookSecret) {
		t.Fatalf("webhook add -o json = exit %d, %q (%v), want a webhook_id and no secret", code, out, err)
	}
	// Retried with the request id it printed, the registration is the same
	// one, not a second.
	m := regexp.MustCompile(`--request-id (\S+)\)`).FindStringSubmatch(errOut)
	if m == nil {
		t.Fatalf("webhook add printed no request id to retry with:\n%s", errOut)
	}
	if again := sc.ok(append(add, "--request-id", m[1])...); !strings.Contains(again, added.Webhook.ID) {
		t.Fatalf("webhook add retried with --request-id %s = %s, want webhook %s again", m[1], again, added.Webhook.ID)
	}
	for _, args := range [][]string{{"webhook", "list"}, {"webhook", "list", "-o", "json"}} {
		if out := sc.ok(args...); !strings.Contains(out, added.Webhook.ID) || !strings.Contains(out, "hold.created") || strings.Contains(out, e2eWebhookSecret) {
			t.Fatalf("seatctl %s =\n%s\nwant %s for hold.created, without its secret", strings.Join(args, " "), out, added.Webhook.ID)
		}
	}
	holdID, _ := sc.hold("B12")
	deadline := time.After(time.Minute)
	for {
		select {
		case e := <-got:
			if e.Type == "hold.created" && e.Hold != nil && e.Hold.HoldID == holdID {
				sc.ok("webhook", "delete", added.Webhook.ID)
				if out := sc.ok("webhook", "list"); strings.Contains(out, added.Webhook.ID) {
					t.Fatalf("webhook list after delete still shows %s:\n%s", added.Webhook.ID, out)
				}
				return
			}
			if e.Type != "hold.created" {
				t.Fatalf("webhook for hold.created got a %s event", e.Type)
			}
		case <-deadline:
			t.Fatalf("no hold.created event for %s within a minute", holdID)
		}
	}
}
