package fsm

// What apply's write-behind costs per record: into Pebble (one indexed
// batch committed per apply batch, as txn.go did) against into the
// overlay (records appended and sealed per apply batch). Keys and values
// are shaped like the uniform load's: a live hold, a request record, a
// change record and its revision per command.

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
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
	m.pub = m.ov.view()
	g := newBenchRecords()
	for b.Loop() {
		b.StopTimer()
		for m.ov.bytes() < overlayBytesMax {
			for range overlayBenchBatch {
				g.command(func(k, v []byte) { m.ov.set(k, v) })
			}
			m.ov.seal()
		}
		m.pub = m.ov.view() // as a commit publishes
		b.StartTimer()
		must(m.Checkpoint(), "checkpoint")
	}
}
