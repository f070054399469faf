//go:build !unix

package main

import "log/slog"

// warnNoFile checks the file descriptor limit where there is one (unix).
func warnNoFile(*slog.Logger, int) {}
