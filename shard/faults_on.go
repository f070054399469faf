//go:build faults

package shard

// faults holds the deliberately wrong behaviours of a fault build, so that
// jepsen/ can prove its checkers catch them.
type faults struct {
	// stale serves linearizable reads from the local replica without
	// asking the leader (set once before serving).
	stale bool
}

// UnsafeStaleReads makes linearizable reads lie: they are served from this
// node's replica, however stale, and still labelled linearizable. Only for
// proving that the fault harness catches stale reads; call before serving.
func (r *Router) UnsafeStaleReads() { r.faults.stale = true }

func (f faults) staleReads() bool { return f.stale }
