//go:build !faults

package main

import (
	"flag"
	"net/http"

	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// registerFaultFlags adds nothing: only a fault build has test-only flags.
func registerFaultFlags(*flag.FlagSet) *faultConfig { return &faultConfig{} }

// Validate accepts the empty config, the only one a default build has.
func (faultConfig) Validate() error { return nil }

func applyFaultsRaft(faultConfig, *raftnode.Config) http.Handler { return nil }

func applyFaultsServing(faultConfig, *shard.Router, *gateway.Server) {}
