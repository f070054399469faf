package registry

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// Registry timing.
const (
	// RefreshInterval is how often a node rereads the registry: a node
	// added or moved is dialled at its registered address within it.
	RefreshInterval = time.Second
	// readTimeout bounds one registry read.
	readTimeout = 3 * time.Second
	// joinTimeoutDefault bounds how long a joining node looks for a node
	// that gives it the registry; joinBackoffMin paces its first retries.
	joinTimeoutDefault = 30 * time.Second
	joinBackoffMin     = 10 * time.Millisecond
	// failWarn is how long registry reads fail before a warning.
	failWarn = 10 * time.Second
)

// Registry errors.
var (
	// ErrNotRegistered: the registry does not list this node (run seatctl
	// node add first), or lists it with other addresses.
	ErrNotRegistered = errors.New("registry: node is not registered")
	// ErrNodeRemoved: the registry lists this node as REMOVED: its id is
	// retired and it must not serve.
	ErrNodeRemoved = errors.New("registry: node was removed from the cluster")
)

// Registry is this node's knowledge of the node registry. Safe for
// concurrent use.
type Registry struct {
	router *shard.Router
	mu     struct {
		sync.Mutex
		// list is the registry as this node last learned it; nil until
		// then.
		list *ledgerpb.NodeList
	}
}

// New keeps the registry of router's node, and has router answer the
// registry reads it cannot serve with what this node learned (call before
// serving).
func New(router *shard.Router) *Registry {
	r := &Registry{router: router}
	router.SetKnownNodes(r.Known)
	return r
}

// Refresh reads the registry and, unless it is older than the one this
// node knows, makes it this node's peer table. It returns the registry it
// read.
func (r *Registry) Refresh(ctx context.Context) (*ledgerpb.NodeList, error) {
	ctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	list, err := r.router.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	return list, r.learn(list)
}

// learn takes a registry into the peer table unless an older one than the
// one known (a lagging node's cached answer).
func (r *Registry) learn(list *ledgerpb.NodeList) error {
	r.mu.Lock()
	if cur := r.mu.list; cur != nil && list.Revision < cur.Revision {
		r.mu.Unlock()
		return nil
	}
	r.mu.list = list
	r.mu.Unlock()
	_, err := r.router.Node().SetPeers(livePeers(list))
	return err
}

// Known is the registry as this node last learned it, or nil. The router
// answers registry reads it cannot serve with it (shard.Router.SetKnownNodes).
func (r *Registry) Known() *ledgerpb.NodeList {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mu.list
}

// livePeers lists the registry's ACTIVE and DRAINING nodes.
func livePeers(list *ledgerpb.NodeList) []raftnode.Peer {
	var out []raftnode.Peer
	for _, n := range list.GetNodes() {
		switch n.State {
		case ledgerpb.NodeState_NODE_STATE_ACTIVE, ledgerpb.NodeState_NODE_STATE_DRAINING:
			out = append(out, raftnode.Peer{ID: n.NodeId, RaftAddr: n.RaftAddr, GRPCAddr: n.GrpcAddr,
				Draining: n.State == ledgerpb.NodeState_NODE_STATE_DRAINING})
		}
	}
	return out
}

// Run refreshes the registry every interval until ctx ends; check, if set,
// sees every registry read (seatd stops a node the registry says was
// removed). Reads failing for failWarn are logged once (a starting cluster
// has no catalog leader for a moment: no warning for that).
func (r *Registry) Run(ctx context.Context, interval time.Duration, log *slog.Logger, check func(*ledgerpb.NodeList)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var failingSince time.Time
	warned := false
	for {
		list, err := r.Refresh(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if !warned && time.Since(failingSince) >= failWarn {
				log.Warn("cannot read the node registry; keeping the peer table", "err", err, "since", failingSince)
				warned = true
			}
		case err == nil:
			if warned {
				log.Info("node registry read again", "revision", list.Revision)
			}
			failingSince, warned = time.Time{}, false
			if check != nil {
				check(list)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
