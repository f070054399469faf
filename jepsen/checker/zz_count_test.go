package checker
import ("testing";"time";"os";"strconv";"github.com/anishathalye/porcupine";"github.com/seatledger/seatledger/jepsen/history")
func TestZZCount(t *testing.T) {
	ops, _ := strconv.Atoi(os.Getenv("ZOPS"))
	procs, _ := strconv.Atoi(os.Getenv("ZPROCS"))
	info, _ := strconv.Atoi(os.Getenv("ZINFO"))
	seats, _ := strconv.Atoi(os.Getenv("ZSEATS"))
	seed, _ := strconv.Atoi(os.Getenv("ZSEED"))
	h, _ := generate(int64(seed), genConfig{ops: ops, procs: procs, seats: seats, infoPct: info})
	rep := newReporter()
	lops := logicalOps(h, rep)
	_, by := byShow(lops)
	sm := buildShow(show1, by[show1], map[string]string{}, h.Final, rep)
	m := sm.porcupineModel()
	counts := map[string]int{}
	maxDone := int32(0)
	m.Step = func(st, in, _ any) (bool, any) {
		o := in.(*mop)
		next, _ := sm.step(st.(*state), o, false)
		k := string(o.kind)+"/"+string(o.outcome)
		if next == nil { k += " REJ" } else if next.done > maxDone { maxDone = next.done }
		counts[k]++
		if next == nil { return false, st }
		return true, next
	}
	sm.quiet = true
	st := time.Now()
	r := porcupine.CheckOperationsTimeout(m, sm.operations(), 10*time.Second)
	t.Logf("%s in %v: %v maxDone %d of %d", r, time.Since(st), counts, maxDone, sm.definite)
	_ = history.OK
}
