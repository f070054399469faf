package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Seat glyphs of the drawn map.
const (
	glyphFree    = '.'
	glyphHeld    = 'h'
	glyphBooked  = 'X'
	glyphUnknown = '?'
)

func newSeatmapCmd(a *app) *cobra.Command {
	var stale bool
	c := &cobra.Command{
		Use:                   "seatmap SHOW [--stale]",
		DisableFlagsInUseLine: true,
		Short:                 "Draw a show's seat map: one line per row, . free, h held, X booked",
		Long: `seatmap reads a show's seats (linearizable by default, from the group's leader;
--stale serves it from the node called, possibly behind) and draws one line per
row under a header of seat numbers, then the counts and the revision.`,
		Example: "  seatctl seatmap demo\n  seatctl seatmap demo --stale -o json",
		Args:    exactArgs(1, "SHOW"),
		RunE: func(c *cobra.Command, args []string) error {
			req := &ledgerpb.GetSeatMapRequest{ShowId: args[0]}
			if stale {
				req.Consistency = ledgerpb.Consistency_STALE
			}
			var sm *ledgerpb.SeatMap
			err := a.onAnyEndpoint(c.Context(), func(ctx context.Context, b ledgerpb.BookingClient) error {
				var err error
				sm, err = b.GetSeatMap(ctx, req)
				return err
			})
			if err != nil {
				return fmt.Errorf("seat map of %s: %s", args[0], describe(err))
			}
			if a.json() {
				return writeProto(a.out, sm)
			}
			drawSeatMap(a.out, sm)
			return nil
		},
	}
	c.Flags().BoolVar(&stale, "stale", false, "read from the node called instead of the leader (may be behind)")
	return c
}

// seatRow is one row of a drawn map: seat number -> glyph.
type seatRow struct {
	name  string
	seats map[uint32]byte
}

// drawSeatMap draws the map: a title line, seat-number header lines (one
// per digit, hundreds and tens blank where a number has none), one line per
// row in the show's order, the counts and a legend.
func drawSeatMap(w io.Writer, sm *ledgerpb.SeatMap) {
	var rows []*seatRow
	byName := map[string]*seatRow{}
	width, nameWidth := uint32(0), 0
	for _, s := range sm.Seats {
		r := byName[s.Row]
		if r == nil {
			r = &seatRow{name: s.Row, seats: map[uint32]byte{}}
			byName[s.Row] = r
			rows = append(rows, r)
			nameWidth = max(nameWidth, len(s.Row))
		}
		r.seats[s.Number] = glyph(s.State)
		width = max(width, s.Number)
	}
	fmt.Fprintln(w, seatMapTitle(sm))
	pad := strings.Repeat(" ", nameWidth+2)
	for _, line := range numberHeader(width) {
		fmt.Fprintln(w, strings.TrimRight(pad+line, " "))
	}
	for _, r := range rows {
		line := make([]byte, width)
		for n := range width {
			line[n] = ' '
			if g, ok := r.seats[n+1]; ok {
				line[n] = g
			}
		}
		fmt.Fprintf(w, "%-*s  %s\n", nameWidth, r.name, strings.TrimRight(string(line), " "))
	}
	fmt.Fprintf(w, "free %d  held %d  booked %d    (%c free  %c held  %c booked)\n",
		sm.Free, sm.Held, sm.Booked, glyphFree, glyphHeld, glyphBooked)
}

// seatMapTitle names the show and how current the map is.
func seatMapTitle(sm *ledgerpb.SeatMap) string {
	s := "show " + sm.ShowId
	if sm.Title != "" {
		s += fmt.Sprintf(" %q", sm.Title)
	}
	s += fmt.Sprintf("  revision %d", sm.Revision)
	if sm.AsOf != nil {
		s += "  as of " + sm.AsOf.AsTime().UTC().Format(time.RFC3339)
	}
	if sm.Consistency == ledgerpb.Consistency_STALE {
		s += "  (stale read"
		if sm.ServedBy != "" {
			s += " served by " + sm.ServedBy
		}
		return s + ")"
	}
	return s + "  (linearizable)"
}

// numberHeader returns the header lines over seats 1..width: the hundreds
// digits (if any seat reaches 100), the tens (if any reaches 10), the units.
func numberHeader(width uint32) []string {
	var lines []string
	for place := uint32(100); place >= 1; place /= 10 {
		if width < place && place > 1 {
			continue
		}
		var b strings.Builder
		for n := uint32(1); n <= width; n++ {
			if n < place {
				b.WriteByte(' ')
				continue
			}
			b.WriteByte(byte('0' + n/place%10))
		}
		lines = append(lines, b.String())
	}
	return lines
}

// glyph draws one seat state.
func glyph(s ledgerpb.SeatState) byte {
	switch s {
	case ledgerpb.SeatState_FREE:
		return glyphFree
	case ledgerpb.SeatState_HELD:
		return glyphHeld
	case ledgerpb.SeatState_BOOKED:
		return glyphBooked
	}
	return glyphUnknown
}
