//go:build !unix

package gateway

import (
	"errors"
	"syscall"
)

const directWrites = false

// tryWrite is unix only; elsewhere no sink is direct (sseSink.Direct).
func tryWrite(syscall.RawConn, []byte) (int, error) { return 0, errors.ErrUnsupported }
