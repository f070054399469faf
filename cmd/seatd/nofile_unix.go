//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// noFileSpare is the file descriptors a node needs besides its watchers:
// raft and peer connections, Pebble's files, API clients.
const noFileSpare = 4096

// warnNoFile logs when the process may open too few files for watchersMax
// streams: past the limit, accepting connections fails for every client,
// not only for watchers. (Go raises the soft limit to the hard one at
// start, so the soft limit read here is what the node has.)
func warnNoFile(log *slog.Logger, watchersMax int) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return
	}
	if need := uint64(watchersMax) + noFileSpare; l.Cur < need {
		log.Warn("the file descriptor limit is below --watchers-max and the node's other files: raise LimitNOFILE (docs/OPERATIONS.md) or lower --watchers-max",
			"limit", l.Cur, "watchers_max", watchersMax, "need", need)
	}
}
