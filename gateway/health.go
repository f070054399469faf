package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/seatledger/seatledger/shard"
)

// Liveness and readiness, for load balancers and Kubernetes probes.
//
// /healthz is liveness: the process answers HTTP. It never fails for the
// cluster's state, so that a probe never restarts a node because its peers
// are down (a restart would only make it worse).
//
// /readyz is readiness: 200 only when every group this node hosts has a
// leader this node knows and this replica has applied all but a few of the
// entries it knows to be committed; else 503 with the reasons. A node that
// is not ready still answers (it forwards, or says 503 with a retry hint);
// the probe only steers new traffic to nodes that can serve it now.
// Groups this node does not host are not counted: it reaches them by
// forwarding to a node that hosts them, and that node's readiness speaks
// for them (requiring a known leader for them would keep a node of a large
// cluster unready until traffic taught it the leaders, and unready nodes
// get no traffic).
//
// The gRPC health service answers the same readiness for "" and the public
// services, computed when asked, so no goroutine keeps it.

// Limits of readiness.
const (
	// readyApplyLagMax is how many committed entries a replica may have
	// left to apply and still be ready: a replica replaying its log after
	// a restart, or catching up from a snapshot, is far beyond it.
	readyApplyLagMax = 1000
	// healthWatchInterval is how often a gRPC health Watch re-checks.
	healthWatchInterval = time.Second
)

// groupHealth is what readiness looks at in one hosted group.
type groupHealth struct {
	ID        uint32 `json:"id"`
	Leader    string `json:"leader"`
	Committed uint64 `json:"committed"`
	Applied   uint64 `json:"applied"`
}

// readiness is the answer of /readyz.
type readiness struct {
	Status  string        `json:"status"` // "ready" or "not ready"
	Node    string        `json:"node"`
	Reasons []string      `json:"reasons,omitempty"`
	Groups  []groupHealth `json:"groups"`
}

// readyReasons says why groups make a node unready; none means ready.
func readyReasons(groups []groupHealth, lagMax uint64) []string {
	var out []string
	for _, g := range groups {
		if g.Leader == "" {
			out = append(out, fmt.Sprintf("group %d: no leader known", g.ID))
		}
		if g.Committed > g.Applied && g.Committed-g.Applied > lagMax {
			out = append(out, fmt.Sprintf("group %d: %d committed entries not applied yet (at most %d)", g.ID, g.Committed-g.Applied, lagMax))
		}
	}
	return out
}

// checkReady reads the node's hosted groups.
func checkReady(router *shard.Router) readiness {
	n := router.Node()
	r := readiness{Node: n.ID(), Groups: []groupHealth{}}
	for _, g := range n.Groups() {
		st := g.Status()
		r.Groups = append(r.Groups, groupHealth{ID: g.ID(), Leader: st.Leader,
			Committed: st.CommitIndex, Applied: g.Machine().Applied()})
	}
	slices.SortFunc(r.Groups, func(a, b groupHealth) int { return int(a.ID) - int(b.ID) })
	r.Reasons = readyReasons(r.Groups, readyApplyLagMax)
	r.Status = "ready"
	if len(r.Reasons) > 0 {
		r.Status = "not ready"
	}
	return r
}

// readyz serves /readyz.
func readyz(router *shard.Router) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		r := checkReady(router)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if len(r.Reasons) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(r)
	}
}

// healthServices are the names the gRPC health service knows: the server
// as a whole and the public services.
var healthServices = []string{"", "seatledger.v1.Booking", "seatledger.v1.Catalog"}

// readyHealth is the gRPC health service, answering readiness.
type readyHealth struct {
	healthpb.UnimplementedHealthServer
	router *shard.Router
}

func (h readyHealth) status() healthpb.HealthCheckResponse_ServingStatus {
	if len(checkReady(h.router).Reasons) > 0 {
		return healthpb.HealthCheckResponse_NOT_SERVING
	}
	return healthpb.HealthCheckResponse_SERVING
}

// Check answers SERVING when the node is ready.
func (h readyHealth) Check(_ context.Context, req *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	if !slices.Contains(healthServices, req.Service) {
		return nil, healthUnknownServiceError(req.Service)
	}
	return &healthpb.HealthCheckResponse{Status: h.status()}, nil
}

// List answers every service's status.
func (h readyHealth) List(context.Context, *healthpb.HealthListRequest) (*healthpb.HealthListResponse, error) {
	st := h.status()
	out := &healthpb.HealthListResponse{Statuses: map[string]*healthpb.HealthCheckResponse{}}
	for _, s := range healthServices {
		out.Statuses[s] = &healthpb.HealthCheckResponse{Status: st}
	}
	return out, nil
}

// Watch sends the status, then every change, until the caller goes away.
// The stream's own goroutine polls: it ends with the stream.
func (h readyHealth) Watch(req *healthpb.HealthCheckRequest, stream healthpb.Health_WatchServer) error {
	if !slices.Contains(healthServices, req.Service) {
		return stream.Send(&healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_SERVICE_UNKNOWN})
	}
	tick := time.NewTicker(healthWatchInterval)
	defer tick.Stop()
	last := healthpb.HealthCheckResponse_UNKNOWN
	for {
		if st := h.status(); st != last {
			if err := stream.Send(&healthpb.HealthCheckResponse{Status: st}); err != nil {
				return err
			}
			last = st
		}
		select {
		case <-stream.Context().Done():
			return stream.Context().Err()
		case <-tick.C:
		}
	}
}
