package raftnode

import (
	"os"
	"testing"
)

// TestMain runs the package's tests and benchmarks, then removes what
// they shared across runs: the loaded node log (loadedNodeLog).
func TestMain(m *testing.M) {
	code := m.Run()
	if loaded.dir != "" {
		os.RemoveAll(loaded.dir)
	}
	os.Exit(code)
}
