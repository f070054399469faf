// This file proves the monitoring files under deploy/ ask only for metrics
// seatd exports: every seatledger_* metric named by a query of the Grafana
// dashboard (deploy/grafana) or an expression of the alerting rules
// (deploy/prometheus) appears in the /metrics text of a real node of a
// 3-node cluster, read over HTTP, after holds, a confirm, a release, a
// conflict, an expiry, an HTTP call and a webhook delivery (a histogram's
// _bucket, _sum and _count name its family). Each dashboard query names
// at least one.
package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc/codes"
)

// metricName matches a seatledger metric in PromQL.
var metricName = regexp.MustCompile(`\bseatledger_[a-zA-Z0-9_]+`)

// dashboardExprs returns every "expr" and templating query of a Grafana
// dashboard, wherever it nests.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(doc)
	return out
}

// ruleExprs returns the expr of every rule in a Prometheus rule file.
func ruleExprs(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []struct {
				Expr string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			out = append(out, r.Expr)
		}
	}
	return out
}

// exported reports whether name is a metric of the text exposition in
// families (by family, or a histogram's series of one).
func exported(families map[string]string, name string) bool {
	if _, ok := families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && (families[base] == "HISTOGRAM" || families[base] == "SUMMARY") {
			return true
		}
	}
	return false
}

// scrapeFamilies reads /metrics of every node over HTTP and returns the
// metric families that have at least one series, with their types.
func (c *testCluster) scrapeFamilies() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	for _, addr := range c.httpAddr {
		code, _, body := httpGet(c.t, "http://"+addr+"/metrics")
		if code != http.StatusOK {
			c.t.Fatalf("GET %s/metrics = %d", addr, code)
		}
		var p expfmt.TextParser
		mfs, err := p.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			c.t.Fatalf("%s/metrics does not parse: %v", addr, err)
		}
		for name, mf := range mfs {
			if len(mf.Metric) > 0 {
				out[name] = mf.GetType().String()
			}
		}
	}
	return out
}

func TestDashboardAndRulesMetricsExported(t *testing.T) {
	root := filepath.Join("..", "..", "deploy")
	dashboards, _ := filepath.Glob(filepath.Join(root, "grafana", "*.json"))
	rules, _ := filepath.Glob(filepath.Join(root, "prometheus", "*.rules.yml"))
	if len(dashboards) == 0 || len(rules) == 0 {
		t.Fatalf("dashboards %v, rule files %v: want some of each under deploy/", dashboards, rules)
	}
	wanted := map[string][]string{} // metric -> files naming it
	for _, d := range dashboards {
		for _, e := range dashboardExprs(t, d) {
			names := metricName.FindAllString(e, -1)
			if len(names) == 0 {
				t.Errorf("%s: query %q names no seatledger metric", d, e)
			}
			for _, n := range names {
				wanted[n] = append(wanted[n], d)
			}
		}
	}
	for _, r := range rules {
		for _, e := range ruleExprs(t, r) {
			for _, n := range metricName.FindAllString(e, -1) {
				wanted[n] = append(wanted[n], r)
			}
		}
	}

	c := startCluster(t, true, fastDelivery)
	c.addWebhook(0, newReceiver(t).srv.URL) // webhook_test.go
	const show = "dash-show"
	c.createShow(0, show)
	held := c.mustHold(0, show, "fan1", "r1", 0, "A1")
	c.mustConfirm(1, show, held.HoldId, "fan1", "r2", "pay")
	released := c.mustHold(2, show, "fan2", "r1", 0, "A2")
	c.mustRelease(2, show, released.HoldId, "fan2", "r2")
	c.mustHold(1, show, "fan3", "r1", 1, "A3") // expires in a second
	_, err := c.hold(1, show, "late", "r1", 0, "A1")
	wantRejected(t, "Hold(A1) by late", err, "SEATS_TAKEN", codes.Aborted)
	httpCall(t, "GET", "http://"+c.httpAddr[0]+"/v1/shows/"+show+"/seats", "")

	// Some series appear only once their first event happened (the
	// expiry) or on a group's leader: scrape until all are there.
	var missing []string
	for deadline := time.Now().Add(clusterWaitMax); ; time.Sleep(100 * time.Millisecond) {
		families := c.scrapeFamilies()
		missing = missing[:0]
		for n, files := range wanted {
			if !exported(families, n) {
				missing = append(missing, fmt.Sprintf("%s (in %s)", n, strings.Join(slices.Compact(files), ", ")))
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("no node's /metrics has %s", m)
	}
}
