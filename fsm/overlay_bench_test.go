package fsm

// What apply's write-behind costs per record: into Pebble (one indexed
// batch committed per apply batch, as txn.go did) against into the
// overlay (records appended and sealed per apply batch). Keys and values
// are shaped like the uniform load's: a live hold, a request record, a
// change record and its revision per command. The seal, get and seek
// benchmarks measure the overlay alone, on records made up front.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// overlayBenchBatch is the commands per apply batch.
const overlayBenchBatch = 256

type benchRecords struct {
	rng   *rand.Rand
	rev   uint64
	key   []byte
	value []byte
}

func (g *benchRecords) command(write func(k, v []byte)) {
	g.rev++
	show := fmt.Appendf(nil, "show-%03d", g.rng.IntN(64))
	g.key = append(g.key[:0], 'G', 0, 0, 0, 1, kindLiveHold, byte(len(show)))
	g.key = append(g.key, show...)
	g.key = fmt.Appendf(g.key, "h%016x", g.rng.Uint64())
	write(g.key, g.value[:160])
	g.key = append(g.key[:0], 'G', 0, 0, 0, 1, kindRequest)
	g.key = binary.BigEndian.AppendUint64(g.key, 7)
	g.key = fmt.Appendf(g.key, "\x0cc%011d\x10r%015x", g.rng.IntN(1e6), g.rng.Uint64())
	write(g.key, g.value[:110])
	g.key = append(g.key[:0], 'G', 0, 0, 0, 1, kindEvent)
	g.key = binary.BigEndian.AppendUint64(g.key, 7)
	g.key = append(g.key, byte(len(show)))
	g.key = append(g.key, show...)
	g.key = binary.BigEndian.AppendUint64(g.key, g.rev)
	write(g.key, g.value[:40])
	if g.rev%2 == 0 {
		g.key = append(g.key[:0], 'G', 0, 0, 0, 1, kindEventRev)
		g.key = binary.BigEndian.AppendUint64(g.key, 7)
		g.key = binary.BigEndian.AppendUint64(g.key, g.rev)
		write(g.key, g.value[:12])
	}
}

func newBenchRecords() *benchRecords {
	return &benchRecords{rng: rand.New(rand.NewPCG(1, 2)), value: make([]byte, 256)}
}

func BenchmarkWriteBehindPebble(b *testing.B) {
	db, err := OpenDB(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	g := newBenchRecords()
	records := 0
	b.ReportAllocs()
	for b.Loop() {
		batch := db.NewIndexedBatch()
		for range overlayBenchBatch {
			g.command(func(k, v []byte) { must(batch.Set(k, v, nil), "set"); records++ })
		}
		must(batch.Commit(pebble.NoSync), "commit")
		batch.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}

func BenchmarkWriteBehindOverlay(b *testing.B) {
	o := newOverlay(&chunkPool{})
	g := newBenchRecords()
	records := 0
	b.ReportAllocs()
	for b.Loop() {
		for range overlayBenchBatch {
			g.command(func(k, v []byte) { o.set(k, v); records++ })
		}
		o.seal()
		if o.bytes() > overlayBytesMax {
			o = newOverlay(&chunkPool{}) // a checkpoint's write is not counted
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
}

// BenchmarkCheckpointFull: how long a checkpoint of a full overlay holds
// the machine's lock (readers of the ledger wait that long).
func BenchmarkCheckpointFull(b *testing.B) {
	db, err := OpenDB(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	m := &Machine{db: db, group: 1, prefix: groupPrefix(1), scratchDir: b.TempDir()}
	m.ov = newOverlay(&m.chunks)
	g := newBenchRecords()
	for b.Loop() {
		b.StopTimer()
		for m.ov.bytes() < overlayBytesMax {
			for range overlayBenchBatch {
				g.command(func(k, v []byte) { m.ov.set(k, v) })
			}
			m.ov.seal()
		}
		b.StartTimer()
		must(m.Checkpoint(), "checkpoint")
	}
}

// overlayBenchEntry is the commands per entry in the seal and read
// benchmarks: BenchmarkApplyUniform's, a seal per entry as commit does.
const overlayBenchEntry = 4

// benchEntries are an overlay's worth of entries' records, made up front
// so that the benchmarks measure the overlay alone: entry i's records are
// recs[at[i]:at[i+1]], each a key and value, its last the meta record.
type benchEntries struct {
	recs [][2][]byte
	at   []int
}

func newBenchEntries() *benchEntries {
	g := newBenchRecords()
	meta := append(groupPrefix(1), kindMeta)
	e := &benchEntries{at: []int{0}}
	for n := 0; n < overlayBytesMax; {
		for range overlayBenchEntry {
			g.command(func(k, v []byte) {
				e.recs = append(e.recs, [2][]byte{slices.Clone(k), v})
				n += recHeaderLen + len(k) + len(v)
			})
		}
		e.recs = append(e.recs, [2][]byte{meta, g.value[:metaLen]})
		e.at = append(e.at, len(e.recs))
	}
	return e
}

func (e *benchEntries) len() int { return len(e.at) - 1 }

// seal writes entry i's records and seals them, as a commit does.
func (e *benchEntries) seal(o *overlay, i int) int {
	rs := e.recs[e.at[i]:e.at[i+1]]
	for _, r := range rs {
		o.set(r[0], r[1])
	}
	o.seal()
	return len(rs)
}

// fill seals entries into a new overlay until it holds frac of
// overlayBytesMax, and returns their keys.
func (e *benchEntries) fill(frac float64) (*overlay, [][]byte) {
	o := newOverlay(&chunkPool{})
	var keys [][]byte
	for i := 0; float64(o.bytes()) < frac*overlayBytesMax; i++ {
		e.seal(o, i)
		for _, r := range e.recs[e.at[i]:e.at[i+1]] {
			keys = append(keys, r[0])
		}
	}
	return o, keys
}

// BenchmarkOverlaySeal: what sealing an entry's records and merging the
// runs costs per record, over whole overlays (a checkpoint's fold and
// table are not counted: BenchmarkCheckpointFull). With groups=8 a seal
// goes to each of 8 overlays in turn, as on a loaded node: their runs
// do not stay in the caches between one group's seals.
func BenchmarkOverlaySeal(b *testing.B) {
	e := newBenchEntries()
	for _, groups := range []int{1, 8} {
		b.Run(fmt.Sprintf("groups=%d", groups), func(b *testing.B) {
			pool := &chunkPool{}
			os := make([]*overlay, groups)
			next := make([]int, groups)
			for g := range os {
				os[g] = newOverlay(pool)
				next[g] = g * e.len() / groups // the overlays fill out of step
			}
			records, g := 0, 0
			b.ReportAllocs()
			done := cpuPerOp(b)
			for b.Loop() {
				o := os[g]
				records += e.seal(o, next[g])
				if next[g]++; next[g] == e.len() || o.bytes() >= overlayBytesMax {
					o.a.retire()
					os[g], next[g] = newOverlay(pool), 0
				}
				g = (g + 1) % groups
			}
			done()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(records), "ns/record")
		})
	}
}

// BenchmarkOverlayGet: a view's point reads over the stack of an overlay
// three quarters full, half of them of keys it holds, half of keys it
// does not (which search every run).
func BenchmarkOverlayGet(b *testing.B) {
	o, keys := newBenchEntries().fill(0.75)
	l := o.view()
	rng := rand.New(rand.NewPCG(5, 6))
	var miss []byte
	for b.Loop() {
		k := keys[rng.IntN(len(keys))]
		if rng.IntN(2) == 0 {
			miss = append(append(miss[:0], k...), 0)
			k = miss
		}
		l.get(k)
	}
	b.ReportMetric(float64(len(l.runs)), "runs")
}

// BenchmarkOverlaySeek: a view's iterator over the same stack, seeking to
// a key and reading the next few, as a page of changes does.
func BenchmarkOverlaySeek(b *testing.B) {
	o, keys := newBenchEntries().fill(0.75)
	it := newOverlayIter(o.view(), nil, nil)
	rng := rand.New(rand.NewPCG(5, 6))
	for b.Loop() {
		for ok, n := it.SeekGE(keys[rng.IntN(len(keys))]), 0; ok && n < 8; ok, n = it.Next(), n+1 {
		}
	}
}
