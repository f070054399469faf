// This file proves that every seatctl command, at every depth of the tree,
// answers -h and --help with its usage on stdout and exit status 0, without
// calling a node.
package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestHelpExitsZero(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(newRootCmd(&app{}, func(string) string { return "" }), nil)
	if len(paths) < 20 {
		t.Fatalf("found %d commands, want the whole tree", len(paths))
	}
	// No node listens here: a command that tried to call one would fail.
	env := func(k string) string {
		if k == endpointsEnv {
			return "127.0.0.1:1"
		}
		return ""
	}
	for _, path := range paths {
		for _, help := range []string{"-h", "--help"} {
			args := append(append([]string(nil), path...), help)
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), args, &stdout, &stderr, env); code != exitOK {
				t.Errorf("seatctl %s = exit %d (%s), want 0", strings.Join(args, " "), code, stderr.String())
				continue
			}
			if !strings.Contains(stdout.String(), "Usage:") {
				t.Errorf("seatctl %s printed %q, want its usage", strings.Join(args, " "), stdout.String())
			}
		}
	}
}
