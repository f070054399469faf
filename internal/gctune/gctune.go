// Package gctune paces Go's garbage collector for a seatd process: each
// collection leaves the heap room to grow by the larger of its live size
// (Go's default, GOGC=100) and a fixed headroom.
//
// Why: a collection's mark work is proportional to the live heap, and at
// GOGC=100 collections come every time the program has allocated as much
// as is live. A node's live heap is small next to the memory it may use
// (its ledger, a few hundred MiB at most), while it allocates for every
// client call; so at the default pace a loaded node spends a large share
// of its CPU collecting a heap that is in no danger of outgrowing the
// machine. With a headroom H, a heap of L live bytes is collected when it
// reaches L + max(L, H): for L ≥ H exactly Go's default, below it fewer
// collections for at most H more bytes. The memory a node may take stays
// stated and bounded: twice its live heap, or its live heap plus H.
//
// It is the pattern of Uber's and TiDB's GC tuners: GOGC recomputed after
// every collection from the live heap, through a finalizer that re-arms
// itself. An operator who sets GOGC in the environment keeps it: Start then
// does nothing. GOMEMLIMIT, if set, still bounds the heap as Go documents.
package gctune

import (
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// percentMax bounds the GOGC it sets: a nearly empty heap would otherwise
// ask for an absurd percentage, and the headroom already bounds the bytes.
const percentMax = 10000

const liveMetric = "/gc/heap/live:bytes"

// Tuner recomputes GOGC after each collection until Stop.
type Tuner struct {
	headroom uint64
	stopped  atomic.Bool
	sample   []metrics.Sample
	last     int
	// tuned, when set (tests), hears each percentage set.
	tuned func(percent int)
}

// sentinel is garbage made to be collected: its finalizer runs once per
// collection, re-arms itself, and retunes.
type sentinel struct{ t *Tuner }

// Start paces the collector with headroom bytes (see the package comment).
// It returns nil, and changes nothing, when headroom is 0 or GOGC is set
// in the environment.
func Start(headroom uint64) *Tuner {
	if headroom == 0 {
		return nil
	}
	if _, set := os.LookupEnv("GOGC"); set {
		return nil
	}
	return start(headroom, nil)
}

func start(headroom uint64, tuned func(int)) *Tuner {
	t := &Tuner{headroom: headroom, sample: []metrics.Sample{{Name: liveMetric}}, last: -1, tuned: tuned}
	t.tune()
	runtime.SetFinalizer(&sentinel{t: t}, afterGC)
	return t
}

func afterGC(s *sentinel) {
	if s.t.stopped.Load() {
		return
	}
	s.t.tune()
	runtime.SetFinalizer(s, afterGC) // alive again until the next collection
}

// percent is the GOGC that lets a live heap grow by max(live, headroom).
func percent(live, headroom uint64) int {
	if live == 0 || headroom/percentMax*100 >= live {
		return percentMax
	}
	return max(100, int(headroom*100/live))
}

func (t *Tuner) tune() {
	metrics.Read(t.sample)
	var live uint64
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		live = t.sample[0].Value.Uint64()
	}
	p := percent(live, t.headroom)
	// Small changes are not worth the call; the pace is not that exact.
	if t.last < 0 || p > t.last+t.last/20 || p < t.last-t.last/20 {
		debug.SetGCPercent(p)
		t.last = p
		if t.tuned != nil {
			t.tuned(p)
		}
	}
}

// Stop gives the collector back its default pace (GOGC=100). A nil Tuner
// (Start changed nothing) is fine.
func (t *Tuner) Stop() {
	if t == nil || t.stopped.Swap(true) {
		return
	}
	debug.SetGCPercent(100)
}
