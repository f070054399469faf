//go:build !faults

package shard

// faults holds the deliberately wrong behaviours that only a fault build
// has (faults_on.go, -tags faults): a default build cannot be told to break
// itself.
type faults struct{}

func (faults) staleReads() bool { return false }
