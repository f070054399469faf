//go:build !linux

package main

import (
	"bufio"
	"context"
	"net"
	"sync"
)

// pollSet: elsewhere each watcher's goroutine reads its own connection.
type pollSet struct{}

func newPollSet(context.Context, *sync.WaitGroup) (*pollSet, error) { return nil, nil }

// readEvents reads c's events from br (conn's, holding buffered) on the
// caller's goroutine.
func (wl *watchers) readEvents(c *sseConn, conn net.Conn, br *bufio.Reader, buffered []byte, opened chan<- error) error {
	return wl.readStream(c, br, opened)
}
