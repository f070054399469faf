package main

import (
	"flag"
	"log/slog"

	"github.com/seatledger/seatledger/internal/gctune"
)

// gcHeadroomDefaultMiB is --gc-headroom's default: off. A headroom trades
// memory for CPU, and how much memory a node may take is the operator's
// call (docs/OPERATIONS.md, "Memory and the garbage collector").
const gcHeadroomDefaultMiB = 0

// gcHeadroomFlag declares --gc-headroom on a subcommand's flags.
func gcHeadroomFlag(fs *flag.FlagSet) *uint {
	return fs.Uint("gc-headroom", gcHeadroomDefaultMiB, "MiB the Go heap may grow by between garbage collections while the live heap is smaller (above it, Go's default pace: twice the live heap): fewer collections, less CPU, for at most that much more memory. 0 (default), or GOGC in the environment, leaves Go's pacing alone (docs/OPERATIONS.md)")
}

// startGCPacing paces the collector as --gc-headroom says and logs how.
func startGCPacing(mib uint, logger *slog.Logger) *gctune.Tuner {
	t := gctune.Start(uint64(mib) << 20)
	if t != nil {
		logger.Info("garbage collector paced", "headroom_mib", mib)
	}
	return t
}
