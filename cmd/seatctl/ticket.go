package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// newTicketCmd groups ticket commands: verify checks a ticket code the way
// a door scanner would, offline when given the public key.
func newTicketCmd(a *app) *cobra.Command {
	var publicKey string
	verify := &cobra.Command{
		Use:                   "verify CODE [--public-key KEY]",
		DisableFlagsInUseLine: true,
		Short:                 "Check a ticket code's signature and print what it admits",
		Long: `verify checks a ticket code (SLT1.<payload>.<signature>) against the cluster's
Ed25519 public key. With --public-key (as GET /v1/ticket-key or seatd keygen
prints it) no node is asked: this is how a scanner at the door works offline.
Without it the key is fetched from the endpoints. Exit 1 if the code is not valid.`,
		Example: "  seatctl ticket verify SLT1.dC0xfGgzLTEw... --public-key 0sN2...",
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
			t := newTable(a.out)
			t.row("valid", "true")
			t.row("show_id", claims.ShowID)
			t.row("booking", claims.HoldID)
			t.row("seat", claims.SeatID)
			t.row("confirmed_at", timeText(time.UnixMilli(claims.ConfirmedAtMs)))
			t.flush()
			return nil
		},
	}
	verify.Flags().StringVar(&publicKey, "public-key", "", "the cluster's ticket public key (unpadded base64url); default: ask the endpoints")
	return parentCmd("ticket", "Ticket codes: verify a code offline", verify)
}
