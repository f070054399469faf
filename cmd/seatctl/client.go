package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/internal/certs"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/shard"
)

// retryPause paces the retries of one step.
const retryPause = 200 * time.Millisecond

// retryFactor scales --timeout into the window a retried step gets: a
// leader election (1 s by default) plus a slow call fit comfortably.
const retryFactor = 3

// errNoLeader says a group has no known leader now; it is retried.
var errNoLeader = errors.New("no leader known")

// app is one seatctl invocation: the global flags and the connections it
// opened, closed when the command ends.
type app struct {
	out, errOut io.Writer

	// Global flags, set by cobra before a command runs.
	endpoints []string
	output    string
	timeout   time.Duration
	// token is the cluster's admin token, sent with every call (admin
	// calls need it; booking calls ignore it). tokenFile names where to
	// read it from.
	token, tokenFile string
	// tlsFiles are --cacert, --cert and --key; validate loads them into
	// tls, which stays nil for plaintext.
	tlsFiles certs.ClientFiles
	tls      *tls.Config
	// firstSentMs is --first-sent; firstSent is when this run's writes
	// were first sent: the flag's time, or the run's start.
	firstSentMs int64
	firstSent   time.Time

	// mu guards conns and routed: status polls dial every node
	// concurrently.
	mu struct {
		sync.Mutex
		conns map[string]*grpc.ClientConn
		// routed is the Go client (client/) booking calls go through,
		// made at the first such call.
		routed *client.Client
	}
}

// validate checks the global flags.
func (a *app) validate() error {
	if a.tokenFile != "" {
		b, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return usagef("--admin-token-file: %v", err)
		}
		a.token = strings.TrimSpace(string(b))
	}
	var err error
	if a.tls, err = a.tlsFiles.Config(); err != nil {
		return usagef("%v", err)
	}
	var eps []string
	for _, e := range a.endpoints {
		eps = append(eps, splitList(e)...)
	}
	a.endpoints = eps
	switch {
	case len(a.endpoints) == 0:
		return usagef("no endpoints: pass --endpoints host:port,... or set %s", endpointsEnv)
	case a.output != outputTable && a.output != outputJSON:
		return usagef("-o/-w must be %s or %s, not %q", outputTable, outputJSON, a.output)
	case a.timeout <= 0:
		return usagef("--timeout must be positive, not %v", a.timeout)
	case a.firstSentMs < 0:
		return usagef("--first-sent must be the Unix time in milliseconds that seatctl printed with the request id, not %d", a.firstSentMs)
	}
	a.firstSent = time.Now()
	if a.firstSentMs > 0 {
		a.firstSent = time.UnixMilli(a.firstSentMs)
	}
	return nil
}

// json reports whether -o json was asked for.
func (a *app) json() bool { return a.output == outputJSON }

// retryWindow is how long a retried step may take.
func (a *app) retryWindow() time.Duration { return retryFactor * a.timeout }

// conn returns the connection to addr, dialing it once per invocation.
// grpc.NewClient connects lazily, so a down node costs one failed call.
func (a *app) conn(addr string) (*grpc.ClientConn, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.mu.conns[addr]; ok {
		return c, nil
	}
	c, err := grpc.NewClient(addr, a.dialOptions()...)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	if a.mu.conns == nil {
		a.mu.conns = map[string]*grpc.ClientConn{}
	}
	a.mu.conns[addr] = c
	return c, nil
}

// dialOptions are those of every connection seatctl makes.
func (a *app) dialOptions() []grpc.DialOption {
	return []grpc.DialOption{grpc.WithTransportCredentials(a.transportCredentials()),
		grpc.WithPerRPCCredentials(shard.BearerCredentials(a.token)),
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: a.timeout,
			Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: time.Second}})}
}

// routedBooking is the Booking API through the Go client over the
// endpoints: each call goes to its show's leader, and one that a node
// refuses for want of a leader is sent to another node within the call
// (client.Client.Invoke).
func (a *app) routedBooking(ctx context.Context) (ledgerpb.BookingClient, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mu.routed == nil {
		c, err := client.New(ctx, client.Config{Endpoints: a.endpoints, DialOptions: a.dialOptions()})
		if err != nil {
			return nil, err
		}
		a.mu.routed = c
	}
	return a.mu.routed.Booking(), nil
}

// transportCredentials is TLS with --cacert/--cert/--key, else plaintext.
func (a *app) transportCredentials() credentials.TransportCredentials {
	if a.tls == nil {
		return insecure.NewCredentials()
	}
	return credentials.NewTLS(a.tls)
}

func (a *app) admin(addr string) (ledgerpb.AdminClient, error) {
	c, err := a.conn(addr)
	if err != nil {
		return nil, err
	}
	return ledgerpb.NewAdminClient(c), nil
}

// close closes every connection the invocation opened.
func (a *app) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, c := range a.mu.conns {
		c.Close()
	}
	a.mu.conns = nil
	if a.mu.routed != nil {
		a.mu.routed.Close()
		a.mu.routed = nil
	}
}

// nodeAnswer is one node's answer to Status, or why it gave none.
type nodeAnswer struct {
	info *ledgerpb.NodeInfo
	resp *ledgerpb.StatusResponse
	err  error
}

// status asks the node at addr for its Status, within --timeout.
func (a *app) status(ctx context.Context, addr string, digests bool) (*ledgerpb.StatusResponse, error) {
	c, err := a.admin(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return c.Status(ctx, &ledgerpb.StatusRequest{Digests: digests})
}

// discover asks the endpoints in order for Status until one answers, and
// returns that answer and the endpoint that gave it.
func (a *app) discover(ctx context.Context, digests bool) (*ledgerpb.StatusResponse, string, error) {
	var errs []string
	for _, ep := range a.endpoints {
		resp, err := a.status(ctx, ep, digests)
		if err == nil {
			return resp, ep, nil
		}
		errs = append(errs, ep+": "+describe(err))
	}
	return nil, "", fmt.Errorf("no endpoint answered Status: %s", strings.Join(errs, "; "))
}

// listNodes reads the node registry through the node at addr.
func (a *app) listNodes(ctx context.Context, addr string) (*ledgerpb.NodeList, error) {
	c, err := a.admin(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	return c.ListNodes(ctx, &ledgerpb.ListNodesRequest{})
}

// clusterNodes is the cluster's nodes: the registry's ACTIVE and DRAINING
// ones, read through the endpoint that answered first; if the registry
// cannot be read, that node's peer table (its Status).
func (a *app) clusterNodes(ctx context.Context, first *ledgerpb.StatusResponse, ep string) []*ledgerpb.NodeInfo {
	list, err := a.listNodes(ctx, ep)
	if err != nil || len(list.Nodes) == 0 {
		// No registry (yet): the answering node's peer table, with itself.
		peers := slices.Clone(first.Nodes)
		if !slices.ContainsFunc(peers, func(n *ledgerpb.NodeInfo) bool { return n.Id == first.NodeId }) {
			peers = append(peers, &ledgerpb.NodeInfo{Id: first.NodeId})
		}
		return peers
	}
	var out []*ledgerpb.NodeInfo
	for _, n := range list.Nodes {
		if n.State != ledgerpb.NodeState_NODE_STATE_REMOVED {
			out = append(out, &ledgerpb.NodeInfo{Id: n.NodeId, RaftAddr: n.RaftAddr, GrpcAddr: n.GrpcAddr, State: n.State})
		}
	}
	return out
}

// poll learns the cluster's nodes through one endpoint, then asks every node
// for its Status concurrently. A node that does not answer is reported with
// its error; poll fails only if no endpoint answers.
func (a *app) poll(ctx context.Context, digests bool) ([]nodeAnswer, error) {
	first, ep, err := a.discover(ctx, digests)
	if err != nil {
		return nil, err
	}
	// A removed node still running (an endpoint that answered) is not
	// one of them.
	peers := a.clusterNodes(ctx, first, ep)
	slices.SortFunc(peers, func(x, y *ledgerpb.NodeInfo) int { return strings.Compare(x.Id, y.Id) })
	out := make([]nodeAnswer, len(peers))
	var wg sync.WaitGroup
	for i, p := range peers {
		out[i].info = p
		if p.Id == first.NodeId {
			out[i].resp = first // asked already
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i].resp, out[i].err = a.status(ctx, p.GrpcAddr, digests)
		}()
	}
	wg.Wait()
	return out, nil
}

// pollView polls every node and assembles the cluster view.
func (a *app) pollView(ctx context.Context, digests bool) (clusterView, error) {
	answers, err := a.poll(ctx, digests)
	if err != nil {
		return clusterView{}, err
	}
	return buildView(answers), nil
}

// retry runs f until it succeeds, fails with an error that retrying cannot
// fix, or the window has passed.
func (a *app) retry(ctx context.Context, window time.Duration, f func(ctx context.Context) error) error {
	deadline := time.Now().Add(window)
	for {
		err := f(ctx)
		if err == nil || !retryable(err) {
			return err
		}
		if time.Now().Add(retryPause).After(deadline) {
			return fmt.Errorf("gave up after %v: %w", window, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryPause):
		}
	}
}

// retryable reports whether a call may succeed if repeated: the node is not
// the leader or has no quorum now, no leader has confirmed a removal yet,
// the outcome is unknown, or the call timed out. Every call seatctl retries is safe to repeat: membership steps are
// idempotent and writes carry the same request id.
func retryable(err error) bool {
	if errors.Is(err, errNoLeader) || errors.Is(err, errRemovalUnconfirmed) {
		return true
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return false
}
