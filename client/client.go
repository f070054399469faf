// Package client is seatledger's Go client: the Booking API with every call
// that names a show sent straight to the node that leads the show's raft
// group, so that no node has to forward it (a hop that costs both nodes a
// gRPC call). The routing table comes from any node's GetRouting and is
// refreshed in the background, whenever a call finds no leader, and when a
// node says it forwarded a call (ForwardedKey). A stale table costs a hop,
// never an error: every node forwards what it does not lead. Calls that
// name no show, and streams, go to the seed endpoints in
// turn. A node cut off from a show's group answers Unavailable at once
// (fail fast); the client then sends a call that is safe to repeat to
// another node before it returns (Invoke).
//
// Writes are batched automatically. Concurrent Hold, Confirm, Release,
// Extend and Refund calls to one node go out together as one Booking.Batch
// call, group commit with no timer: a call is sent at once when no Batch
// to that node is in flight; while one is, calls queue, and when it
// returns everything queued goes out as the next Batch (up to 256 calls,
// 1 MiB). A lone call on an idle client waits for nothing. Each caller
// gets what the call alone would have answered, and the routing, retries
// and fail-fast above apply to each call on its own; a caller whose ctx
// ends stops waiting (a call not yet sent never is; one sent may still be
// applied: retry it with the same request_id, as after a unary call whose
// ctx ended). A node that answers Batch Unimplemented (an older node) gets
// unary calls. Calls made with call options or outgoing metadata other
// than the first send time (WithFirstSent) go alone. Config.NoBatching
// turns batching off, Config.BatchesInFlight allows more than one Batch
// in flight per node; BatchStats counts the Batch calls made.
//
//	c, err := client.New(ctx, client.Config{Endpoints: []string{"127.0.0.1:7001"},
//		DialOptions: []grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}})
//	...
//	defer c.Close()
//	resp, err := c.Booking().Hold(ctx, &ledgerpb.HoldRequest{...})
package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Config configures a Client.
type Config struct {
	// Endpoints are gRPC addresses of some of the cluster's nodes (the
	// seeds): routing tables are asked of them, and calls without a known
	// leader go to them in turn.
	Endpoints []string
	// DialOptions are used for every connection: transport credentials
	// (required by grpc), per-call credentials such as the admin token.
	DialOptions []grpc.DialOption
	// RefreshInterval is how often the routing table is asked for again
	// (default 2 s). Leaders move rarely; a call that finds none asks at
	// once.
	RefreshInterval time.Duration
	// NoBatching sends every call alone. By default concurrent Hold,
	// Confirm, Release, Extend and Refund calls to one node share Batch
	// calls (batch.go).
	NoBatching bool
	// BatchesInFlight bounds the Batch calls in flight to one node at once
	// (default 1, TigerBeetle's rule: calls made while one is in flight
	// wait for it and go together in the next).
	BatchesInFlight int
}

// refreshGapMin is the least time between two refreshes that calls asked
// for (askRefresh).
const refreshGapMin = 100 * time.Millisecond

// refreshIntervalDefault and routingTimeout bound the background refresh.
const (
	refreshIntervalDefault = 2 * time.Second
	routingTimeout         = time.Second
	// endpointsMax bounds the seeds, and leaderConnsMax the leaders' extra
	// connections a client keeps.
	endpointsMax   = 64
	leaderConnsMax = 256
)

// Validate reports the first thing wrong with the config.
func (c Config) Validate() error {
	if len(c.Endpoints) == 0 || len(c.Endpoints) > endpointsMax {
		return fmt.Errorf("client: need 1..%d endpoints, not %d", endpointsMax, len(c.Endpoints))
	}
	if c.RefreshInterval < 0 {
		return errors.New("client: refresh interval must not be negative")
	}
	if c.BatchesInFlight < 0 || c.BatchesInFlight > batchesInFlightMax {
		return fmt.Errorf("client: batches in flight must be in 0..%d (0: the default, 1)", batchesInFlightMax)
	}
	return nil
}

// Client is a routing connection to a cluster. It implements
// grpc.ClientConnInterface, so any generated client of the Booking service
// routes through it (Booking returns one). Safe for concurrent use.
type Client struct {
	cfg   Config
	seeds []*grpc.ClientConn
	next  atomic.Uint64 // round robin over seeds
	table atomic.Pointer[table]
	// refresh asks the background loop for a table now (never blocks).
	refresh chan struct{}
	stop    chan struct{}
	done    chan struct{}
	mu      struct {
		sync.Mutex
		conns map[string]*grpc.ClientConn // leaders' connections by address
	}
	// batchers batch the calls to each connection (batch.go), by
	// *grpc.ClientConn; senders counts their sending goroutines.
	batchers sync.Map
	senders  sync.WaitGroup
	// batchRPCs and batchCalls count Batch calls and the calls they carried.
	batchRPCs, batchCalls atomic.Uint64
}

// table is one routing table: per group, the leader's connection (nil when
// unknown).
type table struct {
	groups  uint32
	leaders []*grpc.ClientConn
}

// New connects to the seed endpoints and fetches a first routing table. A
// cluster that does not answer GetRouting yet is not an error: calls go to
// the seeds until a table arrives.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.RefreshInterval == 0 {
		cfg.RefreshInterval = refreshIntervalDefault
	}
	if cfg.BatchesInFlight == 0 {
		cfg.BatchesInFlight = 1
	}
	c := &Client{cfg: cfg, refresh: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	c.mu.conns = map[string]*grpc.ClientConn{}
	for _, addr := range cfg.Endpoints {
		cc, err := grpc.NewClient(addr, cfg.DialOptions...)
		if err != nil {
			c.closeConns()
			return nil, fmt.Errorf("client: dial %s: %w", addr, err)
		}
		c.seeds = append(c.seeds, cc)
	}
	_ = c.Refresh(ctx) // best effort; the loop keeps trying
	go c.loop()
	return c, nil
}

// Booking returns the Booking API, routed.
func (c *Client) Booking() ledgerpb.BookingClient { return ledgerpb.NewBookingClient(c) }

// Invoke sends a unary call to the leader of its show's group when the
// table knows it, else to a seed. A call that finds no leader (a node cut
// off from its group answers Unavailable at once) forgets that route and
// asks for a new table; if the call is safe to repeat (retrySafe), it is
// sent again at once to a node it has not tried, at most attemptsMax times
// in all, so a fail-fast answer costs the caller one round trip, not its
// own retry loop. A write states when it was first sent (firstsent.go).
func (c *Client) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	now := time.Now()
	call := c.batchable(ctx, method, args, opts, now) // states its first send itself
	if call.call == nil {
		ctx = stampFirstSent(ctx, args, now) // once: the retries below keep it
	}
	cc, t, group := c.route(args)
	var tried [attemptsMax]*grpc.ClientConn
	for attempt := 0; ; attempt++ {
		err := c.invoke(ctx, cc, method, args, reply, call, opts)
		if !Unavailable(err) {
			return err
		}
		if t != nil {
			c.forget(t, group, cc)
		}
		c.askRefresh()
		tried[attempt] = cc
		if attempt+1 == attemptsMax || ctx.Err() != nil || !retrySafe(method, args, err) {
			return err
		}
		if cc = c.untried(tried[:attempt+1]); cc == nil {
			return err
		}
		t = nil
	}
}

// forget drops group's route from table t if it still names cc.
func (c *Client) forget(t *table, group uint32, cc *grpc.ClientConn) {
	if t.leaders[group] != cc {
		return
	}
	n := &table{groups: t.groups, leaders: slices.Clone(t.leaders)}
	n.leaders[group] = nil
	c.table.CompareAndSwap(t, n) // a newer table wins
}

// NewStream opens a stream on a seed.
func (c *Client) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return c.seed().NewStream(ctx, desc, method, opts...)
}

// showOf is the show a request names, "" if none.
func showOf(args any) string {
	switch a := args.(type) {
	case interface{ GetShowId() string }:
		return a.GetShowId()
	case *ledgerpb.CreateShowRequest:
		return a.GetShow().GetShowId()
	}
	return ""
}

// route picks the connection for a call: its show's leader, with the
// table and group that named it, else a seed (t nil).
func (c *Client) route(args any) (cc *grpc.ClientConn, t *table, group uint32) {
	if show := showOf(args); show != "" {
		if t := c.table.Load(); t != nil {
			group := GroupFor(show, t.groups)
			if cc := t.leaders[group]; cc != nil {
				return cc, t, group
			}
		}
	}
	return c.seed(), nil, 0
}

func (c *Client) seed() *grpc.ClientConn {
	return c.seeds[c.next.Add(1)%uint64(len(c.seeds))]
}

// ForwardedKey is the response header of a call a node forwarded to the
// leader of its group (gateway.ForwardedKey): the routing table is stale.
const ForwardedKey = "seatledger-forwarded"

// noteForwarded asks for a new routing table if a call's response header
// says the node forwarded it.
func (c *Client) noteForwarded(header metadata.MD) {
	if len(header.Get(ForwardedKey)) > 0 {
		c.askRefresh()
	}
}

func (c *Client) askRefresh() {
	select {
	case c.refresh <- struct{}{}:
	default:
	}
}

// Refresh asks a seed for the routing table and installs it.
func (c *Client) Refresh(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, routingTimeout)
	defer cancel()
	r, err := ledgerpb.NewBookingClient(c.seed()).GetRouting(ctx, &ledgerpb.GetRoutingRequest{})
	if err != nil {
		return fmt.Errorf("client: routing: %w", err)
	}
	if r.Groups == 0 || int(r.Groups) != len(r.Routes) {
		return fmt.Errorf("client: routing of %d groups lists %d routes", r.Groups, len(r.Routes))
	}
	t := &table{groups: r.Groups, leaders: make([]*grpc.ClientConn, r.Groups)}
	for _, route := range r.Routes {
		if route.GroupId >= r.Groups || route.LeaderGrpcAddr == "" {
			continue
		}
		cc, err := c.conn(route.LeaderGrpcAddr)
		if err != nil {
			continue // that group's calls go to the seeds
		}
		t.leaders[route.GroupId] = cc
	}
	c.table.Store(t)
	return nil
}

// conn returns the connection to addr, a seed's or a new one.
func (c *Client) conn(addr string) (*grpc.ClientConn, error) {
	for i, a := range c.cfg.Endpoints {
		if a == addr {
			return c.seeds[i], nil
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc := c.mu.conns[addr]; cc != nil {
		return cc, nil
	}
	if len(c.mu.conns) >= leaderConnsMax {
		return nil, errors.New("client: too many leader connections")
	}
	cc, err := grpc.NewClient(addr, c.cfg.DialOptions...)
	if err != nil {
		return nil, err
	}
	c.mu.conns[addr] = cc
	return cc, nil
}

// loop refreshes the table until Close.
func (c *Client) loop() {
	defer close(c.done)
	tick := time.NewTicker(c.cfg.RefreshInterval)
	defer tick.Stop()
	var last time.Time
	for {
		select {
		case <-c.stop:
			return
		case <-tick.C:
		case <-c.refresh:
			// Asked by calls (one found no leader, a node forwarded
			// one): at most one such refresh per refreshGapMin, however
			// many ask, as a seed's own table may lag a moment.
			if wait := refreshGapMin - time.Since(last); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-c.stop:
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
		last = time.Now()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		_ = c.Refresh(ctx) // a failed refresh keeps the last table
		cancel()
	}
}

// Close stops the refresh loop and closes every connection.
func (c *Client) Close() error {
	close(c.stop)
	<-c.done
	err := c.closeConns()
	c.senders.Wait() // their calls end with the connections
	return err
}

func (c *Client) closeConns() error {
	var errs []error
	for _, cc := range c.seeds {
		errs = append(errs, cc.Close())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, cc := range c.mu.conns {
		errs = append(errs, cc.Close())
	}
	c.mu.conns = nil
	return errors.Join(errs...)
}

// GroupFor is the group of a show in a cluster of groups groups: the same
// function as the nodes' shard map (shard.Map.GroupFor), which a test
// keeps equal.
func GroupFor(showID string, groups uint32) uint32 {
	h := fnv.New64a()
	h.Write([]byte(showID))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return uint32(uint64(uint32(x>>32)) * uint64(groups) >> 32)
}
