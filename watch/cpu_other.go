//go:build !linux

package watch

import "time"

// threadCPU stands in for the thread's CPU time where it cannot be read:
// the wall clock, which also counts waiting for a core.
func threadCPU() time.Duration { return time.Duration(time.Now().UnixNano()) }
