// Package buildinfo says which build of seatledger is running: the version
// and commit stamped at link time (make build), else what the Go toolchain
// recorded (module version, VCS revision), and the Go version. seatd and
// seatctl print it (`version`), seatd reports it in Admin Status and in the
// seatledger_build_info metric, so an operator can tell which nodes run
// what during a rolling upgrade.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// Set at link time by make build:
//
//	-ldflags "-X github.com/seatledger/seatledger/internal/buildinfo.version=v1.2.3
//	          -X github.com/seatledger/seatledger/internal/buildinfo.commit=<sha>"
var version, commit string

// Info is one build's identity.
type Info struct {
	// Version is a release tag or `git describe`, else "dev".
	Version string
	// Commit is the VCS revision, else "unknown"; Modified says the tree
	// had uncommitted changes (only known from the toolchain's record).
	Commit   string
	Modified bool
	// GoVersion is the toolchain that built the binary.
	GoVersion string
}

// Get returns the running binary's build info.
var Get = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return resolve(version, commit, bi)
})

// resolve prefers link-time values, then the toolchain's record.
func resolve(version, commit string, bi *debug.BuildInfo) Info {
	in := Info{Version: version, Commit: commit, GoVersion: runtime.Version()}
	if bi != nil {
		if in.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			in.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch {
			case s.Key == "vcs.revision" && in.Commit == "":
				in.Commit = s.Value
			case s.Key == "vcs.modified":
				in.Modified = s.Value == "true"
			}
		}
		if bi.GoVersion != "" {
			in.GoVersion = bi.GoVersion
		}
	}
	if in.Version == "" {
		in.Version = "dev"
	}
	if in.Commit == "" {
		in.Commit = "unknown"
	}
	return in
}

// String is the one line `version` prints: "v1.2.3 (commit abc123, go1.26.8 linux/amd64)".
func (i Info) String() string {
	c := i.Commit
	if i.Modified {
		c += ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s %s/%s)", i.Version, c, i.GoVersion, runtime.GOOS, runtime.GOARCH)
}
