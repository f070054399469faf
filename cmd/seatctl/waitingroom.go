package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// The waiting room of a hot show (docs/API.md, The waiting room): the
// operator opens it at an admission rate, changes the rate, reads it, and
// closes it. Opening and closing are admin calls.

// onAnyRoomEndpoint is onAnyEndpoint for the WaitingRoom service.
func (a *app) onAnyRoomEndpoint(ctx context.Context, f func(ctx context.Context, w ledgerpb.WaitingRoomClient) error) error {
	attempt := 0
	return a.retry(ctx, a.retryWindow(), func(ctx context.Context) error {
		ep := a.endpoints[attempt%len(a.endpoints)]
		attempt++
		c, err := a.conn(ep)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithTimeout(ctx, a.timeout)
		defer cancel()
		return f(ctx, ledgerpb.NewWaitingRoomClient(c))
	})
}

func newWaitingRoomCmd(a *app) *cobra.Command {
	var rate, auto uint32
	var ttl time.Duration
	open := &cobra.Command{
		Use:                   "open SHOW --rate N [--admission-ttl 2m] [--auto-open ARRIVALS]",
		DisableFlagsInUseLine: true,
		Short:                 "Open a show's waiting room, admitting N fans a second (or change the rate of an open one)",
		Long: `open puts a waiting room in front of the show's seats: from now on every hold in
the show needs the admission token of its client's admitted room entry. Fans join
(POST /v1/shows/SHOW/waiting_room:join), get a random place within their arrival
window, and are admitted in place order at --rate a second of ledger time; an
admission lasts --admission-ttl. Opening an open room changes its rate and keeps
its entries. --auto-open keeps the room armed for after a close (see close).
Needs the admin token.`,
		Example: "  seatctl waitingroom open demo --rate 200",
		Args:    exactArgs(1, "SHOW"),
		RunE: func(c *cobra.Command, args []string) error {
			if rate == 0 {
				return usagef("open needs --rate N, admissions a second (see %s --help)", c.CommandPath())
			}
			secs, err := ttlSeconds(ttl)
			if err != nil {
				return err
			}
			return a.setWaitingRoom(c.Context(), &ledgerpb.SetWaitingRoomRequest{ShowId: args[0], Open: true, AdmitPerSecond: rate,
				AdmissionTtlSeconds: secs, AutoOpenArrivalsPerSecond: auto})
		},
	}
	open.Flags().Uint32Var(&rate, "rate", 0, "admissions a second, 1..10000 (required)")
	open.Flags().DurationVar(&ttl, "admission-ttl", 0, "how long an admission lasts, 10s..30m (default: the server's, 2m)")
	open.Flags().Uint32Var(&auto, "auto-open", 0, "arm the room: it opens by itself, at --rate, once this many holds arrive within a second (0: disarm)")
	closeCmd := &cobra.Command{
		Use:                   "close SHOW [--auto-open ARRIVALS --rate N [--admission-ttl 2m]]",
		DisableFlagsInUseLine: true,
		Short:                 "Close a show's waiting room: its entries go, and holds need no admission",
		Long: `close removes the show's waiting room: its entries go, and holds need no
admission. With --auto-open the closed room is armed instead of left alone: the
ledger counts the holds in the show per second of its own time, and the hold that
brings a second's count to ARRIVALS opens the room at --rate by itself (that hold
and every later one then need admission: 403 ADMISSION_REQUIRED). Without
--auto-open, close also disarms. Needs the admin token.`,
		Example: "  seatctl waitingroom close demo\n  seatctl waitingroom close demo --auto-open 5000 --rate 200",
		Args:    exactArgs(1, "SHOW"),
		RunE: func(c *cobra.Command, args []string) error {
			req := &ledgerpb.SetWaitingRoomRequest{ShowId: args[0], AutoOpenArrivalsPerSecond: auto}
			if auto != 0 {
				if rate == 0 {
					return usagef("--auto-open needs --rate N, the admissions a second once it opens (see %s --help)", c.CommandPath())
				}
				secs, err := ttlSeconds(ttl)
				if err != nil {
					return err
				}
				req.AdmitPerSecond, req.AdmissionTtlSeconds = rate, secs
			}
			return a.setWaitingRoom(c.Context(), req)
		},
	}
	closeCmd.Flags().Uint32Var(&auto, "auto-open", 0, "arm the closed room to open by itself once this many holds arrive within a second")
	closeCmd.Flags().Uint32Var(&rate, "rate", 0, "with --auto-open: admissions a second once it opens, 1..10000")
	closeCmd.Flags().DurationVar(&ttl, "admission-ttl", 0, "with --auto-open: how long an admission lasts, 10s..30m (default 2m)")
	status := &cobra.Command{
		Use:     "status SHOW",
		Short:   "Show a show's waiting room: open, rate, waiting, admitted, sold out",
		Example: "  seatctl waitingroom status demo",
		Args:    exactArgs(1, "SHOW"),
		RunE: func(c *cobra.Command, args []string) error {
			var st *ledgerpb.WaitingRoomStatus
			err := a.onAnyRoomEndpoint(c.Context(), func(ctx context.Context, w ledgerpb.WaitingRoomClient) error {
				var err error
				st, err = w.GetWaitingRoom(ctx, &ledgerpb.GetWaitingRoomRequest{ShowId: args[0]})
				return err
			})
			if err != nil {
				return fmt.Errorf("waiting room of %s: %s", args[0], describe(err))
			}
			return a.printRoom(st)
		},
	}
	return parentCmd("waitingroom", "Open, close and read a show's waiting room", open, closeCmd, status)
}

// setWaitingRoom opens or closes a room; the request id is derived from
// what is asked (the server's default), so a retry is harmless.
func (a *app) setWaitingRoom(ctx context.Context, req *ledgerpb.SetWaitingRoomRequest) error {
	var st *ledgerpb.WaitingRoomStatus
	err := a.onAnyRoomEndpoint(ctx, func(ctx context.Context, w ledgerpb.WaitingRoomClient) error {
		var err error
		st, err = w.SetWaitingRoom(ctx, req)
		return err
	})
	if err != nil {
		return writeFailed("waiting room of "+req.ShowId, "the same command", err)
	}
	return a.printRoom(st)
}

func (a *app) printRoom(st *ledgerpb.WaitingRoomStatus) error {
	if a.json() {
		return writeProto(a.out, st)
	}
	t := newTable(a.out)
	t.row("show_id", st.ShowId)
	t.row("open", fmt.Sprint(st.Open))
	if st.Open {
		t.row("admit_per_second", fmt.Sprint(st.AdmitPerSecond))
		t.row("admission_ttl", (time.Duration(st.AdmissionTtlSeconds) * time.Second).String())
		t.row("sold_out", fmt.Sprint(st.SoldOut))
		t.row("waiting", fmt.Sprint(st.Waiting))
		t.row("admitted", fmt.Sprint(st.Admitted))
		t.row("joined", fmt.Sprint(st.Joined))
	}
	if st.AutoOpenArrivalsPerSecond != 0 {
		t.row("auto_open_arrivals_per_second", fmt.Sprint(st.AutoOpenArrivalsPerSecond))
		t.row("auto_open_admit_per_second", fmt.Sprint(st.AutoOpenAdmitPerSecond))
	}
	t.row("revision", fmt.Sprint(st.Revision))
	t.flush()
	return nil
}
