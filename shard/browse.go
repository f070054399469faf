package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/seatledger/seatledger/catalog"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// Browse reads (catalog listings, free-seat counts and the node registry)
// are routed here; what a catalog query means is package catalog's. They
// never go through the booking path: no proposal, no VerifyLeader. Any
// replica that heard from its group's leader within BrowseStalenessMax
// serves them; one that did not sends them on to the leader.
const (
	// BrowseStalenessMax is the staleness bound browse answers state and
	// this node enforces. It must exceed raft's LeaderLeaseTimeout (a
	// deposed leader stops serving within it) and be well above the
	// heartbeat interval (HeartbeatTimeout/10).
	BrowseStalenessMax = 2 * time.Second
	// seatCountFanoutMax bounds the groups one listing asks for free-seat
	// counts at once; each is one read of several shows.
	seatCountFanoutMax = 8
	// seatCountTimeout bounds each group's count read: a listing comes
	// back without the counts of a group that cannot answer in time.
	seatCountTimeout = 1 * time.Second
)

// ProposeCatalog applies a catalog command in the catalog group, with
// Propose's retries.
func (r *Router) ProposeCatalog(ctx context.Context, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	return r.Propose(ctx, CatalogKey, cmd)
}

// Catalog runs a catalog query on the catalog group, within the browse
// staleness bound; with linearizable set (the admin's schedule path), on
// the leader after it confirms its leadership.
func (r *Router) Catalog(ctx context.Context, q *ledgerpb.CatalogQuery, linearizable bool) (*ledgerpb.CatalogAnswer, error) {
	req := &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_CATALOG,
		CatalogQuery: q, Linearizable: linearizable}
	resp, err := r.browse(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.Catalog, nil
}

// SeatCounts reads the free seats of shows by bounded-stale reads of their
// groups: one read per group, at most seatCountFanoutMax at once. A show
// whose group did not answer within seatCountTimeout is absent from the
// result; a show that does not exist is there with found unset.
func (r *Router) SeatCounts(ctx context.Context, showIDs []string) map[string]*ledgerpb.ShowSeatCount {
	byGroup := map[uint32][]string{}
	var groups []uint32
	for _, id := range showIDs {
		g := r.smap.GroupFor(id)
		if _, ok := byGroup[g]; !ok {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], id)
	}
	out := make(map[string]*ledgerpb.ShowSeatCount, len(showIDs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, seatCountFanoutMax)
	for _, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			gctx, cancel := context.WithTimeout(ctx, seatCountTimeout)
			defer cancel()
			resp, err := r.browse(gctx, &ledgerpb.ReadRequest{GroupId: g, Kind: ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS, ShowIds: byGroup[g]})
			if err != nil {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, c := range resp.SeatCounts {
				out[c.ShowId] = c
			}
		}()
	}
	wg.Wait()
	return out
}

// browse sends a browse read to a replica that can serve it: this node's
// when it is fresh enough, else the one the leader hint names, retrying
// until ctx ends, or until this node's replica has known no leader for a
// while (checkLeader): a linearizable read then fails before it is tried,
// a bounded-stale one once this replica could not serve it.
func (r *Router) browse(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	for backoff := retryBackoffMin; ; backoff = min(2*backoff, retryBackoffMax) {
		if req.Linearizable {
			if err := r.checkLeader(req.GroupId); err != nil {
				return nil, err
			}
		}
		resp, err := r.browseOnce(ctx, req)
		if err == nil {
			return resp, catalog.Err(resp.Code)
		}
		if !retryable(err) && !errors.Is(err, raftnode.ErrStale) {
			return nil, err
		}
		if lerr := r.checkLeader(req.GroupId); lerr != nil {
			return nil, fmt.Errorf("%w (%v)", lerr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", raftnode.ErrUnavailable, err)
		case <-time.After(backoff):
		}
	}
}

func (r *Router) browseOnce(ctx context.Context, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	if g, err := r.node.Group(req.GroupId); err == nil {
		resp, err := r.serveBrowse(ctx, g, req)
		if !errors.Is(err, raftnode.ErrStale) && !errors.Is(err, raftnode.ErrNotLeader) {
			return resp, err
		}
	}
	return r.forwardRead(ctx, req, "browse read")
}

// isBrowse reports whether a read is a browse read (served by serveBrowse).
func isBrowse(k ledgerpb.ReadKind) bool {
	return k == ledgerpb.ReadKind_READ_KIND_CATALOG || k == ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS ||
		k == ledgerpb.ReadKind_READ_KIND_NODES || k == ledgerpb.ReadKind_READ_KIND_WEBHOOKS
}

// serveBrowse serves a browse read from this node's replica: ErrStale or
// ErrNotLeader when it cannot, so that the caller goes to the leader.
func (r *Router) serveBrowse(ctx context.Context, g *raftnode.Group, req *ledgerpb.ReadRequest) (*ledgerpb.ReadResponse, error) {
	var v *fsm.View
	var asOf time.Time
	var err error
	if req.Linearizable {
		v, err = g.View(ctx, true)
		asOf = time.Now()
	} else {
		v, asOf, err = g.FreshView(ctx, BrowseStalenessMax)
	}
	if err != nil {
		return nil, err
	}
	defer v.Close()
	resp := &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK, Code: ledgerpb.Code_CODE_OK}
	switch req.Kind {
	case ledgerpb.ReadKind_READ_KIND_CATALOG:
		ans, code, err := catalog.Query(v, req.GetCatalogQuery())
		if err != nil {
			return nil, err
		}
		resp.Code = code
		if ans != nil {
			ans.Revision, ans.AsOfMs, ans.ServedBy = v.Applied(), asOf.UnixMilli(), r.node.ID()
		}
		resp.Catalog = ans
	case ledgerpb.ReadKind_READ_KIND_SEAT_COUNTS:
		for _, id := range req.ShowIds {
			c := &ledgerpb.ShowSeatCount{ShowId: id, AsOfMs: asOf.UnixMilli()}
			total, free, err := v.SeatCounts(id)
			switch {
			case err == nil:
				c.Found, c.Total, c.Free = true, total, free
			case !errors.Is(err, fsm.ErrNotFound):
				return nil, err
			}
			resp.SeatCounts = append(resp.SeatCounts, c)
		}
	case ledgerpb.ReadKind_READ_KIND_NODES:
		nodes, err := v.Nodes()
		if err != nil {
			return nil, err
		}
		resp.NodeList = &ledgerpb.NodeList{Nodes: nodes, Revision: v.Applied(), AsOfMs: asOf.UnixMilli(), ServedBy: r.node.ID()}
	case ledgerpb.ReadKind_READ_KIND_WEBHOOKS:
		if err := serveWebhooks(v, resp); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("shard: %v is not a browse read", req.Kind)
	}
	return resp, nil
}

// servePeerBrowse answers a forwarded browse read: a replica that cannot
// serve it says NOT_LEADER and names the leader it knows.
func (r *Router) servePeerBrowse(ctx context.Context, g *raftnode.Group, req *ledgerpb.ReadRequest) *ledgerpb.ReadResponse {
	resp, err := r.serveBrowse(ctx, g, req)
	if errors.Is(err, raftnode.ErrStale) {
		err = fmt.Errorf("%w: %v", raftnode.ErrNotLeader, err)
	}
	if err != nil {
		return &ledgerpb.ReadResponse{Status: forwardStatus(err), Message: err.Error(), LeaderId: g.Leader()}
	}
	resp.LeaderId = g.Leader()
	return resp
}

// Nodes reads the registry from the catalog group within the browse
// staleness bound.
func (r *Router) Nodes(ctx context.Context) (*ledgerpb.NodeList, error) {
	resp, err := r.browse(ctx, &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(), Kind: ledgerpb.ReadKind_READ_KIND_NODES})
	if err != nil {
		return nil, err
	}
	if resp.NodeList == nil {
		return nil, fmt.Errorf("%w: registry read without a node list", raftnode.ErrUnavailable)
	}
	return resp.NodeList, nil
}

// NodesAt asks the node at a gRPC address for the registry (a node joining
// the cluster knows no peer yet), with this node's peer credentials.
func (r *Router) NodesAt(ctx context.Context, addr string) (*ledgerpb.NodeList, error) {
	c, err := r.connAddr(addr, "")
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, nodesAtTimeout)
	defer cancel()
	resp, err := ledgerpb.NewPeerClient(c).Read(ctx, &ledgerpb.ReadRequest{GroupId: r.smap.CatalogGroup(),
		Kind: ledgerpb.ReadKind_READ_KIND_NODES, Hops: 1})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if err := forwardErr(resp.Status, resp.Message); err != nil {
		return nil, fmt.Errorf("%s: %w", addr, err)
	}
	if resp.NodeList == nil {
		return nil, fmt.Errorf("%s answered without a registry", addr)
	}
	return resp.NodeList, nil
}

// nodesAtTimeout bounds NodesAt.
const nodesAtTimeout = 3 * time.Second

// SetKnownNodes has the router answer a forwarded registry read that this
// node's replica cannot serve with known's registry (package registry's
// last learned one); call before serving.
func (r *Router) SetKnownNodes(known func() *ledgerpb.NodeList) { r.known = known }

// knownNodes answers a forwarded registry read of the catalog group that
// this node's replica cannot serve (it hosts none, or its replica is too
// stale and knows no leader) with the registry it last learned; nil for
// other reads or before it learned one.
func (r *Router) knownNodes(req *ledgerpb.ReadRequest) *ledgerpb.ReadResponse {
	if req.Kind != ledgerpb.ReadKind_READ_KIND_NODES || req.GroupId != r.smap.CatalogGroup() {
		return nil
	}
	if r.known == nil {
		return nil
	}
	list := r.known()
	if list == nil {
		return nil
	}
	return &ledgerpb.ReadResponse{Status: ledgerpb.ForwardStatus_FORWARD_STATUS_OK, Code: ledgerpb.Code_CODE_OK, NodeList: list}
}
