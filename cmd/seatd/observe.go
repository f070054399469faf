package main

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seatledger/seatledger/internal/buildinfo"
	"github.com/seatledger/seatledger/raftnode"
)

// Observability wiring: each node's metrics live in a registry of its own
// (nodeConfig.Metrics) and carry a node label, so `seatd dev` can serve its
// three nodes on one /metrics and tests can start many nodes in a process.
// /metrics is on the HTTP API listener; the admin listener (--admin-http,
// off by default) serves it too, with net/http/pprof: profiles expose the
// process's internals and cost CPU, so they never share the public port.

// processMetrics are the Go runtime's and the process's own metrics, once
// per process, however many nodes it runs.
var processMetrics = sync.OnceValue(func() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoMetric())
	return r
})

// buildInfoMetric is seatledger_build_info: 1, labelled with what `seatd
// version` prints, so dashboards can show which nodes run which build.
func buildInfoMetric() prometheus.Collector {
	bi := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "seatledger_build_info",
		Help:        "Always 1; the labels name the running build (seatd version).",
		ConstLabels: prometheus.Labels{"version": bi.Version, "commit": bi.Commit, "goversion": bi.GoVersion}})
	g.Set(1)
	return g
}

// nodeRegisterer is where a node registers its metrics: its registry (made
// here when the config has none), with every series labelled by node id.
func (c *nodeConfig) nodeRegisterer() (*prometheus.Registry, prometheus.Registerer) {
	reg := c.Metrics
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return reg, prometheus.WrapRegistererWith(prometheus.Labels{"node": c.ID}, reg)
}

// gatherer is what the node's /metrics serves.
func (c *nodeConfig) gatherer(reg *prometheus.Registry) prometheus.Gatherer {
	if c.Gather != nil {
		return c.Gather
	}
	return prometheus.Gatherers{processMetrics(), reg}
}

// metricsHandler serves Prometheus' text format; a failing collector drops
// its own series, not the page.
func metricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// adminHandler serves /debug/pprof/* and /metrics. Its handlers are named
// one by one: importing net/http/pprof also registers them on
// http.DefaultServeMux, which seatd never serves.
func adminHandler(g prometheus.Gatherer) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("GET /metrics", metricsHandler(g))
	return mux
}

// parseRaftLogLevel reads --raft-log-level.
func parseRaftLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "off":
		return raftnode.RaftLogOff, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("--raft-log-level: %q is not one of debug, info, warn, error, off", s)
}
