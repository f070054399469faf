// This file proves backup and restore end to end with real seatd processes:
// a 3-node cluster (2 groups) takes shows in both groups, confirmed
// bookings, a long hold and a short one; seatctl snapshot save writes one
// backup file; the cluster stops; seatd restore seeds a NEW 3-node
// cluster's data directories (new ports) from the file; started, the new
// cluster has every booking CONFIRMED with its seats BOOKED, the long hold
// still HELD with the same expiry (and confirmable with its token), the
// short hold EXPIRED once its time passed and its seat free again, new
// holds working, and seatctl check digest OK. A backup with one flipped
// byte is refused by seatd restore with a clear error, writing nothing.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/seatledger/seatledger/internal/proccluster"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// backupHold is a hold made before the backup, and what it must be after.
type backupHold struct {
	show, id, token string
	seats           []string
}

func TestBackupRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real seatd processes")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*e2eTimeout)
	defer cancel()
	dir := t.TempDir()
	bin := seatdBinary(t)
	old, err := proccluster.Start(ctx, proccluster.Config{Binary: bin, Nodes: 3, Dir: filepath.Join(dir, "old"), Groups: e2eGroups})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	sc := clusterCtl(t, ctx, old)

	// One show in each group, so the backup holds state in both.
	shows := showPerGroup(e2eGroups)
	for _, show := range shows {
		file := filepath.Join(dir, show+".yaml")
		if err := os.WriteFile(file, []byte(strings.Replace(e2eShowYAML, "e2e-show", show, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		sc.ok("show", "create", file)
	}
	var confirmed []backupHold
	for i, show := range shows {
		h := sc.holdOf(show, "10m", "A1", "A2")
		sc.ok("confirm", show, h.id, "--client-id", "e2e", "--token", h.token, "--payment-ref", fmt.Sprintf("pay-%d", i))
		confirmed = append(confirmed, h)
	}
	long := sc.holdOf(shows[0], "20m", "B1", "B2")
	short := sc.holdOf(shows[1], "3s", "B5")
	shortExpiry := time.Now().Add(3 * time.Second)
	booking := dialBooking(t, old.Nodes()[0].GRPCAddr)
	longBefore := getHold(t, ctx, booking, long)

	file := filepath.Join(dir, "cluster.backup")
	out := sc.ok("snapshot", "save", file)
	t.Logf("seatctl snapshot save %s:\n%s", file, out)
	if strings.Count(out, "\n") != e2eGroups+2 || !strings.Contains(out, "saved "+file+": 2 groups") {
		t.Fatalf("snapshot save printed:\n%s\nwant a header, one line per group and a summary", out)
	}
	if err := old.Close(); err != nil {
		t.Logf("stopping the old cluster: %v", err)
	}

	// A damaged backup is refused before anything is written.
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x01
	bad := filepath.Join(dir, "damaged.backup")
	if err := os.WriteFile(bad, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	untouched := filepath.Join(dir, "untouched")
	cmd := exec.CommandContext(ctx, bin, "restore", "--from", bad, "--id", "n1", "--data-dir", untouched,
		"--peers", "n1=127.0.0.1:1/127.0.0.1:2", "--groups", fmt.Sprint(e2eGroups), "--replicas", "1")
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "refusing to restore, nothing was written") || !strings.Contains(string(msg), "checksum mismatch") {
		t.Fatalf("seatd restore of a damaged backup = %v:\n%s\nwant a refusal naming the checksum", err, msg)
	}
	if _, err := os.Stat(untouched); !os.IsNotExist(err) {
		t.Fatalf("seatd restore of a damaged backup created %s (%v)", untouched, err)
	}

	// A new cluster on new ports, its data directories seeded first.
	fresh, err := proccluster.Start(ctx, proccluster.Config{Binary: bin, Nodes: 3, Dir: filepath.Join(dir, "new"), Groups: e2eGroups,
		Prepare: func(c *proccluster.Cluster) error {
			for _, n := range c.Nodes() {
				cmd := exec.CommandContext(ctx, bin, "restore", "--from", file, "--id", n.ID, "--data-dir", n.DataDir,
					"--peers", c.PeersFlag(), "--groups", fmt.Sprint(e2eGroups))
				out, err := cmd.CombinedOutput()
				if err != nil {
					return fmt.Errorf("seatd restore %s: %v\n%s", n.ID, err, out)
				}
				t.Logf("seatd restore %s:\n%s", n.ID, out)
			}
			return nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fresh.Close() })
	sc = clusterCtl(t, ctx, fresh)
	booking = dialBooking(t, fresh.Nodes()[1].GRPCAddr)

	for _, h := range confirmed {
		if got := getHold(t, ctx, booking, h); got.State != ledgerpb.HoldState_HOLD_STATE_CONFIRMED {
			t.Errorf("GetHold(%s of %s) after restore = %v, want CONFIRMED", h.id, h.show, got.State)
		}
		wantSeats(t, ctx, booking, h.show, ledgerpb.SeatState_BOOKED, h.seats...)
	}
	longAfter := getHold(t, ctx, booking, long)
	if longAfter.State != ledgerpb.HoldState_HOLD_STATE_HELD || !longAfter.ExpiresAt.AsTime().Equal(longBefore.ExpiresAt.AsTime()) {
		t.Errorf("long hold after restore = %v expiring %v, want HELD expiring %v", longAfter.State, longAfter.ExpiresAt.AsTime(), longBefore.ExpiresAt.AsTime())
	}
	wantSeats(t, ctx, booking, long.show, ledgerpb.SeatState_HELD, long.seats...)
	time.Sleep(time.Until(shortExpiry.Add(time.Second)))
	waitHoldState(t, ctx, booking, short, ledgerpb.HoldState_HOLD_STATE_EXPIRED)
	wantSeats(t, ctx, booking, short.show, ledgerpb.SeatState_FREE, short.seats...)

	// The restored cluster takes writes: a restored hold confirms with
	// its token, the expired hold's seat and a new seat can be held, and a
	// booked seat cannot.
	sc.ok("confirm", long.show, long.id, "--client-id", "e2e", "--token", long.token, "--payment-ref", "pay-long")
	wantSeats(t, ctx, booking, long.show, ledgerpb.SeatState_BOOKED, long.seats...)
	sc.holdOf(short.show, "5m", "B5", "B6")
	if _, errOut, code := sc.run("hold", confirmed[0].show, "--client-id", "late", "A1"); code != exitFailure || !strings.Contains(errOut, "A1") {
		t.Errorf("hold of booked A1 after restore = exit %d, stderr %q; want refused naming A1", code, errOut)
	}
	if out := sc.ok("check", "digest"); strings.Count(out, " OK ") != e2eGroups {
		t.Fatalf("check digest after restore is not OK for every group:\n%s", out)
	}
}

// clusterCtl is seatctl against every node of c, with its admin token.
func clusterCtl(t *testing.T, ctx context.Context, c *proccluster.Cluster) *seatctl {
	var eps []string
	for _, n := range c.Nodes() {
		eps = append(eps, n.GRPCAddr)
	}
	return &seatctl{t: t, ctx: ctx, endpoints: strings.Join(eps, ","), tokenFile: c.AdminTokenPath()}
}

// showPerGroup returns one show id per group.
func showPerGroup(groups uint32) []string {
	m := shard.Map{Groups: groups}
	out := make([]string, groups)
	for i, found := 0, uint32(0); found < groups; i++ {
		id := fmt.Sprintf("backup-show-%d", i)
		if g := m.GroupFor(id); out[g] == "" {
			out[g], found = id, found+1
		}
	}
	return out
}

// holdOf holds seats of show for ttl and returns the hold.
func (sc *seatctl) holdOf(show, ttl string, seats ...string) backupHold {
	sc.t.Helper()
	out := sc.ok(append([]string{"hold", show, "--client-id", "e2e", "--ttl", ttl, "-o", "json"}, seats...)...)
	var resp struct {
		HoldID    string `json:"hold_id"`
		HoldToken string `json:"hold_token"`
	}
	if err := json.Unmarshal([]byte(out), &resp); err != nil || resp.HoldID == "" {
		sc.t.Fatalf("hold -o json = %q (%v), want a hold_id", out, err)
	}
	return backupHold{show: show, id: resp.HoldID, token: resp.HoldToken, seats: seats}
}

func dialBooking(t *testing.T, addr string) ledgerpb.BookingClient {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return ledgerpb.NewBookingClient(conn)
}

func getHold(t *testing.T, ctx context.Context, c ledgerpb.BookingClient, h backupHold) *ledgerpb.HoldInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	info, err := c.GetHold(ctx, &ledgerpb.GetHoldRequest{ShowId: h.show, HoldId: h.id})
	if err != nil {
		t.Fatalf("GetHold(%s of %s) = %v", h.id, h.show, err)
	}
	return info
}

// waitHoldState waits (bounded) for the leader's expiry to reach the hold.
func waitHoldState(t *testing.T, ctx context.Context, c ledgerpb.BookingClient, h backupHold, want ledgerpb.HoldState) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := getHold(t, ctx, c, h).State
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GetHold(%s of %s) = %v after 10s, want %v", h.id, h.show, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// wantSeats checks seats' states in show's seat map (a linearizable read).
func wantSeats(t *testing.T, ctx context.Context, c ledgerpb.BookingClient, show string, want ledgerpb.SeatState, seats ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	sm, err := c.GetSeatMap(ctx, &ledgerpb.GetSeatMapRequest{ShowId: show})
	if err != nil {
		t.Fatalf("GetSeatMap(%s) = %v", show, err)
	}
	state := map[string]ledgerpb.SeatState{}
	for _, s := range sm.Seats {
		state[s.SeatId] = s.State
	}
	var wrong bytes.Buffer
	for _, s := range seats {
		if state[s] != want {
			fmt.Fprintf(&wrong, " %s=%v", s, state[s])
		}
	}
	if wrong.Len() > 0 {
		t.Errorf("seat map of %s:%s, want %v", show, wrong.String(), want)
	}
}
