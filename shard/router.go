package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Retry pacing while a group elects a leader or a forward fails.
const (
	retryBackoffMin = 10 * time.Millisecond
	retryBackoffMax = 200 * time.Millisecond
	// forwardTimeoutMax bounds one forwarded call.
	forwardTimeoutMax = 3 * time.Second
)

// Router sends each request to the leader of its show's group.
type Router struct {
	node *raftnode.Node
	smap Map
	// faults are the deliberately wrong behaviours of a fault build
	// (faults.go; none in a default build).
	faults faults
	// peerToken authenticates this node's forwarded calls (set once before
	// serving).
	peerToken string
	// peerTLS, if set, is the template of forwarded calls' TLS (set once
	// before serving); nil dials peers in plaintext.
	peerTLS *tls.Config

	// log receives refused Peer calls (cluster.go); set once before
	// serving, nil logs nothing. lastForeignLog rate-limits it (Unix
	// nanoseconds).
	log            *slog.Logger
	lastForeignLog atomic.Int64

	// known is the registry the node last learned (package registry),
	// for registry reads this node's replica cannot serve (set once before
	// serving; nil answers none).
	known func() *ledgerpb.NodeList

	// forwardCommands observes the commands of each forwarded call (set
	// once before serving; nil observes nothing).
	forwardCommands prometheus.Observer
	// senders counts the forwarders' sender goroutines (forward.go), which
	// Close waits for.
	senders sync.WaitGroup

	mu struct {
		sync.Mutex
		// closed: Close was called; no connection or forwarder is made.
		closed bool
		conns  map[string]*grpc.ClientConn // by address
		// forwarders batch the commands forwarded to each node, by node id
		// (forward.go).
		forwarders map[string]*forwarder
		// hints: the leader of a group this node does not host, as the
		// last forward's answer named it.
		hints map[uint32]string
	}
}

// NewRouter routes with smap over node's groups. Where a group's replicas
// are is learned at run time (they move), and where each node listens from
// the node's peer table (the node registry, package registry).
func NewRouter(node *raftnode.Node, smap Map) *Router {
	r := &Router{node: node, smap: smap}
	r.mu.conns = map[string]*grpc.ClientConn{}
	r.mu.hints = map[uint32]string{}
	r.mu.forwarders = map[string]*forwarder{}
	return r
}

// Map returns the shard map.
func (r *Router) Map() Map { return r.smap }

// RaftAddr returns a node's raft address, or "" for an unknown node.
func (r *Router) RaftAddr(id string) string {
	p, _ := r.node.Peer(id)
	return p.RaftAddr
}

// Node returns the local node.
func (r *Router) Node() *raftnode.Node { return r.node }

// Close stops forwarding: commands still queued fail (never sent), calls in
// flight fail as their connections close, and Close returns once the
// forwarders' senders have stopped.
func (r *Router) Close() error {
	r.mu.Lock()
	r.mu.closed = true
	fws := make([]*forwarder, 0, len(r.mu.forwarders))
	for _, f := range r.mu.forwarders {
		fws = append(fws, f)
	}
	r.mu.Unlock()
	// Every forwarder closed before the wait: no sender starts after it.
	for _, f := range fws {
		f.close()
	}
	r.mu.Lock()
	var errs []error
	for _, c := range r.mu.conns {
		errs = append(errs, c.Close())
	}
	r.mu.conns = map[string]*grpc.ClientConn{}
	r.mu.Unlock()
	r.senders.Wait()
	return errors.Join(errs...)
}

// SetMetrics registers the forwarding metrics with reg; call before
// serving.
func (r *Router) SetMetrics(reg prometheus.Registerer) error {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "seatledger", Subsystem: "forward", Name: "batch_commands",
		Help:    "Client commands per Peer call this node made to forward them to a group leader (ProposeBatch; 1 for a Propose to a node without it). _count is calls, _sum commands.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 10)}) // 1 to forwardBatchMax
	if err := reg.Register(h); err != nil {
		return fmt.Errorf("shard: register metrics: %w", err)
	}
	r.forwardCommands = h
	return nil
}

func (r *Router) observeForward(commands int) {
	if r.forwardCommands != nil {
		r.forwardCommands.Observe(float64(commands))
	}
}

// Propose applies a client command to the show's group. Client commands
// carry (client_id, request_id), so a command whose outcome is unknown can be
// retried here, at whichever node leads now: the FSM returns the first
// outcome again. It gives up when ctx ends: ErrOutcomeUnknown if some attempt
// may have been appended, else ErrUnavailable. It gives up at once when this
// node's replica has known no leader for a while (checkLeader): with
// raftnode.ErrNoLeader, or ErrOutcomeUnknown if an earlier attempt may have
// been appended.
func (r *Router) Propose(ctx context.Context, showID string, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	return r.proposeFrom(ctx, r.smap.GroupFor(showID), cmd, nil)
}

// proposeFrom is Propose's loop of attempts; first, if not nil, is the
// error of an attempt already made (ProposeAll's), taken as the loop's
// first.
func (r *Router) proposeFrom(ctx context.Context, group uint32, cmd *ledgerpb.Command, first error) (*ledgerpb.Result, error) {
	uncertain := false
	var last error
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, retryBackoffMax) {
		err := first
		if first == nil {
			if err := r.checkLeader(group); err != nil {
				if uncertain {
					return nil, fmt.Errorf("%w: %v (after %v)", raftnode.ErrOutcomeUnknown, err, last)
				}
				return nil, err
			}
			var res *ledgerpb.Result
			res, err = r.proposeOnce(ctx, group, cmd)
			if err == nil {
				return res, nil
			}
		}
		first = nil
		last = err
		if errors.Is(err, raftnode.ErrOutcomeUnknown) {
			uncertain = true
		}
		if !retryable(err) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			if uncertain {
				return nil, fmt.Errorf("%w: %v", raftnode.ErrOutcomeUnknown, last)
			}
			return nil, fmt.Errorf("%w: %v", raftnode.ErrUnavailable, last)
		case <-time.After(backoff):
		}
	}
}

// checkLeader fails fast for a group whose replica here has known no leader
// for two election timeouts (raftnode.Group.CheckLeader): this node is cut
// off from the group or the group has no quorum, and a client does better
// at another node than waiting here. A group not hosted here is not
// checked: its calls are forwarded, and a forward's failure says enough.
func (r *Router) checkLeader(group uint32) error {
	g, err := r.node.Group(group)
	if err != nil {
		return nil
	}
	return g.CheckLeader()
}

// retryable reports whether a call may be tried again here after err.
// raftnode.ErrNoLeader is not: it means go elsewhere.
func retryable(err error) bool {
	return errors.Is(err, raftnode.ErrNotLeader) || errors.Is(err, raftnode.ErrOutcomeUnknown) ||
		errors.Is(err, raftnode.ErrUnavailable) || errors.Is(err, errForward)
}

// errForward marks a failed forward (transport error): the leader may or may
// not have received the command.
var errForward = errors.New("shard: forward failed")

func (r *Router) proposeOnce(ctx context.Context, group uint32, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	if g, err := r.node.Group(group); err == nil && g.IsLeader() {
		return g.Propose(ctx, cmd)
	}
	target := r.leaderNode(group)
	if target == "" {
		return nil, fmt.Errorf("%w: group %d has no known leader", raftnode.ErrUnavailable, group)
	}
	f, err := r.forwarder(target)
	if err != nil {
		return nil, err
	}
	return f.propose(ctx, &ledgerpb.ProposeRequest{GroupId: group, Command: cmd, Hops: 1})
}

// leaderNode returns the node to send a group's leader work to: the leader
// this node's replica knows, or else a replica that may know it.
func (r *Router) leaderNode(group uint32) string {
	if g, err := r.node.Group(group); err == nil {
		if l := g.Leader(); l != r.node.ID() {
			return l
		}
		return ""
	}
	r.mu.Lock()
	hint := r.mu.hints[group]
	r.mu.Unlock()
	if _, known := r.node.Peer(hint); hint != "" && known {
		return hint
	}
	// Replicas move (membership changes), so ask any other node: one that
	// hosts the group names its leader in the answer.
	var others []string
	for _, p := range r.node.Peers() {
		if p.ID != r.node.ID() {
			others = append(others, p.ID)
		}
	}
	if len(others) == 0 {
		return ""
	}
	return others[rand.IntN(len(others))]
}

// setHint records the leader a forward's answer named ("" forgets it).
func (r *Router) setHint(group uint32, leader string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setHintLocked(group, leader)
}

func (r *Router) setHintLocked(group uint32, leader string) {
	if leader == "" {
		delete(r.mu.hints, group)
		return
	}
	r.mu.hints[group] = leader
}

func (r *Router) peer(id string) (ledgerpb.PeerClient, error) {
	c, err := r.conn(id)
	if err != nil {
		return nil, err
	}
	return ledgerpb.NewPeerClient(c), nil
}

// conn returns the shared connection to a node's gRPC port.
func (r *Router) conn(id string) (*grpc.ClientConn, error) {
	p, ok := r.node.Peer(id)
	if !ok || p.GRPCTarget() == "" {
		return nil, fmt.Errorf("%w: no gRPC address for node %s", raftnode.ErrUnavailable, id)
	}
	// The certificate must name the host the node advertises, even when
	// the address dialled is a proxy (the fault harness).
	host, _, _ := net.SplitHostPort(p.GRPCAddr)
	return r.connAddr(p.GRPCTarget(), host)
}

// PeerConn returns the shared gRPC connection to node id (for streams
// this router does not make itself, such as a relayed watch).
func (r *Router) PeerConn(id string) (*grpc.ClientConn, error) { return r.conn(id) }

// Leads reports whether this node's replica of showID's group leads it
// now; false for a group this node does not host.
func (r *Router) Leads(showID string) bool {
	g, err := r.node.Group(r.smap.GroupFor(showID))
	return err == nil && g.IsLeader()
}

// LeaderHint returns the node last named as the leader of a group this
// node does not host, or "".
func (r *Router) LeaderHint(group uint32) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.hints[group]
}

// connAddr returns the shared connection to a gRPC address; host is the
// name its TLS certificate must carry ("" for the address's own host).
func (r *Router) connAddr(addr, host string) (*grpc.ClientConn, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.mu.conns[addr]; ok {
		return c, nil
	}
	if r.mu.closed {
		return nil, fmt.Errorf("%w: dial %s: router closed", raftnode.ErrUnavailable, addr)
	}
	c, err := grpc.NewClient(addr, grpc.WithTransportCredentials(r.transportCredentials(host)),
		grpc.WithPerRPCCredentials(BearerCredentials(r.peerToken)),
		// Every Peer call names this node's cluster (cluster.go).
		grpc.WithPerRPCCredentials(clusterCredentials(r.node.ClusterID())),
		// Reconnect to a restarted peer within a second, not gRPC's
		// default of up to two minutes: forwarding is on the write path.
		grpc.WithConnectParams(grpc.ConnectParams{MinConnectTimeout: time.Second,
			Backoff: backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}}))
	if err != nil {
		return nil, fmt.Errorf("%w: dial %s: %v", raftnode.ErrUnavailable, addr, err)
	}
	r.mu.conns[addr] = c
	return c, nil
}

// forwardErr turns a forwarded call's status back into raftnode's errors.
func forwardErr(s ledgerpb.ForwardStatus, msg string) error {
	switch s {
	case ledgerpb.ForwardStatus_FORWARD_STATUS_OK:
		return nil
	case ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER:
		return fmt.Errorf("%w: %s", raftnode.ErrNotLeader, msg)
	case ledgerpb.ForwardStatus_FORWARD_STATUS_OUTCOME_UNKNOWN:
		return fmt.Errorf("%w: %s", raftnode.ErrOutcomeUnknown, msg)
	case ledgerpb.ForwardStatus_FORWARD_STATUS_INVALID:
		return fmt.Errorf("shard: peer rejected the request: %s", msg)
	default:
		return fmt.Errorf("%w: %s", raftnode.ErrUnavailable, msg)
	}
}

// forwardStatus is the inverse of forwardErr.
func forwardStatus(err error) ledgerpb.ForwardStatus {
	switch {
	case err == nil:
		return ledgerpb.ForwardStatus_FORWARD_STATUS_OK
	case errors.Is(err, raftnode.ErrNotLeader):
		return ledgerpb.ForwardStatus_FORWARD_STATUS_NOT_LEADER
	case errors.Is(err, raftnode.ErrOutcomeUnknown):
		return ledgerpb.ForwardStatus_FORWARD_STATUS_OUTCOME_UNKNOWN
	default:
		return ledgerpb.ForwardStatus_FORWARD_STATUS_UNAVAILABLE
	}
}

// Errors of reads: an unknown show, hold or queue entry, or a queue entry
// read with another entry's token.
var (
	ErrShowNotFound = fmt.Errorf("shard: show %w", fsm.ErrNotFound)
	ErrHoldNotFound = fmt.Errorf("shard: hold %w", fsm.ErrNotFound)
	ErrNotQueued    = fmt.Errorf("shard: queue entry %w", fsm.ErrNotFound)
	ErrQueueToken   = fmt.Errorf("shard: queue entry: %w", fsm.ErrBadToken)
	ErrHoldToken    = fmt.Errorf("shard: hold: %w", fsm.ErrBadToken)
)
