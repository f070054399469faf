// This file proves `seatctl version`: it prints seatctl's build without
// reaching any node or needing a token (no endpoint is up here).
package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"--endpoints", "127.0.0.1:1", "--admin-token-file", "/nonexistent", "version"},
		&out, &errOut, func(string) string { return "" })
	if code != exitOK || !strings.HasPrefix(out.String(), "seatctl dev (commit ") || !strings.Contains(out.String(), runtime.Version()) {
		t.Fatalf("seatctl version = %d %q %q, want 0 and seatctl's build", code, out.String(), errOut.String())
	}
}
