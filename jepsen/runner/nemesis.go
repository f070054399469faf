package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/seatledger/seatledger/jepsen/netproxy"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// step is one fault of the schedule: inject at At, heal at At+For.
type step struct {
	At, For time.Duration
	Kind    string
}

// schedule draws the run's faults from the seed: a healthy gap, a fault, a
// heal, and so on until the run ends.
func schedule(cfg *Config) []step {
	if len(cfg.Nemeses) == 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xfa017))
	var out []step
	for at := cfg.FaultEvery; at+cfg.FaultFor <= cfg.Duration; at += cfg.FaultEvery + cfg.FaultFor {
		out = append(out, step{At: at, For: cfg.FaultFor, Kind: cfg.Nemeses[rng.IntN(len(cfg.Nemeses))]})
	}
	return out
}

// nemesis injects and heals faults.
type nemesis struct {
	tc  *testCluster
	rec *recorder
	rng *rand.Rand
	// what to undo at heal
	killed, paused []string
	skewed         []string
	// dead are nodes that refused to start on a corrupted log: they stay
	// down (repairing them needs membership changes).
	dead []string
	// problems are harness-level findings (a corruption not detected).
	problems []string
}

func newNemesis(tc *testCluster, rec *recorder, seed int64) *nemesis {
	return &nemesis{tc: tc, rec: rec, rng: rand.New(rand.NewPCG(uint64(seed), 0x4e3e))}
}

// run plays the schedule until ctx ends, healing after each fault.
func (n *nemesis) run(ctx context.Context, steps []step) {
	for _, s := range steps {
		if !sleepUntil(ctx, n.rec.start.Add(s.At)) {
			return
		}
		n.inject(ctx, s)
		n.heal(context.WithoutCancel(ctx))
	}
}

func sleepUntil(ctx context.Context, t time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(t)):
		return true
	}
}

// inject applies one fault and holds it for s.For (some faults act during
// the whole window).
func (n *nemesis) inject(ctx context.Context, s step) {
	ids := n.tc.ids()
	end := time.Now().Add(s.For)
	switch s.Kind {
	case NemPartitionOne:
		n.isolate(n.pick(ids), s.Kind)
	case NemPartitionLeader:
		n.isolate(n.tc.topLeader(ctx, n.pick(ids)), s.Kind)
	case NemPartitionHalf:
		shuffled := n.shuffle(ids)
		minority, majority := shuffled[:len(ids)/2], shuffled[len(ids)/2:]
		n.tc.net.partition([][]string{minority, majority})
		n.rec.fault(s.Kind, fmt.Sprintf("%v | %v", minority, majority))
	case NemPartitionRing:
		n.ring(n.shuffle(ids))
	case NemPartitionFlap:
		n.rec.fault(s.Kind, "")
		for time.Now().Before(end) && ctx.Err() == nil {
			victim := n.pick(ids)
			n.tc.net.partition([][]string{{victim}, without(ids, victim)})
			time.Sleep(time.Duration(200+n.rng.IntN(400)) * time.Millisecond)
			n.tc.net.heal()
			time.Sleep(time.Duration(100+n.rng.IntN(300)) * time.Millisecond)
		}
	case NemKillOne:
		n.kill(ctx, []string{n.pick(ids)}, s.Kind)
	case NemKillLeader:
		n.kill(ctx, []string{n.tc.topLeader(ctx, n.pick(ids))}, s.Kind)
	case NemKillMinority:
		n.kill(ctx, n.shuffle(ids)[:(len(ids)-1)/2], s.Kind)
	case NemKillAll:
		n.kill(ctx, ids, s.Kind)
	case NemPauseLeader:
		id := n.tc.topLeader(ctx, n.pick(ids))
		if err := n.tc.procs.Pause(id); err == nil {
			n.paused = append(n.paused, id)
		}
		n.rec.fault(s.Kind, id)
	case NemClockSkew:
		var desc []string
		for _, id := range n.shuffle(ids)[:1+n.rng.IntN(len(ids))] {
			off := time.Duration(n.rng.IntN(10_000)-5_000) * time.Millisecond
			if n.tc.setClock(ctx, id, off) == nil {
				n.skewed = append(n.skewed, id)
				desc = append(desc, fmt.Sprintf("%s%+v", id, off))
			}
		}
		n.rec.fault(s.Kind, strings.Join(desc, " "))
	case NemClockJump:
		id := n.tc.topLeader(ctx, n.pick(ids))
		if n.tc.setClock(ctx, id, 10*time.Second) == nil {
			n.skewed = append(n.skewed, id)
		}
		n.rec.fault(s.Kind, id+"+10s")
	case NemLeaderTransfer:
		n.rec.fault(s.Kind, "")
		for time.Now().Before(end) && ctx.Err() == nil {
			n.transfer(ctx)
			time.Sleep(time.Duration(300+n.rng.IntN(700)) * time.Millisecond)
		}
	case NemDelay:
		d := time.Duration(20+n.rng.IntN(60)) * time.Millisecond
		n.tc.net.each(func(_, _ string, l *netproxy.Link) { l.SetDelay(d, d/2) })
		n.rec.fault(s.Kind, d.String())
	case NemCorruptLog:
		n.corrupt(ctx)
	case NemMembership:
		for time.Now().Before(end) && ctx.Err() == nil {
			n.rec.fault(NemMembership, n.moveReplica(ctx))
			time.Sleep(time.Duration(200+n.rng.IntN(500)) * time.Millisecond)
		}
	case NemLoss:
		n.tc.net.each(func(_, _ string, l *netproxy.Link) { l.SetLoss(0.05) })
		n.rec.fault(s.Kind, "5%")
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(end)):
	}
}

func (n *nemesis) pick(ids []string) string { return ids[n.rng.IntN(len(ids))] }

func (n *nemesis) shuffle(ids []string) []string {
	out := slices.Clone(ids)
	n.rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func without(ids []string, x string) []string {
	var out []string
	for _, id := range ids {
		if id != x {
			out = append(out, id)
		}
	}
	return out
}

func (n *nemesis) isolate(id, kind string) {
	n.tc.net.partition([][]string{{id}, without(n.tc.ids(), id)})
	n.rec.fault(kind, id)
}

// ring cuts the links between nodes that are not neighbours on a ring of
// order: with 5 nodes each one sees itself and two neighbours, a different
// majority for each; with 3 it is a bridge (the ends cannot talk).
func (n *nemesis) ring(order []string) {
	var cut [][2]string
	k := len(order)
	for i := 0; i < k; i++ {
		for j := i + 1; j < k; j++ {
			d := min(j-i, k-(j-i))
			if d > 1 || (k == 3 && i == 0 && j == 2) {
				cut = append(cut, [2]string{order[i], order[j]})
			}
		}
	}
	n.tc.net.cutPairs(cut)
	n.rec.fault(NemPartitionRing, fmt.Sprintf("order %v", order))
}

// kill kills ids and records the fault with the groups it leaves without a
// quorum of live replicas: for those, writes stopping until the heal is the
// expected outcome, not a liveness bug.
func (n *nemesis) kill(ctx context.Context, ids []string, kind string) {
	replicas := n.tc.replicas(ctx) // before the kill: the nodes answer now
	for _, id := range ids {
		if n.tc.procs.Kill(id) == nil {
			n.killed = append(n.killed, id)
		}
	}
	desc := strings.Join(ids, ",")
	// A node a corrupt-log left down counts as down too.
	if lost := quorumLost(replicas, append(slices.Clone(ids), n.dead...)); lost != "" {
		desc += "; no quorum: " + lost
	}
	n.rec.fault(kind, desc)
}

// quorumLost names the groups (with their replicas) that down leaves
// without a majority of live replicas, as "g1[n2 n3 n4] ...", or "".
func quorumLost(replicas map[uint32][]string, down []string) string {
	groups := make([]uint32, 0, len(replicas))
	for g := range replicas {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	var out []string
	for _, g := range groups {
		reps := replicas[g]
		dead := 0
		for _, r := range reps {
			if slices.Contains(down, r) {
				dead++
			}
		}
		if live := len(reps) - dead; 2*live <= len(reps) {
			out = append(out, fmt.Sprintf("g%d%v", g, reps))
		}
	}
	return strings.Join(out, " ")
}

// transfer moves one random group's leadership to a random other replica.
func (n *nemesis) transfer(ctx context.Context) {
	leaders := n.tc.leaders(ctx)
	if len(leaders) == 0 {
		return
	}
	groups := make([]uint32, 0, len(leaders))
	for g := range leaders {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	g := groups[n.rng.IntN(len(groups))]
	from := leaders[g]
	to := n.pick(without(n.tc.ids(), from))
	cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := n.tc.admin[from].TransferLeader(cctx, &ledgerpb.TransferLeaderRequest{Group: g, ToNode: to})
	outcome := "ok"
	if err != nil {
		outcome = "failed"
	}
	n.rec.fault("transfer", fmt.Sprintf("group %d %s->%s %s", g, from, to, outcome))
}

// heal undoes every fault: network, paused and killed processes, clocks.
func (n *nemesis) heal(ctx context.Context) {
	n.tc.net.heal()
	for _, id := range n.paused {
		n.tc.procs.Resume(id)
	}
	for _, id := range n.killed {
		if slices.Contains(n.dead, id) {
			continue
		}
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if err := n.tc.procs.Restart(rctx, id); err != nil {
			n.rec.fault("restart-failed", fmt.Sprintf("%s: %v", id, err))
		}
		cancel()
	}
	for _, id := range n.skewed {
		n.tc.setClock(ctx, id, 0)
	}
	n.paused, n.killed, n.skewed = nil, nil, nil
	n.rec.fault("heal", "")
}

// corrupt stops one node, flips a bit in one of its raft log entries, and
// checks that the node then refuses to start. At most one node is corrupted
// per run, and it stays down.
func (n *nemesis) corrupt(ctx context.Context) {
	if len(n.dead) > 0 {
		n.rec.fault(NemCorruptLog, "skipped: a node is already down")
		return
	}
	id := n.pick(n.tc.ids())
	node := n.tc.procs.Node(id)
	if err := n.tc.procs.Kill(id); err != nil {
		n.rec.fault(NemCorruptLog, fmt.Sprintf("%s: kill: %v", id, err))
		return
	}
	where, err := corruptLogEntry(node.DataDir, n.rng)
	if err != nil {
		n.rec.fault(NemCorruptLog, fmt.Sprintf("%s: %v (restarting it)", id, err))
		n.killed = append(n.killed, id)
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	err = n.tc.procs.Restart(rctx, id)
	cancel()
	logTail, _ := os.ReadFile(node.LogPath)
	detected := err != nil && strings.Contains(string(logTail), "refuses to start on a damaged log")
	if !detected {
		n.problems = append(n.problems, fmt.Sprintf("corrupt-log: %s started on a corrupted log (%s) without detecting it", id, where))
		n.rec.fault(NemCorruptLog, fmt.Sprintf("%s %s: NOT DETECTED", id, where))
		return
	}
	n.dead = append(n.dead, id)
	n.rec.fault(NemCorruptLog, fmt.Sprintf("%s %s: %s", id, where, corruptLeftDown))
}

// corruptLeftDown ends the description of a corrupt-log fault whose node
// refused to start, as it must, and stays down.
const corruptLeftDown = "detected, node refuses to start"
