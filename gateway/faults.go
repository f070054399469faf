//go:build !faults

package gateway

import "github.com/seatledger/seatledger/proto/ledgerpb"

// faults holds the deliberately wrong behaviours that only a fault build
// has (faults_on.go, -tags faults): a default build cannot be told to break
// itself.
type faults struct{}

func (faults) requestID(*ledgerpb.Command) {}
