//go:build faults

package main

import (
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/gateway"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// Deliberately wrong servers, so that jepsen/ can prove that its checkers
// catch each kind of bug (a checker that cannot fail proves nothing). Every
// node of a cluster must run the same mode.
const (
	brokenSkipSeatCheck   = "skip-seat-check"   // grant seats that another hold owns
	brokenStaleReads      = "stale-reads"       // serve "linearizable" reads from any replica
	brokenIgnoreRequestID = "ignore-request-id" // apply a retried request again
)

var brokenModes = []string{brokenSkipSeatCheck, brokenStaleReads, brokenIgnoreRequestID}

// registerFaultFlags adds the fault build's test-only flags to seatd
// serve's.
func registerFaultFlags(fs *flag.FlagSet) *faultConfig {
	f := &faultConfig{}
	fs.BoolVar(&f.ClockHook, "unsafe-test-hooks", false, "test only: serve POST /debug/unsafe/clock?offset_ms=N on --http to skew this node's clock")
	fs.StringVar(&f.Broken, "unsafe-broken", "", "test only: run a deliberately WRONG server ("+strings.Join(brokenModes, ", ")+") to prove the fault harness catches it")
	return f
}

// Validate reports an unknown broken mode.
func (f faultConfig) Validate() error {
	if f.Broken == "" || slices.Contains(brokenModes, f.Broken) {
		return nil
	}
	return fmt.Errorf("--unsafe-broken: unknown mode %q (want one of %s)", f.Broken, strings.Join(brokenModes, ", "))
}

// applyFaultsRaft sets the raft-level part of the faults and returns the
// clock hook's handler, nil without one.
func applyFaultsRaft(f faultConfig, rc *raftnode.Config) http.Handler {
	rc.UnsafeFSM = fsm.Unsafe{SkipSeatCheck: f.Broken == brokenSkipSeatCheck}
	if !f.ClockHook {
		return nil
	}
	clock := &skewedClock{}
	rc.Now = clock.now
	return clock
}

// applyFaultsServing sets the serving part of a broken mode.
func applyFaultsServing(f faultConfig, router *shard.Router, srv *gateway.Server) {
	switch f.Broken {
	case brokenStaleReads:
		router.UnsafeStaleReads()
	case brokenIgnoreRequestID:
		srv.UnsafeIgnoreRequestID()
	}
}

// clockOffsetMaxMs bounds a test clock skew (a day each way).
const clockOffsetMaxMs = 24 * 60 * 60 * 1000

// skewedClock is this node's clock plus an offset that the harness sets
// through /debug/unsafe/clock (only with --unsafe-test-hooks).
type skewedClock struct{ offsetMs atomic.Int64 }

func (c *skewedClock) now() time.Time {
	return time.Now().Add(time.Duration(c.offsetMs.Load()) * time.Millisecond)
}

// ServeHTTP handles POST /debug/unsafe/clock?offset_ms=N.
func (c *skewedClock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "use POST /debug/unsafe/clock?offset_ms=N", http.StatusMethodNotAllowed)
		return
	}
	off, err := strconv.ParseInt(r.URL.Query().Get("offset_ms"), 10, 64)
	if err != nil || off < -clockOffsetMaxMs || off > clockOffsetMaxMs {
		http.Error(w, fmt.Sprintf("offset_ms must be an integer within ±%d", clockOffsetMaxMs), http.StatusBadRequest)
		return
	}
	c.offsetMs.Store(off)
	fmt.Fprintf(w, "{\"offset_ms\":%d}\n", off)
}
