//go:build unix

package gateway

import (
	"errors"
	"syscall"
)

// directWrites: the feed may write to an event stream's socket itself.
const directWrites = true

// tryWrite writes what fits of b into the socket's send buffer without
// waiting for room: n < len(b) with a nil error means the buffer is full.
func tryWrite(raw syscall.RawConn, b []byte) (n int, err error) {
	var werr error
	if err := raw.Write(func(fd uintptr) bool {
		for {
			n, werr = syscall.Write(int(fd), b)
			if !errors.Is(werr, syscall.EINTR) {
				return true // never park: the caller serves other watchers
			}
		}
	}); err != nil {
		return 0, err
	}
	if errors.Is(werr, syscall.EAGAIN) {
		return 0, nil
	}
	if werr != nil {
		return 0, werr
	}
	return n, nil
}
