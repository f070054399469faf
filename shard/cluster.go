package shard

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Cluster identity on the Peer service (raftnode/cluster.go has it on the
// raft port). A cluster is its id, made when it is bootstrapped, and its
// shard map's group count, fixed then too: both are cluster state, never a
// per-node choice, since two nodes that map one show to two groups would
// sell its seats twice. Every Peer call a node makes carries its cluster
// id (metadata clusterIDKey); a node refuses a call that names another
// cluster, or none. Every Peer answer, refusals included, carries the
// answering node's id and group count in its header, which is how a new
// node learns them (LearnIdentity) before it starts.

// Metadata keys of cluster identity.
const (
	clusterIDKey = "seatledger-cluster-id"
	groupsKey    = "seatledger-groups"
)

// Identity errors.
var (
	// ErrOtherCluster: a peer belongs to another cluster, or has another
	// group count than this node.
	ErrOtherCluster = errors.New("shard: peer of another cluster")
	// ErrNoClusterID: a Peer call named no cluster.
	ErrNoClusterID = errors.New("shard: peer call without a cluster id")
)

// learnAttemptTimeout bounds one attempt to learn the identity from one
// address: a node that is itself still starting holds the connection
// without answering.
const learnAttemptTimeout = 2 * time.Second

// Identity is what makes a cluster itself.
type Identity struct {
	ClusterID raftnode.ClusterID
	// Groups is the shard map's group count.
	Groups uint32
}

// Validate reports an identity no node may serve with.
func (id Identity) Validate() error {
	if id.ClusterID.IsZero() {
		return fmt.Errorf("%w: zero", raftnode.ErrClusterID)
	}
	return Map{Groups: id.Groups}.Validate()
}

func (id Identity) String() string {
	return fmt.Sprintf("cluster %s with %d groups", id.ClusterID, id.Groups)
}

// Identity is the cluster this router's node serves.
func (r *Router) Identity() Identity {
	return Identity{ClusterID: r.node.ClusterID(), Groups: r.smap.Groups}
}

// CheckPeerCall is run by the Peer service before each call: it puts this
// node's identity in the answer's header, then checks that the caller
// named this cluster. Callers are authenticated first (the header is no
// secret, but strangers need not learn it).
func (r *Router) CheckPeerCall(ctx context.Context) error {
	me := r.Identity()
	// Best effort: a header that cannot be set only costs a joining
	// node another attempt.
	_ = grpc.SetHeader(ctx, metadata.Pairs(clusterIDKey, me.ClusterID.String(), groupsKey, strconv.FormatUint(uint64(me.Groups), 10)))
	got := metadata.ValueFromIncomingContext(ctx, clusterIDKey)
	if len(got) == 0 {
		return fmt.Errorf("%w: this node serves %s", ErrNoClusterID, me.ClusterID)
	}
	if got[0] == me.ClusterID.String() {
		return nil
	}
	r.logForeign(ctx, got[0])
	return fmt.Errorf("%w: this node serves cluster %s, the caller's is %s (a node of another cluster at an address of this one?)",
		ErrOtherCluster, me.ClusterID, got[0])
}

// clusterCredentials puts the cluster id on every call of a peer
// connection.
type clusterCredentials raftnode.ClusterID

func (c clusterCredentials) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{clusterIDKey: raftnode.ClusterID(c).String()}, nil
}

func (clusterCredentials) RequireTransportSecurity() bool { return false }

// foreignLogEvery bounds how often refused calls of another cluster are
// logged: a misdirected node retries many times a second.
const foreignLogEvery = time.Second

// SetLogger makes the router log what it refuses (Peer calls of another
// cluster); call before serving. Without one it logs nothing.
func (r *Router) SetLogger(log *slog.Logger) { r.log = log }

// logForeign logs a refused call of cluster theirs, at most once per
// foreignLogEvery.
func (r *Router) logForeign(ctx context.Context, theirs string) {
	if r.log == nil {
		return
	}
	now, last := time.Now().UnixNano(), r.lastForeignLog.Load()
	if now-last < int64(foreignLogEvery) || !r.lastForeignLog.CompareAndSwap(last, now) {
		return
	}
	remote := ""
	if p, ok := peer.FromContext(ctx); ok {
		remote = p.Addr.String()
	}
	r.log.Warn("Peer service: refusing a call from a node of another cluster", "cluster", r.node.ClusterID().String(),
		"their_cluster", theirs, "remote", remote)
}

// PeerDial is how a node that is not running yet dials a peer's gRPC
// port: the cluster's admin token and, with TLS, the peers' client
// configuration (what SetPeerToken and SetPeerTLS give a router).
type PeerDial struct {
	Token string
	TLS   *tls.Config
}

// LearnIdentity asks the nodes at peers' gRPC addresses for their
// cluster's identity, in turn, until one answers or ctx ends: a node that
// is still starting, or that does not know the identity itself yet, does
// not answer. A node that bootstraps or joins a cluster calls it before it
// starts, so its raft port and its router serve the cluster's id and
// shard map from their first byte.
func LearnIdentity(ctx context.Context, peers []raftnode.Peer, dial PeerDial) (Identity, error) {
	if len(peers) == 0 {
		return Identity{}, errors.New("shard: no node to learn the cluster's identity from")
	}
	var last error
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, time.Second) {
		for _, p := range peers {
			id, err := identityAt(ctx, p, dial)
			if err == nil {
				return id, nil
			}
			last = err
		}
		select {
		case <-ctx.Done():
			return Identity{}, fmt.Errorf("shard: learn the cluster's identity: %w", last)
		case <-time.After(backoff):
		}
	}
}

// identityAt reads the identity from the header of a Peer call to p
// without a cluster id, which p refuses (ErrNoClusterID) after setting it.
func identityAt(ctx context.Context, p raftnode.Peer, dial PeerDial) (Identity, error) {
	host, _, _ := net.SplitHostPort(p.GRPCAddr)
	c, err := grpc.NewClient(p.GRPCTarget(), grpc.WithTransportCredentials(peerTransport(dial.TLS, host)),
		grpc.WithPerRPCCredentials(BearerCredentials(dial.Token)))
	if err != nil {
		return Identity{}, fmt.Errorf("%s: %w", p.GRPCTarget(), err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, learnAttemptTimeout)
	defer cancel()
	var hdr metadata.MD
	_, callErr := ledgerpb.NewPeerClient(c).Read(ctx, &ledgerpb.ReadRequest{Hops: 1}, grpc.Header(&hdr), grpc.WaitForReady(true))
	ids, groups := hdr.Get(clusterIDKey), hdr.Get(groupsKey)
	if len(ids) == 0 || len(groups) == 0 {
		return Identity{}, fmt.Errorf("%s answered without a cluster identity: %v", p.GRPCTarget(), callErr)
	}
	cid, err := raftnode.ParseClusterID(ids[0])
	if err != nil {
		return Identity{}, fmt.Errorf("%s: %w", p.GRPCTarget(), err)
	}
	n, err := strconv.ParseUint(groups[0], 10, 32)
	if err != nil {
		return Identity{}, fmt.Errorf("%s: group count %q: %w", p.GRPCTarget(), groups[0], err)
	}
	id := Identity{ClusterID: cid, Groups: uint32(n)}
	if err := id.Validate(); err != nil {
		return Identity{}, fmt.Errorf("%s: %w", p.GRPCTarget(), err)
	}
	return id, nil
}
