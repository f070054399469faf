package raftnode

import "time"

// CheckpointBehindMsg is the message of the log line a replica writes
// when it wrote its state machine's writes to Pebble behind apply (the
// fault harness counts them).
const CheckpointBehindMsg = "checkpointed the state machine behind apply"

// runCheckpointer writes the group's state machine to Pebble behind
// apply: the adapter wakes it after an apply that left the overlay full
// (fsm.Machine.CheckpointDue), and it runs fsm.Machine.CheckpointBehind
// while raft goes on applying. fsm starts no goroutine of its own (it is
// deterministic); this is the one its checkpoints run on. Group.close
// waits for it, so a checkpoint under way ends before the store closes or
// the group's range is dropped.
func (g *Group) runCheckpointer() {
	defer g.wg.Done()
	for {
		select {
		case <-g.stop:
			return
		case <-g.checkpoint:
		}
		start := time.Now()
		if n := g.machine.CheckpointBehind(); n > 0 {
			took := time.Since(start)
			g.metrics.checkpointLatency.Observe(took.Seconds())
			g.metrics.checkpointBytes.Add(float64(n))
			g.log.Info(CheckpointBehindMsg, "bytes", n, "took", took)
		}
	}
}
