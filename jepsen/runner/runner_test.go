// This file is the harness's short run in the test command: real seatd
// processes (3 nodes) behind fault-injecting proxies, partitions and kills,
// every history checked, once in plaintext and once with TLS and peer mTLS
// on every link — and the checkers' self-test: each deliberately broken
// server mode must be caught; and that the final reads survive a node that
// stays down. Longer runs: `make jepsen` (README).
package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/jepsen/checker"
	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// seatdBinary is built once for every test of the package.
var seatdBinary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "seatjepsen-bin")
	if err != nil {
		panic(err)
	}
	seatdBinary = filepath.Join(dir, "seatd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	if err := proccluster.BuildFaults(ctx, seatdBinary); err != nil {
		panic(fmt.Sprintf("build seatd: %v", err))
	}
	cancel()
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runAndCheck runs cfg and returns the checker's report, logging both.
func runAndCheck(t *testing.T, cfg Config) *checker.Report {
	t.Helper()
	cfg.Binary, cfg.Dir = seatdBinary, t.TempDir()
	var log strings.Builder
	res, err := Run(context.Background(), cfg, &log)
	t.Log(log.String())
	if res == nil {
		t.Fatalf("Run(seed %d): %v", cfg.Seed, err)
	}
	if err != nil {
		t.Errorf("Run(seed %d): %v", cfg.Seed, err)
	}
	rep := checker.Check(res.History, checker.Options{Timeout: 60 * time.Second, OutDir: cfg.Dir})
	for _, p := range res.Problems {
		t.Logf("seed %d: VIOLATION: %s", cfg.Seed, p)
		rep.Valid = false
	}
	var out strings.Builder
	rep.WriteText(&out)
	t.Logf("seed %d report:\n%s\n%s", cfg.Seed, out.String(), GapSummary(res.Unavailability))
	return rep
}

func TestShortRun(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no fault run")
	}
	cfg := Config{Seed: 1, Nodes: 3, Duration: 45 * time.Second,
		Nemeses: []string{NemPartitionOne, NemPartitionLeader, NemPartitionHalf, NemPartitionRing, NemKillOne, NemKillLeader, NemKillAll, NemPauseLeader, NemClockSkew}}
	if rep := runAndCheck(t, cfg); !rep.Valid {
		t.Fatalf("seed %d: the checks found violations on a correct server (replay: make jepsen ARGS='--seed %d')", cfg.Seed, cfg.Seed)
	}
}

// TestShortRunTLS runs partitions and kills over TLS links: a proxy cut in
// the middle of a TLS record must heal like a plaintext one, and clients,
// forwarding and raft must all reconnect through handshakes.
func TestShortRunTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no fault run")
	}
	cfg := Config{Seed: 3, Nodes: 3, Duration: 20 * time.Second, TLS: true,
		Nemeses: []string{NemPartitionOne, NemPartitionLeader, NemKillOne, NemKillLeader}}
	if rep := runAndCheck(t, cfg); !rep.Valid {
		t.Fatalf("seed %d over TLS: the checks found violations on a correct server (replay: make jepsen ARGS='--seed %d --tls')", cfg.Seed, cfg.Seed)
	}
}

// TestCheckersCatchBrokenServers proves the checkers can fail: each broken
// mode of seatd (--unsafe-broken) must yield a violation.
func TestCheckersCatchBrokenServers(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no fault run")
	}
	for _, tt := range []struct {
		mode    string
		nemeses []string
	}{
		{"skip-seat-check", nil},
		{"stale-reads", []string{NemPartitionOne}},
		{"ignore-request-id", nil},
	} {
		t.Run(tt.mode, func(t *testing.T) {
			cfg := Config{Seed: 2, Nodes: 3, Duration: 15 * time.Second, Broken: tt.mode, Nemeses: tt.nemeses,
				FaultEvery: 2 * time.Second, FaultFor: 5 * time.Second}
			if rep := runAndCheck(t, cfg); rep.Valid {
				t.Fatalf("--unsafe-broken=%s: every check passed; the checkers missed a wrong server", tt.mode)
			}
		})
	}
}

// TestFinalReadsSkipDeadNode: a node the corrupt-log nemesis left down (here
// n1, whose connection created the shows) must not stop the final reads;
// seed 21 lost them all that way.
func TestFinalReadsSkipDeadNode(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode: no processes")
	}
	cfg := Config{Seed: 5, Nodes: 3, Binary: seatdBinary, Dir: t.TempDir()}
	cfg.SetDefaults()
	ctx := context.Background()
	tc, err := startTestCluster(ctx, &cfg)
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	defer tc.close()
	show := showName(cfg.Seed, 0)
	if err := createShows(ctx, ledgerpb.NewBookingClient(tc.adminConns[0]), cfg.Seed, 1); err != nil {
		t.Fatalf("create show: %v", err)
	}
	if err := tc.procs.Kill("n1"); err != nil {
		t.Fatalf("kill n1: %v", err)
	}
	h := &history.History{Seed: cfg.Seed, Ops: []history.Op{{Kind: history.KindRead, Show: show}}}
	final, err := finalRead(ctx, tc, tc.liveBooking(), h, 1)
	if err != nil {
		t.Fatalf("finalRead with n1 down = %v, want the reads from a running node", err)
	}
	if got := len(final.Seats[show]); got != showRows*showRowSeats {
		t.Errorf("final read of %s has %d seats, want %d", show, got, showRows*showRowSeats)
	}
}
