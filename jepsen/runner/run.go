package runner

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/jepsen/history"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Result is what a run produced.
type Result struct {
	History     *history.History
	HistoryPath string
	// Unavailability is, for each fault that can stop writes, the longest
	// time one show's writes waited with none answered (see Unavailability).
	Unavailability []FaultWindow
	// Problems are failures the runner itself saw (a corrupted log a node
	// did not detect, no snapshot installed where one was expected); each
	// is a violation.
	Problems []string
	// SnapshotInstalls counts the snapshots replicas installed from their
	// leaders during the run (from the nodes' logs).
	SnapshotInstalls int
	// CheckpointsBehind counts the checkpoints replicas wrote behind
	// apply (Config.CheckpointBytes).
	CheckpointsBehind int
	// LogFloorMoves counts the moves of the nodes' raft log floors (the
	// cleaner's, shrunk by logCleanerTuning).
	LogFloorMoves int
}

// convergeTimeout bounds the wait for replicas to agree after healing.
const convergeTimeout = 90 * time.Second

// Run runs one test and returns its history (not yet checked). log gets
// progress lines.
func Run(ctx context.Context, cfg Config, log io.Writer) (*Result, error) {
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	// A run must start from empty nodes: old state would answer this run's
	// request ids (the same seed makes the same ones) with old results.
	if _, err := os.Stat(filepath.Join(cfg.Dir, "n1")); err == nil {
		return nil, fmt.Errorf("%s holds nodes of an earlier run: use a fresh --dir", cfg.Dir)
	}
	if cfg.Binary != "" {
		if err := checkFaultBuild(ctx, cfg.Binary); err != nil {
			return nil, err
		}
	}
	if cfg.Binary == "" {
		cfg.Binary = filepath.Join(cfg.Dir, "seatd")
		fmt.Fprintf(log, "jepsen: building seatd into %s\n", cfg.Binary)
		if err := proccluster.BuildFaults(ctx, cfg.Binary); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(log, "jepsen: seed %d, %d nodes, %d groups, %d clients, %v, nemeses %v, broken %q, tls %v\n",
		cfg.Seed, cfg.Nodes, cfg.Groups, cfg.Clients, cfg.Duration, cfg.Nemeses, cfg.Broken, cfg.TLS)
	tc, err := startTestCluster(ctx, &cfg)
	if err != nil {
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	defer tc.close()
	// Creating shows is an admin call: through the admin connection.
	setup := ledgerpb.NewBookingClient(tc.adminConns[0])
	if err := createShows(ctx, setup, cfg.Seed, showCount(cfg.Duration)); err != nil {
		return nil, err
	}
	if err := openRoom(ctx, tc, cfg.Seed); err != nil { // room.go
		return nil, err
	}

	rec := &recorder{start: time.Now()}
	rec.processes.Store(int64(cfg.Clients))
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		c := newClient(i, &cfg, tc, rec)
		wg.Add(1)
		go func() { defer wg.Done(); c.run(runCtx) }()
	}
	rec.processes.Add(1 + roomClients) // cfg.Clients is the cleanup's process
	for i := 0; i < roomClients; i++ {
		c := newClient(cfg.Clients+1+i, &cfg, tc, rec)
		wg.Add(1)
		go func() { defer wg.Done(); c.runRoom(runCtx) }()
	}
	nem := newNemesis(tc, rec, cfg.Seed)
	steps := schedule(&cfg)
	wg.Add(1)
	go func() { defer wg.Done(); nem.run(runCtx, steps) }()
	progress := time.NewTicker(5 * time.Second)
	defer progress.Stop()
	for waiting := true; waiting; {
		select {
		case <-runCtx.Done():
			waiting = false
		case <-progress.C:
			rec.mu.Lock()
			fmt.Fprintf(log, "jepsen: %5.1fs %d ops, %d faults\n", time.Since(rec.start).Seconds(), len(rec.mu.ops), len(rec.mu.faults))
			rec.mu.Unlock()
		}
	}
	wg.Wait()
	nem.heal(ctx)
	if n := resolveInfoHolds(ctx, rec, newClient(cfg.Clients, &cfg, tc, rec)); n > 0 {
		fmt.Fprintf(log, "jepsen: healed; re-sent %d best-available hold(s) of unknown outcome to learn their seats\n", n)
	}
	if n := resolveQueues(ctx, rec, newClient(cfg.Clients, &cfg, tc, rec)); n > 0 {
		fmt.Fprintf(log, "jepsen: healed; settled %d queue entries of unknown fate (left, or their offer read and released)\n", n)
	}
	fmt.Fprintf(log, "jepsen: healed; waiting for replicas to converge\n")

	h := &history.History{Seed: cfg.Seed, StartUnixNano: rec.start.UnixNano(), Layouts: showLayouts(cfg.Seed, showCount(cfg.Duration)),
		Ops: rec.mu.ops, Faults: rec.mu.faults}
	final, err := finalRead(ctx, tc, tc.liveBooking(), h, len(nem.dead))
	if err != nil {
		// Still write the history: it is the evidence.
		fmt.Fprintf(log, "jepsen: final read failed: %v\n", err)
	}
	h.Final = final
	res := &Result{History: h, HistoryPath: filepath.Join(cfg.Dir, "history.jsonl"),
		Unavailability: Unavailability(h), Problems: nem.problems}
	res.SnapshotInstalls = countInstalls(tc.logPaths())
	fmt.Fprintf(log, "jepsen: %d snapshot installs\n", res.SnapshotInstalls)
	res.CheckpointsBehind = countLines(tc.logPaths(), checkpointBehindMsg)
	fmt.Fprintf(log, "jepsen: %d checkpoints behind apply\n", res.CheckpointsBehind)
	res.LogFloorMoves = countLines(tc.logPaths(), floorMovedMsg)
	fmt.Fprintf(log, "jepsen: %d raft log floor moves\n", res.LogFloorMoves)
	if res.LogFloorMoves == 0 && cfg.Duration >= installRunMin {
		res.Problems = append(res.Problems, fmt.Sprintf("no node moved its raft log's floor in a %v run (%s=%s): the log's cleaner went untested", cfg.Duration, logCleanerEnv, logCleanerTuning))
	}
	if res.CheckpointsBehind == 0 && cfg.Duration >= installRunMin && cfg.CheckpointBytes <= checkpointBytesDefault {
		res.Problems = append(res.Problems, fmt.Sprintf("no replica checkpointed behind apply in a %v run with --checkpoint-bytes %d: the write-behind went untested", cfg.Duration, cfg.CheckpointBytes))
	}
	if res.SnapshotInstalls == 0 && cfg.installsExpected(h.Faults) {
		res.Problems = append(res.Problems, fmt.Sprintf("no replica installed a snapshot, though the run (%v, snapshots every %d entries, %d kept) had faults that leave replicas behind: snapshot install went untested",
			cfg.Duration, cfg.SnapshotThreshold, cfg.TrailingLogs))
	}
	f, ferr := os.Create(res.HistoryPath)
	if ferr != nil {
		return res, ferr
	}
	defer f.Close()
	if werr := h.Write(f); werr != nil {
		return res, werr
	}
	return res, err
}

// checkFaultBuild refuses a seatd built without the faults tag: the run
// needs its test-only flags (clock skew, broken modes).
func checkFaultBuild(ctx context.Context, binary string) error {
	out, _ := exec.CommandContext(ctx, binary, "serve", "-h").CombinedOutput()
	if !strings.Contains(string(out), "unsafe-test-hooks") {
		return fmt.Errorf("%s is not a fault build of seatd (its serve has no --unsafe-test-hooks): build it with go build -tags faults ./cmd/seatd", binary)
	}
	return nil
}

// newClient is client i of the run, with a connection to every node.
func newClient(i int, cfg *Config, tc *testCluster, rec *recorder) *client {
	c := &client{id: i, process: i, seed: cfg.Seed, rec: rec, nodeIDs: tc.ids(),
		rng: rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))}
	for _, conn := range tc.conns {
		c.booking = append(c.booking, ledgerpb.NewBookingClient(conn))
		c.rooms = append(c.rooms, ledgerpb.NewWaitingRoomClient(conn))
	}
	return c
}

// finalRead waits until the holds of the run have expired and every group's
// replicas agree on their applied index, then reads every show and every
// known hold linearizably and takes every replica's digest.
func finalRead(ctx context.Context, tc *testCluster, b ledgerpb.BookingClient, h *history.History, dead int) (*history.Final, error) {
	// Let the last holds expire so the expiry driver's last entry is in.
	time.Sleep(holdTTLMaxS*time.Second + time.Second)
	final := &history.Final{Seats: map[string]map[string]string{}, Holds: map[string]history.FinalHold{},
		Digests: map[uint32]map[string]string{}, Applied: map[uint32]uint64{}}
	if err := converge(ctx, tc, final, dead); err != nil {
		return final, err
	}
	shows := map[string]bool{}
	for _, op := range h.Ops {
		if !op.Kind.Room() { // the room's show is read back by finalRooms
			shows[op.Show] = true
		}
	}
	for _, show := range sortedKeys(shows) {
		sm, err := retryRead(ctx, func(ctx context.Context) (*ledgerpb.SeatMap, error) {
			return b.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show, Consistency: ledgerpb.Consistency_LINEARIZABLE})
		})
		if err != nil {
			return final, fmt.Errorf("final read of %s: %w", show, err)
		}
		states := map[string]string{}
		for _, s := range sm.Seats {
			states[s.SeatId] = s.State.String()
		}
		final.Seats[show] = states
		final.ReadAtMs = max(final.ReadAtMs, sm.AsOf.AsTime().UnixMilli())
	}
	holds := knownHolds(h.Ops)
	for _, id := range sortedKeys(holds) {
		hi, err := retryRead(ctx, func(ctx context.Context) (*ledgerpb.HoldInfo, error) {
			return b.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: holds[id], HoldId: id, Consistency: ledgerpb.Consistency_LINEARIZABLE})
		})
		if reasonOf(err) == "HOLD_NOT_FOUND" {
			continue
		}
		if err != nil {
			return final, fmt.Errorf("final read of hold %s: %w", id, err)
		}
		final.Holds[id] = history.FinalHold{Show: hi.ShowId, Seats: hi.SeatIds, State: hi.State.String(),
			ExpiresAtMs: hi.ExpiresAt.AsTime().UnixMilli(), PaymentRef: hi.PaymentRef}
	}
	var err error
	final.Rooms, err = finalRooms(ctx, tc, h) // room.go
	return final, err
}

func retryRead[T any](ctx context.Context, read func(context.Context) (T, error)) (T, error) {
	var last error
	var zero T
	for try := 0; try < 50; try++ {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		v, err := read(rctx)
		cancel()
		if err == nil {
			return v, nil
		}
		last = err
		if classify(err) == clsDone {
			return zero, err
		}
		time.Sleep(200 * time.Millisecond)
	}
	return zero, last
}

// converge polls every node's Status until each group's replicas report one
// digest at one applied index, and records those digests. dead nodes (that
// refused to start) are not waited for.
func converge(ctx context.Context, tc *testCluster, final *history.Final, dead int) error {
	deadline := time.Now().Add(convergeTimeout)
	for {
		byGroup := map[uint32]map[string]*ledgerpb.GroupStatus{}
		for _, id := range tc.ids() {
			st := tc.status(ctx, id, true)
			if st == nil {
				continue
			}
			for _, g := range st.Groups {
				if byGroup[g.Group] == nil {
					byGroup[g.Group] = map[string]*ledgerpb.GroupStatus{}
				}
				byGroup[g.Group][id] = g
			}
		}
		agreed := len(byGroup) == tc.cfg.Groups
		for _, reps := range byGroup {
			var idx uint64
			first := true
			for _, g := range reps {
				if first {
					idx, first = g.DigestIndex, false
				}
				agreed = agreed && g.DigestIndex == idx && len(reps) >= replicasOf(tc.cfg)-dead
			}
		}
		if agreed || time.Now().After(deadline) {
			for group, reps := range byGroup {
				final.Digests[group] = map[string]string{}
				top := uint64(0)
				for _, g := range reps {
					top = max(top, g.DigestIndex)
				}
				final.Applied[group] = top
				for id, g := range reps {
					if g.DigestIndex == top {
						final.Digests[group][id] = g.Digest
					}
				}
			}
			if !agreed {
				return fmt.Errorf("replicas did not converge within %v", convergeTimeout)
			}
			return nil
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// replicasOf is the number of replicas per group seatd uses by default.
func replicasOf(cfg *Config) int { return min(3, cfg.Nodes) }
