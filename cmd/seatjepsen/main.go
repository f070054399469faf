// Command seatjepsen is seatledger's Jepsen-style fault test: it starts a
// cluster of real seatd processes behind fault-injecting proxies, runs
// concurrent clients, injects faults, heals, reads everything back and checks
// the history for linearizability and the invariants S1–S6. It exits 1 when
// a check fails (or, with --expect-violation, when none does).
//
//	seatjepsen run --seed 42 --duration 60s --nemesis all --nodes 5
//	seatjepsen check jepsen-out/42/history.jsonl
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/seatledger/seatledger/jepsen/checker"
	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/jepsen/runner"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "seatjepsen:", err)
		var v violationError
		if errors.As(err, &v) {
			os.Exit(1)
		}
		os.Exit(2)
	}
}

// violationError means the checks failed (exit 1), not the harness (exit 2).
type violationError struct{ msg string }

func (v violationError) Error() string { return v.msg }

func run(args []string) error {
	if len(args) == 0 {
		return errors.New("usage: seatjepsen run [flags] | seatjepsen check HISTORY [flags]")
	}
	switch args[0] {
	case "run":
		return runTest(args[1:])
	case "check":
		return checkFile(args[1:])
	}
	return fmt.Errorf("unknown command %q (want run or check)", args[0])
}

func runTest(args []string) error {
	fs := flag.NewFlagSet("seatjepsen run", flag.ContinueOnError)
	cfg := runner.Config{}
	fs.Int64Var(&cfg.Seed, "seed", 0, "seed for the fault schedule and the clients (0: from the clock; printed)")
	fs.IntVar(&cfg.Nodes, "nodes", 3, "cluster size: 3 or 5")
	fs.IntVar(&cfg.Groups, "groups", 2, "raft groups")
	fs.IntVar(&cfg.Clients, "clients", 10, "concurrent clients")
	fs.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long clients and faults run")
	nemeses := fs.String("nemesis", "partitions,kills", "faults: all, none, partitions, kills, or a list of: "+strings.Join(runner.AllNemeses, ","))
	fs.DurationVar(&cfg.FaultEvery, "fault-every", 3*time.Second, "healthy time between faults")
	fs.DurationVar(&cfg.FaultFor, "fault-for", 4*time.Second, "how long each fault lasts")
	fs.StringVar(&cfg.Broken, "broken", "", "run a deliberately wrong server (seatd --unsafe-broken): skip-seat-check, stale-reads, ignore-request-id")
	fs.StringVar(&cfg.Dir, "dir", "", "output directory (default jepsen-out/<seed>)")
	fs.StringVar(&cfg.Binary, "binary", "", "seatd binary, built with -tags faults (default: build one)")
	fs.DurationVar(&cfg.HeartbeatTimeout, "heartbeat-timeout", 300*time.Millisecond, "seatd --heartbeat-timeout")
	fs.DurationVar(&cfg.ElectionTimeout, "election-timeout", 300*time.Millisecond, "seatd --election-timeout")
	fs.DurationVar(&cfg.CheckTimeout, "check-timeout", 60*time.Second, "budget for the linearizability search")
	fs.Uint64Var(&cfg.SnapshotThreshold, "snapshot-threshold", 0, "seatd --snapshot-threshold (default 64: small, so that lagging replicas install snapshots)")
	fs.Uint64Var(&cfg.TrailingLogs, "trailing-logs", 0, "seatd --trailing-logs (default 16)")
	fs.DurationVar(&cfg.SnapshotInterval, "snapshot-interval", 0, "seatd --snapshot-interval (default 250ms)")
	fs.BoolVar(&cfg.TLS, "tls", false, "run the nodes with TLS on every port and --peer-mtls, and the clients over TLS (certificates made for the run)")
	expect := fs.Bool("expect-violation", false, "succeed only if the checks find a violation (for --broken)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if cfg.Nemeses, err = runner.ParseNemeses(*nemeses); err != nil {
		return err
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano() % 1_000_000_007
	}
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join("jepsen-out", fmt.Sprint(cfg.Seed))
	}
	fmt.Printf("seatjepsen: seed %d (replay with --seed %d), output in %s\n", cfg.Seed, cfg.Seed, cfg.Dir)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runner.Run(ctx, cfg, os.Stdout)
	if res == nil {
		return err
	}
	if err != nil {
		fmt.Printf("seatjepsen: run error (checking what was recorded): %v\n", err)
	}
	printUnavailability(res.Unavailability, res.History.StartUnixNano)
	rep := checker.Check(res.History, checker.Options{Timeout: cfg.CheckTimeout, OutDir: cfg.Dir})
	fmt.Printf("seatjepsen: %d snapshot installs, %d checkpoints behind apply, %d raft log floor moves\n", res.SnapshotInstalls, res.CheckpointsBehind, res.LogFloorMoves)
	for _, p := range res.Problems {
		fmt.Println("seatjepsen: VIOLATION:", p)
		rep.Valid = false
	}
	return verdict(rep, cfg.Dir, res.HistoryPath, *expect, err)
}

func checkFile(args []string) error {
	fs := flag.NewFlagSet("seatjepsen check", flag.ContinueOnError)
	timeout := fs.Duration("check-timeout", 60*time.Second, "budget for the linearizability search")
	if len(args) == 0 {
		return errors.New("usage: seatjepsen check HISTORY [--check-timeout D]")
	}
	path := args[0]
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	h, err := history.ReadFile(path)
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	printUnavailability(runner.Unavailability(h), h.StartUnixNano)
	rep := checker.Check(h, checker.Options{Timeout: *timeout, OutDir: dir})
	return verdict(rep, dir, path, false, nil)
}

// verdict prints and stores the report and turns it into an exit status.
func verdict(rep *checker.Report, dir, historyPath string, expectViolation bool, runErr error) error {
	rep.WriteText(os.Stdout)
	if b, err := json.MarshalIndent(rep, "", "  "); err == nil {
		os.WriteFile(filepath.Join(dir, "report.json"), b, 0o644)
	}
	fmt.Printf("seatjepsen: history %s, report %s\n", historyPath, filepath.Join(dir, "report.json"))
	switch {
	case expectViolation && rep.Valid:
		return violationError{"expected a violation (--expect-violation) but every check passed"}
	case expectViolation:
		fmt.Println("seatjepsen: the checkers caught the broken server, as expected")
		return nil
	case !rep.Valid:
		return violationError{"VIOLATIONS FOUND (see above)"}
	case runErr != nil:
		return runErr
	}
	fmt.Println("seatjepsen: every check passed")
	return nil
}

// printUnavailability prints each fault's measured unavailability; times are
// since the run's start, which startNs (0: unknown) gives on the wall clock
// the nodes' logs use.
func printUnavailability(ws []runner.FaultWindow, startNs int64) {
	if len(ws) == 0 {
		return
	}
	fmt.Println("unavailability (per fault, until the next: the longest time one show's writes waited with none answered):")
	if startNs != 0 {
		fmt.Printf("  (times since the run's start, %s in the nodes' logs)\n", time.Unix(0, startNs).UTC().Format("2006-01-02T15:04:05.000Z"))
	}
	for _, w := range ws {
		fmt.Printf("  %6.1fs %-17s %-12s %v", w.At.Seconds(), w.Kind, w.Nodes, w.Gap.Round(time.Millisecond))
		if w.Show != "" {
			fmt.Printf(" (%s from %.1fs)", w.Show, w.From.Seconds())
		}
		fmt.Println()
	}
	fmt.Println("  " + runner.GapSummary(ws))
}
