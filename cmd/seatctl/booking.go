package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Support work over the Booking API, through the Go client (client/):
// each call goes to its show's leader, and a node that refuses it for want
// of a leader is stepped past within the call. A call that still fails with
// a retryable error is repeated, with the same request id, which the ledger
// answers exactly once.

// clientIDDefault owns the holds seatctl makes unless --client-id says
// otherwise; confirm and release must name the hold's owner.
const clientIDDefault = "seatctl"

// showFileBytesMax bounds a show file: the largest show (10,000 seats in
// 100 rows) is a few kilobytes.
const showFileBytesMax = 1 << 20

// onAnyEndpoint runs f through the routed client, repeating it after a
// retryable error for up to the retry window; every repeat of a write
// states the first one's send time (client.WithFirstSent).
func (a *app) onAnyEndpoint(ctx context.Context, f func(ctx context.Context, b ledgerpb.BookingClient) error) error {
	b, err := a.routedBooking(ctx)
	if err != nil {
		return err
	}
	ctx = client.WithFirstSent(ctx, a.firstSent)
	return a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		return f(ctx, b)
	})
}

// requestID returns the given request id, or a fresh one announced on
// stderr so the operator can retry the same request.
func (a *app) requestID(given string) string {
	if given != "" {
		return given
	}
	id := newRequestID()
	fmt.Fprintf(a.errOut, "request id %s (to retry this exact request: %s)\n", id, a.retryFlags(id))
	return id
}

// newRequestID is a fresh request id for a write.
func newRequestID() string {
	var b [8]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return "seatctl-" + hex.EncodeToString(b[:])
}

// retryFlags are the flags that repeat a write exactly, in another run of
// seatctl: its request id and its first send time, which lets the server
// refuse a retry that comes after it may have forgotten the request
// (REQUEST_EXPIRED, docs/API.md) instead of running it a second time.
func (a *app) retryFlags(requestID string) string {
	return fmt.Sprintf("--request-id %s --first-sent %d", requestID, a.firstSent.UnixMilli())
}

// writeFailed decorates a failed write whose outcome may be unknown with
// how to retry it safely (retry says how: the same request id).
func writeFailed(what, retry string, err error) error {
	msg := fmt.Sprintf("%s: %s", what, describe(err))
	if retryable(err) {
		msg += "; the outcome may be unknown: retry " + retry
	}
	return fmt.Errorf("%s", msg)
}

func newShowCmd(a *app) *cobra.Command {
	var clientID, requestID string
	create := &cobra.Command{
		Use:   "create FILE",
		Short: "Create a show from a JSON or YAML file (- reads stdin)",
		Long: `create reads a Show (show_id, title, starts_at_ms, rows, categories: the fields
of booking.proto, in JSON or YAML; {"show": {...}} as POST /v1/shows takes it works
too) and creates it. Unknown fields are refused, so a typo does not create a
show without, say, its categories.

Without --request-id the server derives the request id from the show's content:
creating the same show again is a no-op, as with POST /v1/shows.`,
		Example: `  seatctl show create show.yaml

  # show.yaml
  show_id: premiere
  title: The Premiere
  rows: [{name: A, seats: 20, category: std}, {name: B, seats: 20, category: std}]
  categories: [{name: std, price_minor: 1200, currency: EUR}]`,
		Args: exactArgs(1, "FILE"),
		RunE: func(c *cobra.Command, args []string) error {
			show, err := readShowFile(args[0], c.InOrStdin())
			if err != nil {
				return err
			}
			req := &ledgerpb.CreateShowRequest{Show: show, ClientId: clientID, RequestId: requestID}
			var resp *ledgerpb.CreateShowResponse
			err = a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				resp, err = b.CreateShow(ctx, req)
				return err
			})
			if err != nil {
				retry := "the same command (same file, same request id)"
				if requestID != "" {
					retry = "with " + a.retryFlags(requestID)
				}
				return writeFailed("create show "+show.ShowId, retry, err)
			}
			if a.json() {
				return writeProto(a.out, resp)
			}
			fmt.Fprintf(a.out, "created show %s: %d seats, revision %d\n", resp.ShowId, resp.SeatCount, resp.Revision)
			return nil
		},
	}
	create.Flags().StringVar(&clientID, "client-id", "", "client id of the request (default: the server's \"admin\")")
	create.Flags().StringVar(&requestID, "request-id", "", "request id (default: derived from the show's content)")
	return parentCmd("show", "Manage shows: create one, or import a catalog", create, newShowImportCmd(a))
}

// readShowFile reads a show file, or stdin for "-".
func readShowFile(path string, stdin io.Reader) (*ledgerpb.Show, error) {
	var r io.Reader = stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, showFileBytesMax+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(b) > showFileBytesMax {
		return nil, fmt.Errorf("%s: larger than %d bytes, not a show", path, showFileBytesMax)
	}
	show, err := parseShow(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return show, nil
}

// parseShow decodes a Show from YAML or JSON (JSON is YAML). The document is
// decoded generically, re-encoded as JSON and read with protojson, so the
// file means exactly what the same JSON means to the HTTP API: one set of
// field names and rules, not a second hand-written mapping.
func parseShow(b []byte) (*ledgerpb.Show, error) {
	var doc any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("not YAML or JSON: %w", err)
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("want a show object (show_id, title, rows, categories), got %T", doc)
	}
	if inner, ok := m["show"]; ok && len(m) == 1 {
		doc = inner // the body of POST /v1/shows
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("not representable as JSON: %w", err)
	}
	show := &ledgerpb.Show{}
	if err := protojson.Unmarshal(j, show); err != nil {
		return nil, fmt.Errorf("not a show: %w", err)
	}
	if show.ShowId == "" {
		return nil, fmt.Errorf("not a show: show_id is missing")
	}
	return show, nil
}

func newHoldCmd(a *app) *cobra.Command {
	var clientID, requestID, admission string
	var ttl time.Duration
	c := &cobra.Command{
		Use:                   "hold SHOW SEAT... [--client-id ID] [--request-id ID] [--ttl DURATION] [--admission-token TOKEN]",
		DisableFlagsInUseLine: true,
		Short:                 "Hold 1..10 seats of a show, all or nothing",
		Example:               "  seatctl hold demo A1 A2 --ttl 10m\n  seatctl hold demo A1 A2 --request-id seatctl-3f2a... # retry the same hold",
		Args:                  minArgs(2, "SHOW SEAT..."),
		RunE: func(c *cobra.Command, args []string) error {
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			rid := a.requestID(requestID)
			req := &ledgerpb.HoldRequest{ShowId: args[0], SeatIds: args[1:], ClientId: clientID, RequestId: rid, TtlSeconds: secs, AdmissionToken: admission}
			var resp *ledgerpb.HoldResponse
			err = a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				resp, err = b.Hold(ctx, req)
				return err
			})
			if err != nil {
				return writeFailed("hold "+strings.Join(args[1:], ","), "with "+a.retryFlags(rid), err)
			}
			if a.json() {
				return writeProto(a.out, resp)
			}
			t := newTable(a.out)
			t.row("hold_id", resp.HoldId)
			t.row("hold_token", resp.HoldToken)
			t.row("show_id", resp.ShowId)
			t.row("seats", strings.Join(resp.SeatIds, ","))
			t.row("expires_at", timeText(resp.ExpiresAt.AsTime()))
			t.row("amount", amountText(resp.AmountMinor, resp.Currency))
			t.row("revision", fmt.Sprint(resp.Revision))
			t.row("replayed", fmt.Sprint(resp.Replayed))
			t.flush()
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&clientID, "client-id", clientIDDefault, "client that owns the hold")
	f.StringVar(&requestID, "request-id", "", "request id (default: a new one, printed on stderr)")
	f.DurationVar(&ttl, "ttl", 0, "how long the hold lives, 1s..30m (default: the server's, 5m)")
	f.StringVar(&admission, "admission-token", "", "while the show's waiting room is open: the client's admission token")
	return c
}

func newConfirmCmd(a *app) *cobra.Command {
	var clientID, requestID, paymentRef, token string
	c := &cobra.Command{
		Use:                   "confirm SHOW HOLD --token TOKEN --payment-ref REF [--client-id ID] [--request-id ID]",
		DisableFlagsInUseLine: true,
		Short:                 "Confirm a hold after payment: its seats become booked",
		Example:               "  seatctl confirm demo h5-5-0 --token Zx3... --payment-ref pay-123",
		Args:                  exactArgs(2, "SHOW HOLD"),
		RunE: func(c *cobra.Command, args []string) error {
			if paymentRef == "" || token == "" {
				return usagef("confirm needs --token and --payment-ref (see %s --help)", c.CommandPath())
			}
			rid := a.requestID(requestID)
			req := &ledgerpb.ConfirmRequest{ShowId: args[0], HoldId: args[1], PaymentRef: paymentRef, ClientId: clientID, RequestId: rid, HoldToken: token}
			var resp *ledgerpb.ConfirmResponse
			err := a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				resp, err = b.Confirm(ctx, req)
				return err
			})
			if err != nil {
				return writeFailed("confirm "+args[1], "with "+a.retryFlags(rid), err)
			}
			if a.json() {
				return writeProto(a.out, resp)
			}
			t := newTable(a.out)
			t.row("hold_id", resp.HoldId)
			t.row("state", holdStateName(resp.State))
			t.row("seats", strings.Join(resp.SeatIds, ","))
			t.row("payment_ref", resp.PaymentRef)
			t.row("amount", amountText(resp.AmountMinor, resp.Currency))
			t.row("revision", fmt.Sprint(resp.Revision))
			t.row("replayed", fmt.Sprint(resp.Replayed))
			t.flush()
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&paymentRef, "payment-ref", "", "the payment's reference (required)")
	f.StringVar(&token, "token", "", "the hold's token, printed by seatctl hold (required)")
	f.StringVar(&clientID, "client-id", clientIDDefault, "client that owns the hold")
	f.StringVar(&requestID, "request-id", "", "request id (default: a new one, printed on stderr)")
	return c
}

func newReleaseCmd(a *app) *cobra.Command {
	var clientID, requestID, token string
	c := &cobra.Command{
		Use:                   "release SHOW HOLD --token TOKEN [--client-id ID] [--request-id ID]",
		DisableFlagsInUseLine: true,
		Short:                 "Release a hold: its seats become free",
		Example:               "  seatctl release demo h5-5-0 --token Zx3... --client-id alice",
		Args:                  exactArgs(2, "SHOW HOLD"),
		RunE: func(c *cobra.Command, args []string) error {
			if token == "" {
				return usagef("release needs --token (see %s --help)", c.CommandPath())
			}
			rid := a.requestID(requestID)
			req := &ledgerpb.ReleaseRequest{ShowId: args[0], HoldId: args[1], ClientId: clientID, RequestId: rid, HoldToken: token}
			var resp *ledgerpb.ReleaseResponse
			err := a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				resp, err = b.Release(ctx, req)
				return err
			})
			if err != nil {
				return writeFailed("release "+args[1], "with "+a.retryFlags(rid), err)
			}
			if a.json() {
				return writeProto(a.out, resp)
			}
			t := newTable(a.out)
			t.row("hold_id", resp.HoldId)
			t.row("state", holdStateName(resp.State))
			t.row("revision", fmt.Sprint(resp.Revision))
			t.row("replayed", fmt.Sprint(resp.Replayed))
			t.flush()
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&token, "token", "", "the hold's token, printed by seatctl hold (required)")
	f.StringVar(&clientID, "client-id", clientIDDefault, "client that owns the hold")
	f.StringVar(&requestID, "request-id", "", "request id (default: a new one, printed on stderr)")
	return c
}

// ttlSeconds turns --ttl into the API's whole seconds (0: the default),
// rounding a fraction up so a hold never lives shorter than asked.
func ttlSeconds(ttl time.Duration) (uint32, error) {
	if ttl < 0 {
		return 0, usagef("--ttl must not be negative, not %v", ttl)
	}
	secs := (ttl + time.Second - 1) / time.Second
	if secs > 1<<31 {
		return 0, usagef("--ttl %v is far beyond any hold's limit", ttl)
	}
	return uint32(secs), nil
}

// amountText prints an amount in minor units with its currency, as the
// ledger keeps it (never a float).
func amountText(minor int64, currency string) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s (minor units)", minor, currency))
}

// timeText prints a time in UTC, to the second.
func timeText(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}
