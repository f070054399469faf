package delivery

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// SignatureHeader carries sha256=<hex of HMAC-SHA256(body, secret)>.
const SignatureHeader = "Seatledger-Signature"

// responseBytesMax bounds what is read of an endpoint's answer: only its
// status matters, and the connection is reused after a short body.
const responseBytesMax = 4 << 10

// sink is where one registration's events go.
type sink interface {
	// id names the sink in cursors and metrics.
	id() string
	// wants reports whether the sink takes events of type t.
	wants(t string) bool
	// send delivers one event: nil once the sink has it.
	send(ctx context.Context, e *Event, body []byte) error
}

// Sign returns the signature header value of body under secret.
func Sign(body []byte, secret string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// webhook POSTs events to a registered URL.
type webhook struct {
	rec    *ledgerpb.WebhookRecord
	types  []string // empty: every type
	client *http.Client
}

func newWebhook(rec *ledgerpb.WebhookRecord, client *http.Client) *webhook {
	w := &webhook{rec: rec, client: client}
	for _, t := range rec.Events {
		w.types = append(w.types, TypeName(t))
	}
	return w
}

func (w *webhook) id() string { return w.rec.WebhookId }

func (w *webhook) wants(t string) bool { return len(w.types) == 0 || slices.Contains(w.types, t) }

func (w *webhook) send(ctx context.Context, e *Event, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.rec.Url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "seatledger-webhook")
	req.Header.Set("Seatledger-Event-Id", e.ID)
	req.Header.Set(SignatureHeader, Sign(body, w.rec.Secret))
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, responseBytesMax))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("delivery: %s answered %s", w.rec.Url, resp.Status)
	}
	return nil
}

// kafka produces every event to one topic, keyed by show id, so that one
// show's events land in one partition, in order.
type kafka struct {
	topic  string
	client *kgo.Client
}

// KafkaSinkID is the cursor and metrics name of the Kafka sink of topic.
func KafkaSinkID(topic string) string { return "kafka:" + topic }

func (k *kafka) id() string { return KafkaSinkID(k.topic) }

func (k *kafka) wants(string) bool { return true }

func (k *kafka) send(ctx context.Context, e *Event, body []byte) error {
	rec := &kgo.Record{Topic: k.topic, Key: []byte(e.ShowID), Value: body,
		Headers: []kgo.RecordHeader{{Key: "seatledger-event-id", Value: []byte(e.ID)}, {Key: "seatledger-event-type", Value: []byte(e.Type)}}}
	return k.client.ProduceSync(ctx, rec).FirstErr()
}
