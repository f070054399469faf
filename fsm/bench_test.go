// This file measures the apply path and the read path against a real Pebble
// database: one hold per entry, 256 holds per entry (group commit), a
// 200-seat seat map with half the seats held, and encoding plus decoding a
// log entry. Speed targets live here, never in timed unit tests.
//
//	go test -run='^$' -bench=. -benchtime=2000x ./fsm/
package fsm

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// cpuPerOp starts counting the process's CPU time; the returned func
// reports it per op (Pebble's background work included). Unlike ns/op it
// barely moves when other processes share the machine.
func cpuPerOp(b *testing.B) func() {
	start := cpuNanos()
	return func() { b.ReportMetric(float64(cpuNanos()-start)/float64(b.N), "cpu-ns/op") }
}

func cpuNanos() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// benchRows is a 20 x 500 layout: 10000 seats, the most a show may have.
var benchRows = func() string {
	s := ""
	for r := range 20 {
		if r > 0 {
			s += ","
		}
		s += fmt.Sprintf("%c:500:std", 'A'+r)
	}
	return s
}()

// benchSeat names seat i of a benchRows show.
func benchSeat(i int) string { return fmt.Sprintf("%c%d", 'A'+i/500, i%500+1) }

// benchApplier hands out fresh seats, creating a new show every 10000.
type benchApplier struct {
	b     *testing.B
	m     *Machine
	index uint64
	seat  int
	show  int
}

func newBenchApplier(b *testing.B) *benchApplier {
	return &benchApplier{b: b, m: newTestMachine(b, newTestDB(b), 1), seat: SeatsPerShowMax}
}

// next returns a hold of one fresh seat; it may first apply a CreateShow.
func (a *benchApplier) next() *ledgerpb.Command {
	if a.seat == SeatsPerShowMax {
		a.show++
		a.seat = 0
		a.index++
		a.m.Apply(a.index, at(int64(a.index), cmdShow("admin", fmt.Sprintf("show-%d", a.show), testShow(fmt.Sprintf("s%d", a.show), benchRows, "std:1000:EUR"))))
	}
	a.seat++
	// A fan per seat: a client holds at most HoldsPerClientPerShowMax live holds.
	return cmdHold(fmt.Sprintf("c%d", a.seat), fmt.Sprintf("r%d-%d", a.show, a.seat), fmt.Sprintf("s%d", a.show), 0, benchSeat(a.seat-1))
}

func (a *benchApplier) apply(cmd *ledgerpb.Command, want int) {
	a.index++
	res := a.m.Apply(a.index, at(int64(a.index), cmd))
	if len(res) != want || res[want-1].Code != ledgerpb.Code_CODE_OK {
		a.b.Fatalf("Apply(%d) = %d results, last %s, want %d OK", a.index, len(res), resultString(res[len(res)-1]), want)
	}
}

func BenchmarkApplyHold(b *testing.B) {
	a := newBenchApplier(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		a.apply(a.next(), 1)
	}
}

func BenchmarkApplyBatch256(b *testing.B) {
	a := newBenchApplier(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		cmds := make([]*ledgerpb.Command, 256)
		for i := range cmds {
			cmds[i] = a.next()
		}
		a.apply(cmdBatch(cmds...), 256)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*256), "ns/hold")
}

// benchSeatMapMachine has one 200-seat show, s1, with half its seats held,
// ten per hold: every other row.
func benchSeatMapMachine(b *testing.B) *Machine {
	m := newTestMachine(b, newTestDB(b), 1)
	mustApply(b, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:20:std,B:20:std,C:20:std,D:20:std,E:20:std,F:20:vip,G:20:vip,H:20:vip,I:20:vip,J:20:vip", "std:1000:EUR,vip:2500:EUR"))), 1)
	for r, row := range []string{"A", "C", "E", "G", "I"} {
		for h := range 2 {
			seats := make([]string, 10)
			for i := range seats {
				seats[i] = fmt.Sprintf("%s%d", row, h*10+i+1)
			}
			mustApply(b, m, uint64(2+2*r+h), at(1000, cmdHold(fmt.Sprintf("c%d-%d", r, h), fmt.Sprintf("r%d-%d", r, h), "s1", 0, seats...)), 1)
		}
	}
	return m
}

// BenchmarkSeatMap reads the full map of a show that does not change
// between reads (the seat states come from the cache after the first).
func BenchmarkSeatMap(b *testing.B) {
	m := benchSeatMapMachine(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		v := m.ReadView() // as the servers read
		sm, err := v.SeatMap("s1")
		if err != nil || sm.Held != 100 || sm.Free != 100 {
			b.Fatalf("SeatMap(s1) = held %d free %d, %v; want 100, 100", sm.GetHeld(), sm.GetFree(), err)
		}
		v.Close()
	}
}

// BenchmarkSeatStates is the polling read of BenchmarkSeatMap's show; with
// -uncached every read walks the show's seats in the ledger.
func BenchmarkSeatStates(b *testing.B) {
	m := benchSeatMapMachine(b)
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		if *benchUncached {
			m.led.shows["s1"].states.Store(nil)
		}
		v := m.ReadView()
		sm, err := v.SeatStates("s1")
		if err != nil || sm.Held != 100 || len(sm.SeatStates) != 200 {
			b.Fatalf("SeatStates(s1) = held %d, %d letters, %v; want 100 of 200", sm.GetHeld(), len(sm.GetSeatStates()), err)
		}
		v.Close()
	}
}

// benchUncached makes the seat-map benchmarks drop the show's kept states
// before each read, to measure what a read of a changed show costs.
var benchUncached = flag.Bool("uncached", false, "seat-map benchmarks: drop the kept seat states before each read")

func BenchmarkEncodeDecodeCommand(b *testing.B) {
	cmd := at(1_700_000_000_000, cmdHold("client-42", "request-0123456789", "show-2026-01-01", 300000, "A1", "A2", "A3", "A4"))
	b.ReportAllocs()
	defer cpuPerOp(b)()
	for b.Loop() {
		data, err := EncodeCommand(cmd)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := DecodeCommand(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHoldConflict measures a refused hold in a 200-seat show with
// half its seats held: the stampede's common case, which also computes the
// suggested alternative seats.
func BenchmarkHoldConflict(b *testing.B) {
	m := newTestMachine(b, newTestDB(b), 1)
	mustApply(b, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:20:std,B:20:std,C:20:std,D:20:std,E:20:std,F:20:vip,G:20:vip,H:20:vip,I:20:vip,J:20:vip", "std:1000:EUR,vip:2500:EUR"))), 1)
	index := uint64(1)
	for r, row := range []string{"A", "C", "E", "G", "I"} {
		for h := range 10 {
			index++
			seats := []string{fmt.Sprintf("%s%d", row, 2*h+1), fmt.Sprintf("%s%d", row, 2*h+2)}
			mustApply(b, m, index, at(1000, cmdHold(fmt.Sprintf("c%d-%d", r, h), "r", "s1", 0, seats...)), 1)
		}
	}
	b.ReportAllocs()
	defer cpuPerOp(b)()
	i := 0
	for b.Loop() {
		index++
		i++
		res := m.Apply(index, at(1000, cmdHold("fan", fmt.Sprintf("r%d", i), "s1", 0, "E10", "E11")))
		if res[0].Code != ledgerpb.Code_CODE_SEATS_TAKEN || len(res[0].AlternativeSeatIds) != 2 {
			b.Fatalf("Hold(E10,E11) = %s, want SEATS_TAKEN with two alternatives", resultString(res[0]))
		}
	}
}

// BenchmarkApplyUniform mirrors seatbench's uniform workload on one group:
// 2,500 shows of 200 seats (20,000 over 8 groups), holds of 1-4 adjacent
// seats in a random show, half confirmed and a fifth released in later
// entries, 4 commands per entry (what group commit averages under that
// load). Most holds touch a show, a client and seats for the first time, so
// it counts what the apply path pays for records it must look up.
//
// An op is one encoded raft entry through ApplyEntries, decoding included,
// as raft hands it over. The entries are made in chunks with the timer
// stopped, and the CPU spent making them is taken out of cpu-ns/op, so
// time and allocations are the machine's alone.
func BenchmarkApplyUniform(b *testing.B) { benchApplyUniform(b, 4, false, false) }

// BenchmarkApplyUniformFollower is BenchmarkApplyUniform as a follower
// applies: unanswered (ApplyEntriesUnanswered). A second machine applies
// each entry answered first, timer stopped, for the results the next
// commands follow up; so it reports no cpu-ns/op (the collector's work for
// the lead's garbage runs beside the follower's applies), only ns/cmd and
// the follower's allocations.
func BenchmarkApplyUniformFollower(b *testing.B) { benchApplyUniform(b, 4, false, true) }

// BenchmarkApplyUniformCold is BenchmarkApplyUniform with 8 commands per
// entry (a loaded node's apply batch) and the CPU caches emptied before
// each entry, timer stopped: in a node the apply goroutine finds them
// filled by the log, the transport and the gRPC server, and a replica
// applied a command in about three times the warm benchmark's time
// (docs/PERFORMANCE.md, "The budget of a command"). It counts the cache
// misses of a command: what the state's layout costs in memory reads.
func BenchmarkApplyUniformCold(b *testing.B) { benchApplyUniform(b, 8, true, false) }

// BenchmarkApplyUniformEntrySize is BenchmarkApplyUniform with 1, 4 and 16
// commands per entry: what an entry costs the state machine beyond its
// commands (docs/PERFORMANCE.md, "Per entry, not per command").
func BenchmarkApplyUniformEntrySize(b *testing.B) {
	for _, n := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("cmds=%d", n), func(b *testing.B) { benchApplyUniform(b, n, false, false) })
	}
}

// benchApplyUniform applies entries of perEntry uniform commands (holds,
// and confirms and releases of earlier holds) over 2,500 shows, each entry
// through ApplyEntries as raft hands it over; the making of entries is
// left out of its figures. cold walks a buffer larger than the caches
// before each entry, timer stopped. follower applies unanswered, the
// results coming from a second machine (lead) that applies answered,
// timer stopped.
func benchApplyUniform(b *testing.B, perEntry int, cold, follower bool) {
	const shows, chunk = 2500, 256
	var evict []byte
	if cold {
		evict = make([]byte, 8<<20) // four times a core's L2 here, a quarter of the L3
	}
	m := newTestMachine(b, newTestDB(b), 1)
	var lead *Machine
	if follower {
		lead = newTestMachine(b, newTestDB(b), 1)
	}
	index := uint64(0)
	rows := "A:20:std,B:20:std,C:20:std,D:20:std,E:20:std,F:20:std,G:20:std,H:20:std,I:20:std,J:20:std"
	for s := range shows {
		index++
		show := cmdShow("admin", fmt.Sprintf("r%d", s), testShow(fmt.Sprintf("s%d", s), rows, "std:1000:EUR"))
		mustApply(b, m, index, at(1000, show), 1)
		if lead != nil {
			mustApply(b, lead, index, at(1000, proto.Clone(show).(*ledgerpb.Command)), 1)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var follow []*ledgerpb.Command // confirms and releases of earlier holds
	req := 0
	next := func() *ledgerpb.Command {
		req++
		if len(follow) > 0 && rng.IntN(2) == 0 {
			c := follow[0]
			follow = follow[1:]
			return c
		}
		show := fmt.Sprintf("s%d", rng.IntN(shows))
		n := 1 + rng.IntN(4)
		row, first := rng.IntN(10), rng.IntN(20-n+1)
		seats := make([]string, n)
		for i := range seats {
			seats[i] = fmt.Sprintf("%c%d", 'A'+row, first+i+1)
		}
		return cmdHold(fmt.Sprintf("c%d", req), "r", show, 300_000, seats...)
	}
	type made struct {
		entry []Entry // one entry, as ApplyEntries takes it
		cmds  []*ledgerpb.Command
		res   [][]*ledgerpb.Result
	}
	ops := make([]made, chunk)
	// prepare follows up the chunk just applied and makes the next one.
	prepare := func() {
		for _, op := range ops {
			if len(op.res) == 0 {
				continue // the first chunk
			}
			for i, r := range op.res[0] {
				h := op.cmds[i].GetHold()
				if h == nil || r.Code != ledgerpb.Code_CODE_OK {
					continue
				}
				switch p := rng.IntN(10); {
				case p < 5:
					follow = append(follow, cmdConfirm(op.cmds[i].ClientId, "r2", h.ShowId, r.HoldId, "pay"))
				case p < 7:
					follow = append(follow, cmdRelease(op.cmds[i].ClientId, "r2", h.ShowId, r.HoldId))
				}
			}
		}
		for k := range ops {
			cmds := make([]*ledgerpb.Command, perEntry)
			for i := range cmds {
				cmds[i] = next()
			}
			index++
			data, err := EncodeCommand(at(int64(index)+1000, cmdBatch(cmds...)))
			if err != nil {
				b.Fatal(err)
			}
			ops[k] = made{entry: []Entry{{Index: index, Data: data}}, cmds: cmds}
		}
	}
	b.ReportAllocs()
	var making int64 // CPU spent in prepare (and emptying the caches)
	reads0, writes0 := m.storeReads, m.storeWrites
	ck := startCheckpointer(m) // as raftnode's, behind apply
	defer ck.stop()
	start := cpuNanos()
	k := chunk
	for b.Loop() {
		if k == chunk {
			b.StopTimer()
			t0 := cpuNanos()
			prepare()
			making += cpuNanos() - t0
			k = 0
			b.StartTimer()
		}
		if cold {
			b.StopTimer()
			t0 := cpuNanos()
			for i := 0; i < len(evict); i += 64 {
				evict[i]++
			}
			making += cpuNanos() - t0
			b.StartTimer()
		}
		if follower {
			b.StopTimer()
			t0 := cpuNanos()
			ops[k].res = lead.ApplyEntries(ops[k].entry)
			if lead.CheckpointDue() {
				lead.CheckpointBehind()
			}
			making += cpuNanos() - t0
			b.StartTimer()
			m.ApplyEntriesUnanswered(ops[k].entry)
		} else {
			ops[k].res = m.ApplyEntries(ops[k].entry)
		}
		ck.afterApply()
		k++
	}
	if !follower {
		// With a lead, the collector's work for the lead's garbage runs
		// beside the follower's applies, and no stopped timer leaves it out.
		b.ReportMetric(float64(cpuNanos()-start-making)/float64(b.N), "cpu-ns/op")
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*perEntry), "ns/cmd")
	b.ReportMetric(float64(m.storeReads-reads0)/float64(b.N*perEntry), "reads/cmd")
	b.ReportMetric(float64(m.storeWrites-writes0)/float64(b.N*perEntry), "writes/cmd")
}
