// This file is the harness's short run in the test command: real seatd
// processes (3 nodes) behind fault-injecting proxies, partitions and kills,
// every history checked, once in plaintext and once with TLS and peer mTLS
// on every link — and the checkers' self-test: each deliberately broken
// server mode must be caught. Longer runs: `make jepsen` (README).
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
	if err := proccluster.Build(ctx, seatdBinary); err != nil {
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
