package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/seatledger/seatledger/internal/buildinfo"
)

// newVersionCmd prints seatctl's own build; `seatctl status` shows each
// node's version.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print seatctl's version, commit and Go version (seatctl status shows the nodes')",
		Args:  exactArgs(0, "no arguments"),
		// No endpoint or token is needed to say what this binary is.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(c.OutOrStdout(), "seatctl", buildinfo.Get())
			return err
		},
	}
}
