// This file proves the server's live gauges on a real node: with a gRPC and
// an SSE watch open, seatledger_watchers says one of each, and zero again
// once both end; a write over the client's rate is refused RATE_LIMITED and
// counted in seatledger_admission_rate_limited_total, an admitted one is not.
package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// liveValue gathers reg and returns the value of name with the label
// protocol=proto ("" for a metric without labels), and whether it is there.
func liveValue(t *testing.T, reg *prometheus.Registry, name, proto string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.Metric {
			if proto != "" && !hasLabel(m, "protocol", proto) {
				continue
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue(), true
			}
			return m.Counter.GetValue(), true
		}
	}
	return 0, false
}

func hasLabel(m *dto.Metric, name, value string) bool {
	for _, l := range m.Label {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// waitValue waits until name{protocol=proto} reads want.
func waitValue(t *testing.T, reg *prometheus.Registry, name, proto string, want float64) {
	t.Helper()
	for deadline := time.Now().Add(watchTimeout); ; time.Sleep(5 * time.Millisecond) {
		got, ok := liveValue(t, reg, name, proto)
		if ok && got == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s{protocol=%q} = %v (present %v), want %v", name, proto, got, ok, want)
		}
	}
}

func TestLiveMetrics(t *testing.T) {
	wc := startWatchCluster(t)
	n1 := wc.nodes[0]
	reg := prometheus.NewRegistry()
	if err := n1.srv.RegisterMetrics(reg); err != nil {
		t.Fatal(err)
	}
	// Before any write, so no proposal reads the limiter being replaced.
	n1.srv.SetAdmission(Admission{Rate: 0.001, Burst: 1})
	wc.createShow("m1")
	waitValue(t, reg, "seatledger_watchers", "grpc", 0)
	waitValue(t, reg, "seatledger_watchers", "sse", 0)

	ctx, cancel := context.WithCancel(context.Background())
	g, err := n1.client.Watch(ctx, &ledgerpb.WatchRequest{ShowId: "m1"})
	if err != nil {
		t.Fatal(err)
	}
	recv(t, g)
	sse := wc.openSSE(0, "m1", nil, "")
	sse.next(t)
	waitValue(t, reg, "seatledger_watchers", "grpc", 1)
	waitValue(t, reg, "seatledger_watchers", "sse", 1)
	cancel()
	sse.resp.Body.Close()
	waitValue(t, reg, "seatledger_watchers", "grpc", 0)
	waitValue(t, reg, "seatledger_watchers", "sse", 0)

	// The burst of one admits the first write; the second is refused.
	wc.hold("m1", "fan", "A1")
	_, err = n1.srv.Hold(context.Background(), &ledgerpb.HoldRequest{ShowId: "m1", SeatIds: []string{"A2"}, ClientId: "fan", RequestId: "h2"})
	if reasonOf(status.Convert(err)) != "RATE_LIMITED" {
		t.Fatalf("second hold over a rate of 0.001/s = %v, want RATE_LIMITED", err)
	}
	waitValue(t, reg, "seatledger_admission_rate_limited_total", "", 1)
}
