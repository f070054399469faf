//go:build !faults

package runner

import (
	"errors"
	"math/rand/v2"
)

// corruptLogAvailable: only a fault build (-tags faults) can damage a raft
// log; Config.Validate refuses corrupt-log without one.
const corruptLogAvailable = false

func corruptLogEntry(string, *rand.Rand) (string, error) {
	return "", errors.New("corrupt-log needs a fault build: go run -tags faults ./cmd/seatjepsen")
}
