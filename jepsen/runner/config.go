// Package runner runs one Jepsen-style test: it starts real `seatd serve`
// processes on loopback behind fault-injecting proxies, runs concurrent
// clients through the public gRPC API, injects faults on a seeded schedule,
// heals, waits for the cluster to converge, reads everything back and hands
// the history to the checkers.
package runner

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seatledger/seatledger/jepsen/history"
)

// Nemeses the runner knows, by name.
const (
	NemPartitionOne    = "partition-one"    // isolate a random node
	NemPartitionLeader = "partition-leader" // isolate the node leading most groups
	NemPartitionHalf   = "partition-half"   // a random minority | majority split
	NemPartitionRing   = "partition-ring"   // every node sees a different majority (a bridge with 3 nodes)
	NemPartitionFlap   = "partition-flap"   // isolate and heal a random node every few hundred ms
	NemKillOne         = "kill-one"         // kill -9 a random node
	NemKillLeader      = "kill-leader"      // kill -9 the node leading most groups
	NemKillMinority    = "kill-minority"    // kill -9 a minority
	NemKillAll         = "kill-all"         // kill -9 every node, then restart them
	NemPauseLeader     = "pause-leader"     // SIGSTOP the leader longer than the election timeout
	NemClockSkew       = "clock-skew"       // skew some nodes' clocks by up to ±5 s
	NemClockJump       = "clock-jump"       // jump the leader's clock 10 s ahead
	NemLeaderTransfer  = "leader-transfer"  // move group leaders around
	NemDelay           = "delay"            // 20–80 ms delay with jitter on every peer link
	NemLoss            = "loss"             // 5% of chunks stall 200 ms on every peer link
	NemCorruptLog      = "corrupt-log"      // flip a bit of a raft log entry on one stopped node; it must refuse to start
	NemMembership      = "membership"       // move group replicas between nodes (5 nodes) or replace them in place (3)
)

// AllNemeses lists every nemesis, in the order reports use.
var AllNemeses = []string{
	NemPartitionOne, NemPartitionLeader, NemPartitionHalf, NemPartitionRing, NemPartitionFlap,
	NemKillOne, NemKillLeader, NemKillMinority, NemKillAll, NemPauseLeader,
	NemClockSkew, NemClockJump, NemLeaderTransfer, NemDelay, NemLoss, NemCorruptLog, NemMembership,
}

// Config is one test run.
type Config struct {
	// Seed fixes the fault schedule and every client's choices.
	Seed int64
	// Nodes is the cluster size (3 or 5).
	Nodes int
	// Groups is the number of raft groups (shows spread over them).
	Groups int
	// Clients is the number of concurrent client processes.
	Clients int
	// Duration is how long the workload and faults run (before healing).
	Duration time.Duration
	// Nemeses to draw faults from; empty runs without faults.
	Nemeses []string
	// FaultEvery is the healthy gap between faults; FaultFor how long one lasts.
	FaultEvery, FaultFor time.Duration
	// Broken runs every node with --unsafe-broken=Broken (checker self-tests).
	Broken string
	// Dir holds node data, logs, the history and reports.
	Dir string
	// Binary is the seatd binary; empty builds one into Dir.
	Binary string
	// HeartbeatTimeout and ElectionTimeout tune raft (seatd flags).
	HeartbeatTimeout, ElectionTimeout time.Duration
	// CheckTimeout bounds the linearizability search.
	CheckTimeout time.Duration
	// TLS runs every node with TLS on every port and --peer-mtls, and the
	// clients over TLS: faults then hit encrypted links (a cut or stalled
	// proxy breaks a TLS stream mid-record, which must heal like any other).
	TLS bool
	// SnapshotThreshold, TrailingLogs and SnapshotInterval tune raft's
	// snapshots (seatd flags). The defaults are small, so that a replica
	// that was killed or cut off catches up by installing a snapshot while
	// faults go on.
	SnapshotThreshold, TrailingLogs uint64
	SnapshotInterval                time.Duration
	// CheckpointBytes is seatd's --checkpoint-bytes: small, so that
	// replicas write their state machines to Pebble behind apply many
	// times while faults go on, between and beside raft's snapshots.
	CheckpointBytes int
}

// Defaults for a short run.
const (
	nodesDefault      = 3
	groupsDefault     = 2
	clientsDefault    = 10
	durationDefault   = 30 * time.Second
	faultEveryDefault = 3 * time.Second
	faultForDefault   = 4 * time.Second
	// Snapshots every 64 entries, 16 kept after one, checked every 250 to
	// 500 ms: a replica a second behind installs one.
	snapshotThresholdDefault = 64
	trailingLogsDefault      = 16
	snapshotIntervalDefault  = 250 * time.Millisecond
	// A checkpoint behind apply every 8 KiB of a group's writes, about
	// every 25 commands.
	checkpointBytesDefault = 8 << 10
	// installRunMin is the shortest run expected to install a snapshot.
	installRunMin = 20 * time.Second
	// Tuned raft timeouts: failover well under 2 s on loopback.
	heartbeatDefault    = 300 * time.Millisecond
	electionDefault     = 300 * time.Millisecond
	checkTimeoutDefault = 60 * time.Second
	// durationMax bounds a run (the long runs are many runs, not one).
	durationMax = 30 * time.Minute
)

// SetDefaults fills zero fields.
func (c *Config) SetDefaults() {
	if c.Nodes == 0 {
		c.Nodes = nodesDefault
	}
	if c.Groups == 0 {
		c.Groups = groupsDefault
	}
	if c.Clients == 0 {
		c.Clients = clientsDefault
	}
	if c.Duration == 0 {
		c.Duration = durationDefault
	}
	if c.FaultEvery == 0 {
		c.FaultEvery = faultEveryDefault
	}
	if c.FaultFor == 0 {
		c.FaultFor = faultForDefault
	}
	if c.HeartbeatTimeout == 0 {
		c.HeartbeatTimeout = heartbeatDefault
	}
	if c.ElectionTimeout == 0 {
		c.ElectionTimeout = electionDefault
	}
	if c.CheckTimeout == 0 {
		c.CheckTimeout = checkTimeoutDefault
	}
	if c.SnapshotThreshold == 0 {
		c.SnapshotThreshold = snapshotThresholdDefault
	}
	if c.CheckpointBytes == 0 {
		c.CheckpointBytes = checkpointBytesDefault
	}
	if c.TrailingLogs == 0 {
		c.TrailingLogs = trailingLogsDefault
	}
	if c.SnapshotInterval == 0 {
		c.SnapshotInterval = snapshotIntervalDefault
	}
}

// installsExpected reports whether a run should see a snapshot installed:
// small enough snapshots, long enough, and a fault injected that leaves a
// replica behind while the others go on. Counted are the faults the run
// drew, not the nemeses it could draw from ("all" may draw none of them
// in a short run), and not kill-all: every replica stops and restarts
// together, so none is left behind. Nor the faults after a corrupt-log
// that left its node down for good: with one replica gone, the groups it
// hosted stop under any other kill or partition of one of theirs (seed
// 923's "all" killed and cut only such replicas), so no fault after it is
// sure to leave a replica behind a group that goes on.
func (c *Config) installsExpected(faults []history.Fault) bool {
	if c.Duration < installRunMin || c.SnapshotThreshold > snapshotThresholdDefault || c.TrailingLogs > trailingLogsDefault {
		return false
	}
	for _, f := range faults {
		if f.Kind == NemCorruptLog && strings.HasSuffix(f.Nodes, corruptLeftDown) {
			return false
		}
		if f.Kind != NemKillAll && (slices.Contains(nemesisGroups["partitions"], f.Kind) || slices.Contains(nemesisGroups["kills"], f.Kind)) {
			return true
		}
	}
	return false
}

// Validate reports the first thing wrong.
func (c *Config) Validate() error {
	var errs []error
	if c.Nodes != 3 && c.Nodes != 5 {
		errs = append(errs, fmt.Errorf("nodes must be 3 or 5, not %d", c.Nodes))
	}
	if c.Groups < 1 || c.Groups > 64 {
		errs = append(errs, fmt.Errorf("groups must be 1..64, not %d", c.Groups))
	}
	if c.Clients < 1 || c.Clients > 200 {
		errs = append(errs, fmt.Errorf("clients must be 1..200, not %d", c.Clients))
	}
	if c.Duration <= 0 || c.Duration > durationMax {
		errs = append(errs, fmt.Errorf("duration must be in (0, %v], not %v", durationMax, c.Duration))
	}
	for _, n := range c.Nemeses {
		if !slices.Contains(AllNemeses, n) {
			errs = append(errs, fmt.Errorf("unknown nemesis %q (known: %s)", n, strings.Join(AllNemeses, ", ")))
		}
		if n == NemCorruptLog && !corruptLogAvailable {
			errs = append(errs, errors.New("the corrupt-log nemesis needs a fault build of seatjepsen: go run -tags faults ./cmd/seatjepsen (make jepsen does)"))
		}
	}
	if c.Dir == "" {
		errs = append(errs, errors.New("dir is required"))
	}
	return errors.Join(errs...)
}

// nemesisGroups name sets of nemeses; a list may mix groups and names.
var nemesisGroups = map[string][]string{
	"all":        AllNemeses,
	"partitions": {NemPartitionOne, NemPartitionLeader, NemPartitionHalf, NemPartitionRing, NemPartitionFlap},
	"kills":      {NemKillOne, NemKillLeader, NemKillMinority, NemKillAll, NemPauseLeader},
}

// ParseNemeses turns "a,b", groups ("all", "partitions", "kills", also in
// a list such as the default "partitions,kills") or "none" into a list
// without repeats.
func ParseNemeses(s string) ([]string, error) {
	if s == "" || s == "none" {
		return nil, nil
	}
	var out []string
	for _, n := range strings.Split(s, ",") {
		n = strings.TrimSpace(n)
		names, ok := nemesisGroups[n]
		if !ok {
			names = []string{n}
		}
		for _, name := range names {
			if !slices.Contains(AllNemeses, name) {
				return nil, fmt.Errorf("unknown nemesis %q (known: all, partitions, kills, %s)", name, strings.Join(AllNemeses, ", "))
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out, nil
}
