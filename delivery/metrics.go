package delivery

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics of delivery. Labels are bounded: sink is a webhook id (at most
// fsm.WebhooksMax) or the Kafka sink, group one of the cluster's groups.
type metrics struct {
	deliveries *prometheus.CounterVec
	failures   *prometheus.CounterVec
	gaps       *prometheus.CounterVec
	backlog    *prometheus.GaugeVec
	backlogAge *prometheus.GaugeVec
}

func newMetrics() *metrics {
	return &metrics{
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "webhook", Name: "deliveries_total",
			Help: "Events a sink accepted (2xx, or produced to Kafka), by sink; repeats after a leader change count again."}, []string{"sink"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "webhook", Name: "failures_total",
			Help: "Failed delivery attempts (non-2xx, timeout, refused), by sink; each is retried with backoff."}, []string{"sink"}),
		gaps: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "seatledger", Subsystem: "webhook", Name: "gaps_total",
			Help: "Times a sink fell further behind than the change log keeps (fsm.EventRetentionMs) and skipped pruned events."}, []string{"sink"}),
		backlog: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "seatledger", Subsystem: "webhook", Name: "backlog",
			Help: "Log entries of the group applied but not yet delivered to the sink (an upper bound on its pending change records), on the group's leader."}, []string{"sink", "group"}),
		backlogAge: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "seatledger", Subsystem: "webhook", Name: "backlog_seconds",
			Help: "Age by log time of the oldest event not yet delivered to the sink (0 when none), on the group's leader."}, []string{"sink", "group"}),
	}
}

func (m *metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.deliveries, m.failures, m.gaps, m.backlog, m.backlogAge} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// start makes a sink's counters exist at 0, so that rates and alerts see
// them before its first failure.
func (m *metrics) start(sink string) {
	m.deliveries.WithLabelValues(sink)
	m.failures.WithLabelValues(sink)
	m.gaps.WithLabelValues(sink)
}

// forget drops a group's gauges when this node stops leading it, so that
// only the leader reports the group's backlog.
func (m *metrics) forget(sink string, group uint32) {
	g := strconv.FormatUint(uint64(group), 10)
	m.backlog.DeleteLabelValues(sink, g)
	m.backlogAge.DeleteLabelValues(sink, g)
}

func (m *metrics) setBacklog(sink string, group uint32, entries uint64, ageSeconds float64) {
	g := strconv.FormatUint(uint64(group), 10)
	m.backlog.WithLabelValues(sink, g).Set(float64(entries))
	m.backlogAge.WithLabelValues(sink, g).Set(ageSeconds)
}
