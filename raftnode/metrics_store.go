package raftnode

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// The node's Pebble store, read when scraped: each group's state machine
// writes it behind apply (fsm's checkpoints ingest one table per group
// per checkpoint), and Pebble's compactions rewrite what the checkpoints
// ingested. Compactions are the background work a long run spends most
// on after apply and the log (docs/PERFORMANCE.md), so the bytes they
// write against the bytes ingested and flushed is the figure to watch:
// the store's write amplification.

func storeDesc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc("seatledger_store_"+name, help, labels, nil)
}

var (
	descStoreDiskBytes = storeDesc("disk_bytes", "Disk space the node's Pebble store (state/) uses: tables, manifests and obsolete files not yet deleted.")
	descStoreLevel     = storeDesc("level_bytes", "Bytes of the tables in one level of the node's Pebble store.", "level")
	descStoreTables    = storeDesc("level_tables", "Tables in one level of the node's Pebble store.", "level")
	descStoreL0        = storeDesc("l0_sublevels", "Sublevels of level 0: a point read may look in each (with the levels below, the read amplification).")
	descStoreWritten   = storeDesc("written_bytes_total", "Bytes of tables the node's Pebble store wrote, by how: ingested (the state machines' checkpoints and restores), flushed (memtables), compacted (rewritten by compactions). (flushed+ingested+compacted)/(flushed+ingested) is the store's write amplification.", "how")
	descStoreCompacts  = storeDesc("compactions_total", "Compactions the node's Pebble store finished, moves and deletion-only ones included.")
	descStoreCompactS  = storeDesc("compaction_seconds_total", "Time the node's Pebble store spent in compactions (wall time, summed over concurrent ones).")
	descStoreDebt      = storeDesc("compaction_debt_bytes", "Pebble's estimate of the bytes compactions must still rewrite to bring the levels back into shape.")
)

// storeCollector reports the node's Pebble metrics.
type storeCollector struct{ n *Node }

// Describe sends the store descriptors.
func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descStoreDiskBytes, descStoreLevel, descStoreTables, descStoreL0,
		descStoreWritten, descStoreCompacts, descStoreCompactS, descStoreDebt} {
		ch <- d
	}
}

// Collect reads the store's metrics once (Pebble copies them under its
// lock), holding the node's lock: Close marks the node closed under it
// before it closes the store.
func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	c.n.mu.Lock()
	if c.n.mu.closed || c.n.db == nil {
		c.n.mu.Unlock()
		return
	}
	m := c.n.db.Metrics()
	c.n.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(descStoreDiskBytes, float64(m.DiskSpaceUsage()))
	// Not m.Total(): it counts ingested bytes as flushed too.
	var ingested, flushed, compacted uint64
	for level := range m.Levels {
		l := &m.Levels[level]
		name := strconv.Itoa(level)
		gauge(descStoreLevel, float64(l.TablesSize), name)
		gauge(descStoreTables, float64(l.TablesCount), name)
		ingested += l.TableBytesIngested
		flushed += l.TableBytesFlushed
		compacted += l.TableBytesCompacted
	}
	gauge(descStoreL0, float64(m.Levels[0].Sublevels))
	counter(descStoreWritten, float64(ingested), "ingested")
	counter(descStoreWritten, float64(flushed), "flushed")
	counter(descStoreWritten, float64(compacted), "compacted")
	counter(descStoreCompacts, float64(m.Compact.Count))
	counter(descStoreCompactS, m.Compact.Duration.Seconds())
	gauge(descStoreDebt, float64(m.Compact.EstimatedDebt))
}
