//go:build faults

package runner

import (
	"math/rand/v2"

	"github.com/seatledger/seatledger/raftnode"
)

// corruptLogAvailable: this build can damage a raft log (corrupt-log).
const corruptLogAvailable = true

// corruptLogEntry flips one bit of the data of a random entry of a random
// group's raft log under dataDir (the node must be stopped).
func corruptLogEntry(dataDir string, rng *rand.Rand) (string, error) {
	return raftnode.CorruptLogEntry(dataDir, rng.IntN)
}
