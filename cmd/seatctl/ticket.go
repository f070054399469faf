package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// newTicketCmd groups ticket commands: verify checks a ticket code the way
// a door scanner would: online, its signature and its booking's state;
// offline (--public-key), its signature only.
func newTicketCmd(a *app) *cobra.Command {
	var publicKey string
	verify := &cobra.Command{
		Use:                   "verify CODE [--public-key KEY]",
		DisableFlagsInUseLine: true,
		Short:                 "Check a ticket code and print what it admits",
		Long: `verify checks a ticket code (SLT1.<payload>.<signature>).

Online (the default) it fetches the cluster's Ed25519 public key, checks the
signature, and reads the booking from the ledger: the ticket is valid only
while its booking is CONFIRMED and holds the seat. A refunded booking's
tickets print valid false.

Offline, with --public-key (as GET /v1/ticket-key or seatd keygen prints it),
no node is asked: this is how a scanner at the door works without a network.
It checks the signature only, and cannot see a refund; the output says so.

Exit 1 if the code is not valid.`,
		Example: "  seatctl ticket verify SLT1.dC0xfGgzLTEw...\n  seatctl ticket verify SLT1.dC0xfGgzLTEw... --public-key 0sN2...",
		Args:    exactArgs(1, "CODE"),
		RunE: func(c *cobra.Command, args []string) error {
			key := publicKey
			if key == "" {
				err := a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
					k, err := b.GetTicketKey(ctx, &ledgerpb.GetTicketKeyRequest{})
					if err == nil {
						key = k.PublicKey
					}
					return err
				})
				if err != nil {
					return fmt.Errorf("fetch the ticket key: %s", describe(err))
				}
			}
			pub, err := gateway.ParseTicketKey(key)
			if err != nil {
				return usagef("--public-key: %v", err)
			}
			claims, err := gateway.VerifyTicket(pub, args[0])
			if err != nil {
				return err
			}
			if publicKey != "" {
				printTicket(a, claims, true, "", "signature only (offline: a refund is not seen; verify online for the booking's state)")
				return nil
			}
			return a.verifyBooking(c.Context(), claims)
		},
	}
	verify.Flags().StringVar(&publicKey, "public-key", "", "the cluster's ticket public key (unpadded base64url): verify offline, the signature only; default: ask the endpoints and check the booking too")
	return parentCmd("ticket", "Ticket codes: verify a code online or offline, list revoked ones", verify, newRevokedCmd(a))
}

// newRevokedCmd lists a show's refunded bookings: the feed a door scanner
// that verifies offline follows to learn which tickets no longer admit.
func newRevokedCmd(a *app) *cobra.Command {
	var after uint64
	var pageSize uint32
	cmd := &cobra.Command{
		Use:                   "revoked SHOW [--after-revision R] [--page-size N]",
		DisableFlagsInUseLine: true,
		Short:                 "List a show's refunded bookings, whose tickets no longer admit",
		Long: `revoked lists the bookings of a show refunded after a revision, oldest
first: their tickets no longer admit, though their signatures still check.
A scanner that verifies offline polls it with --after-revision set to the
next_revision it printed last (GET /v1/shows/SHOW/revocations does the same).`,
		Example: "  seatctl ticket revoked demo\n  seatctl ticket revoked demo --after-revision 1234",
		Args:    exactArgs(1, "SHOW"),
		RunE: func(c *cobra.Command, args []string) error {
			var resp *ledgerpb.Revocations
			err := a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				resp, err = b.ListRevocations(ctx, &ledgerpb.ListRevocationsRequest{ShowId: args[0], AfterRevision: after, PageSize: pageSize})
				return err
			})
			if err != nil {
				return fmt.Errorf("list revocations of show %s: %s", args[0], describe(err))
			}
			if a.json() {
				return writeProto(a.out, resp)
			}
			for _, r := range resp.Revocations {
				fmt.Fprintf(a.out, "revision %d  hold %s  seats %s  refunded %s\n", r.Revision, r.HoldId,
					strings.Join(r.SeatIds, ","), r.RefundedAt.AsTime().UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(a.out, "next_revision %d  more %t\n", resp.NextRevision, resp.More)
			return nil
		},
	}
	cmd.Flags().Uint64Var(&after, "after-revision", 0, "list refunds applied after this revision (the next_revision printed last)")
	cmd.Flags().Uint32Var(&pageSize, "page-size", 0, "at most this many (default 100, at most 1000)")
	return cmd
}

// verifyBooking reads the booking a ticket names and reports it valid only
// while the booking is CONFIRMED and holds the ticket's seat. The read needs
// no credential: a hold's state and seats are public.
func (a *app) verifyBooking(ctx context.Context, claims gateway.TicketClaims) error {
	var h *ledgerpb.HoldInfo
	err := a.onAnyEndpoint(ctx, func(ctx context.Context, b ledgerpb.BookingClient) error {
		var err error
		h, err = b.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: claims.ShowID, HoldId: claims.HoldID, Consistency: ledgerpb.Consistency_LINEARIZABLE})
		return err
	})
	if err != nil {
		return fmt.Errorf("read booking %s: %s", claims.HoldID, describe(err))
	}
	state := strings.TrimPrefix(h.State.String(), "HOLD_STATE_")
	why := ""
	switch {
	case h.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
		why = fmt.Sprintf("booking %s is %s", h.HoldId, state)
	case !slices.Contains(h.SeatIds, claims.SeatID):
		why = fmt.Sprintf("booking %s does not hold seat %s", h.HoldId, claims.SeatID)
	}
	printTicket(a, claims, why == "", state, "signature and booking state (online, revision "+strconv.FormatUint(h.Revision, 10)+")")
	if why != "" {
		return fmt.Errorf("ticket not valid: %s", why)
	}
	return nil
}

// printTicket prints a verified code's claims, whether it is valid, the
// booking's state when it was read ("" offline) and what was checked.
func printTicket(a *app, claims gateway.TicketClaims, valid bool, state, checked string) {
	t := newTable(a.out)
	t.row("valid", strconv.FormatBool(valid))
	if state != "" {
		t.row("booking_state", state)
	}
	t.row("checked", checked)
	t.row("show_id", claims.ShowID)
	t.row("booking", claims.HoldID)
	t.row("seat", claims.SeatID)
	t.row("confirmed_at", timeText(time.UnixMilli(claims.ConfirmedAtMs)))
	t.flush()
}
