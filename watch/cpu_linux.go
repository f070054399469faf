package watch

import (
	"syscall"
	"time"
)

// threadCPU is the calling thread's CPU time so far (the caller locks its
// goroutine to the thread), or 0 if it cannot be read.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
