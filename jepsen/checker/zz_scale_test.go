package checker

import (
	"os"
	"strconv"
	"testing"
	"time"
)

func TestZZScale(t *testing.T) {
	ops, _ := strconv.Atoi(os.Getenv("ZOPS"))
	procs, _ := strconv.Atoi(os.Getenv("ZPROCS"))
	info, _ := strconv.Atoi(os.Getenv("ZINFO"))
	seats, _ := strconv.Atoi(os.Getenv("ZSEATS"))
	for seed := int64(1); seed <= 5; seed++ {
		h, _ := generate(seed, genConfig{ops: ops, procs: procs, seats: seats, infoPct: info})
		st := time.Now()
		r := Check(h, Options{Timeout: 60e9})
		t.Logf("seed %d: %s in %v shows %+v info %d", seed, r.Result, time.Since(st), r.Shows, r.Summary.Info)
	}
}
