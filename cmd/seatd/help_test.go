// This file proves that every seatd command answers -h and --help with its
// usage on stdout and exit status 0, and does nothing else: no key or token
// written to a file named -h, no cluster started (issue 20: `seatd dev
// --help` exited 1 with "flag: help requested").
package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
)

func TestHelpExitsZero(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "seatd")
	if err := proccluster.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	// want is a word of each command's usage.
	commands := map[string]string{"dev": "-data-dir", "serve": "-peers", "restore": "-from", "keygen": "FILE",
		"tokengen": "FILE", "certgen": "-nodes"}
	for cmd, want := range commands {
		for _, help := range []string{"-h", "--help"} {
			dir := t.TempDir()
			c := exec.CommandContext(ctx, bin, cmd, help)
			c.Dir = dir
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			if err := c.Run(); err != nil {
				t.Errorf("seatd %s %s: %v, want exit 0 (stderr %q)", cmd, help, err, stderr.String())
				continue
			}
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("seatd %s %s printed %q on stdout, want its usage (with %q)", cmd, help, stdout.String(), want)
			}
			if stderr.Len() > 0 {
				t.Errorf("seatd %s %s wrote %q on stderr, want nothing", cmd, help, stderr.String())
			}
			// A default build has no test-only flags (issue 20: fault
			// hooks compile only with -tags faults).
			if strings.Contains(stdout.String(), "unsafe") {
				t.Errorf("seatd %s %s lists an unsafe flag in a default build:\n%s", cmd, help, stdout.String())
			}
			if left, _ := os.ReadDir(dir); len(left) > 0 {
				t.Errorf("seatd %s %s left %s in its directory, want nothing written", cmd, help, left[0].Name())
			}
		}
	}
	out, err := exec.CommandContext(ctx, bin, "--help").Output()
	if err != nil || !strings.Contains(string(out), "seatd serve") {
		t.Errorf("seatd --help = %v, %q; want exit 0 and the commands", err, out)
	}
}
