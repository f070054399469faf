//go:build faults

package gateway

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// faults holds the deliberately wrong behaviours of a fault build, so that
// jepsen/ can prove its checkers catch them.
type faults struct {
	// ignoreRequestID gives every call a fresh request_id, so client
	// retries apply again (set before serving).
	ignoreRequestID bool
	seq             atomic.Uint64
}

// UnsafeIgnoreRequestID breaks exactly-once on purpose: each call gets a
// fresh request_id. Only for proving the fault harness catches it.
func (s *Server) UnsafeIgnoreRequestID() { s.faults.ignoreRequestID = true }

func (f *faults) requestID(cmd *ledgerpb.Command) {
	if f.ignoreRequestID {
		cmd.RequestId = fmt.Sprintf("unsafe-%d-%d", time.Now().UnixNano(), f.seq.Add(1))
	}
}
