package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Webhooks (Admin AddWebhook, ListWebhooks, DeleteWebhook): registrations
// replicated in the catalog group; every group's leader POSTs its shows'
// events to each (docs/WEBHOOKS.md). The signing secret is read from a
// file or stdin, never from the command line (shell history, ps), and is
// never printed.

func newWebhookCmd(a *app) *cobra.Command {
	var secretFile, requestID string
	var events []string
	add := &cobra.Command{
		Use:   "add URL --secret-file FILE [--event TYPE]...",
		Short: "Register a URL to receive booking events, signed with a secret (no --event: every event)",
		Long: `add registers a webhook: every group's leader POSTs each event of its shows to URL as
JSON, in revision order per show, at least once, retrying with backoff until URL answers
2xx. Each request carries Seatledger-Signature: sha256=HEX, the HMAC-SHA256 of the raw
body keyed with the secret read from --secret-file ("-" for stdin; 16 to 256 bytes, a
trailing newline dropped). Event types: hold.created, hold.released, hold.expired,
booking.confirmed, booking.refunded, queue.offer, room.admitted.`,
		Example: "  seatctl webhook add https://backend.example.com/seatledger --secret-file webhook.secret --event booking.confirmed --event booking.refunded",
		Args:    exactArgs(1, "URL"),
		RunE: func(c *cobra.Command, args []string) error {
			if secretFile == "" {
				return usagef("webhook add needs --secret-file (see seatctl webhook add --help)")
			}
			secret, err := readSecret(c.InOrStdin(), secretFile)
			if err != nil {
				return err
			}
			rid := requestID
			if rid == "" {
				rid = newRequestID()
				fmt.Fprintf(a.errOut, "request id %s (to retry this exact registration: --request-id %s)\n", rid, rid)
			}
			return a.addWebhook(c.Context(), args[0], secret, events, rid)
		},
	}
	add.Flags().StringVar(&secretFile, "secret-file", "", "file holding the signing secret, or - for stdin")
	add.Flags().StringVar(&requestID, "request-id", "", "request id: a retry with the same one returns the first registration instead of making another (default: a new one, printed on stderr)")
	add.Flags().StringArrayVar(&events, "event", nil, "an event type to deliver (repeat for more; default every type)")
	list := &cobra.Command{
		Use:   "list",
		Short: "The registered webhooks (never their secrets)",
		Args:  exactArgs(0, "no arguments"),
		RunE: func(c *cobra.Command, _ []string) error {
			return a.listWebhooks(c.Context())
		},
	}
	del := &cobra.Command{
		Use:     "delete ID",
		Short:   "Remove a webhook: its deliveries stop within a second",
		Example: "  seatctl webhook delete wh_3f2a9c1b7e4d6a08",
		Args:    exactArgs(1, "ID"),
		RunE: func(c *cobra.Command, args []string) error {
			return a.deleteWebhook(c.Context(), args[0])
		},
	}
	return parentCmd("webhook", "Webhooks that receive booking events: add, list and delete them", add, list, del)
}

// readSecret reads a secret from path ("-": stdin), without its trailing
// newline.
func readSecret(stdin io.Reader, path string) (string, error) {
	var b []byte
	var err error
	if path == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 4096))
	} else {
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("read the webhook secret: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func (a *app) addWebhook(ctx context.Context, url, secret string, events []string, requestID string) error {
	var resp *ledgerpb.WebhookResponse
	err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		var err error
		resp, err = c.AddWebhook(ctx, &ledgerpb.WebhookAddRequest{Url: url, Secret: secret, Events: events, RequestId: requestID})
		return err
	})
	if err != nil {
		return writeFailed("register webhook "+url, "with --request-id "+requestID, err)
	}
	if a.json() {
		return writeProto(a.out, resp)
	}
	fmt.Fprintf(a.out, "registered webhook %s for %s (%s) at revision %d\n", resp.Webhook.WebhookId, url, eventsText(resp.Webhook.Events), resp.Revision)
	return nil
}

func (a *app) listWebhooks(ctx context.Context) error {
	var l *ledgerpb.WebhookList
	err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		var err error
		l, err = c.ListWebhooks(ctx, &ledgerpb.WebhookListRequest{})
		return err
	})
	if err != nil {
		return fmt.Errorf("list webhooks: %s", describe(err))
	}
	if a.json() {
		return writeProto(a.out, l)
	}
	t := newTable(a.out)
	t.row("ID", "URL", "EVENTS", "CREATED")
	for _, w := range l.Webhooks {
		t.row(w.WebhookId, w.Url, eventsText(w.Events), time.UnixMilli(w.CreatedAtMs).UTC().Format(time.RFC3339))
	}
	t.flush()
	return nil
}

func (a *app) deleteWebhook(ctx context.Context, id string) error {
	var resp *ledgerpb.WebhookResponse
	err := a.onAnyNode(ctx, func(ctx context.Context, c ledgerpb.AdminClient) error {
		var err error
		resp, err = c.DeleteWebhook(ctx, &ledgerpb.WebhookDeleteRequest{WebhookId: id})
		return err
	})
	if err != nil {
		return fmt.Errorf("delete webhook %s: %s", id, describe(err))
	}
	if a.json() {
		return writeProto(a.out, resp)
	}
	fmt.Fprintf(a.out, "deleted webhook %s at revision %d\n", id, resp.Revision)
	return nil
}

func eventsText(events []string) string {
	if len(events) == 0 {
		return "every event"
	}
	return strings.Join(events, ",")
}
