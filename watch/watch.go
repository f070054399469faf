// Package watch serves live seat maps: a watch streams one show's seat
// changes from the group's change log (fsm/doc.go, "Change log"). The log
// is replicated state, so any replica serves it: a follower's stream may
// run a little behind the leader's, but it holds the same records at the
// same revisions and never skips one. A node without a replica of the
// group relays the stream of a node that has one, one stream per show
// (relay.go). The shard router says where a show lives; this package only
// reads and fans out, once per node and show (feed.go), straight to the
// sockets of watchers that keep up (direct.go).
package watch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/seatledger/seatledger/client"
	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

const (
	// watchReadMax bounds the change records one read of the log takes, so
	// a watcher far behind catches up in steps, not one large allocation.
	watchReadMax = 256
	// watchCatchUpMax bounds how long a watch waits for this replica to
	// reach the revision a client resumes from, or to learn a show that the
	// leader has and this replica has not applied yet. Past it the client
	// is told to retry (elsewhere).
	watchCatchUpMax = 5 * time.Second
)

// Metadata of forwarded watches.
const (
	// forwardedKey marks a watch one node forwarded to another: the
	// receiver serves it from its own replica or refuses, never forwards
	// again, so a stale idea of who hosts a group cannot make a loop.
	forwardedKey = "x-seatledger-forwarded"
	// servedByKey names the node whose replica serves a watch; sent as the
	// stream's header once the watch is open.
	servedByKey = "x-seatledger-served-by"
)

// Hub serves a node's watches: it owns the shared feeds of the shows its
// watchers follow (feed.go).
type Hub struct {
	router *shard.Router
	node   *raftnode.Node
	feeds  feedSet
}

// New serves watches of router's node. Close it when the node stops.
func New(router *shard.Router) *Hub {
	return &Hub{router: router, node: router.Node()}
}

// Close stops the feeds (their watchers end with ErrUnavailable), refuses
// new watches served from this node's replicas, and waits for the feeds'
// goroutines.
func (h *Hub) Close() { h.feeds.close() }

// Sink receives a watch. Open is called once, when the watch is sure to
// start (the show exists, the serving replica has reached the revision asked
// for), with the id of the node that serves it; then Send with each event in
// order. An error from either ends the watch with that error.
type Sink interface {
	Open(servedBy string) error
	Send(*ledgerpb.WatchEvent) error
}

// Forwarded reports whether an incoming gRPC call is a watch forwarded by
// another node.
func Forwarded(ctx context.Context) bool {
	md, _ := metadata.FromIncomingContext(ctx)
	return len(md.Get(forwardedKey)) > 0
}

// OpenHeader is the header a gRPC Watch server sends when the watch is open:
// a forwarding node waits for it before it tells its own client the stream
// started.
func OpenHeader(servedBy string) metadata.MD {
	return metadata.Pairs(servedByKey, servedBy)
}

// Watch streams a show's seat changes into sink until ctx ends or something
// fails. With from == 0 the first event is the seat map and its revision;
// otherwise the events are the change records after from, or, when the log
// no longer reaches back to from, a seat map with reset set. Every later
// event is a change record, in revision order. A watch is served by this
// node's replica of the show's group, or else relayed from a node that has
// one (unless forwarded: it came from another node already).
//
// Errors: shard.ErrShowNotFound, raftnode.ErrUnavailable (no replica can serve it
// now; the client resumes elsewhere), the sink's own errors, ctx's error, or
// a forwarded node's gRPC status.
func (h *Hub) Watch(ctx context.Context, showID string, from uint64, forwarded bool, sink Sink) error {
	group := h.router.Map().GroupFor(showID)
	if g, err := h.node.Group(group); err == nil {
		return h.watchLocal(ctx, g, showID, from, sink)
	}
	if forwarded {
		return fmt.Errorf("%w: %w: group %d (a forwarded watch is not forwarded again)", raftnode.ErrUnavailable, raftnode.ErrUnknownGroup, group)
	}
	return h.watchRelayed(ctx, group, showID, from, sink)
}

// watchLocal serves a watch from this node's replica: its first events
// read for it alone, then the show's feed, shared with every local watcher
// of the show (feed.go), on the caller's goroutine.
func (h *Hub) watchLocal(ctx context.Context, g *raftnode.Group, show string, from uint64, sink Sink) error {
	shared, ok := sink.(SharedSink)
	if !ok {
		shared = eventSink{sink}
	}
	// Join first: the feed starts at an index no later than the view the
	// first events are read from, so nothing needs reading twice.
	f, err := h.feeds.join(h, g, show, shared.Format())
	if err != nil {
		return err
	}
	defer h.feeds.leave(f)
	var frames []*Frame
	var pos uint64
	deep(func() {
		var events []*ledgerpb.WatchEvent
		if events, pos, err = h.openLocal(ctx, g, show, from); err == nil {
			frames = framesOf(events, shared.Format())
		}
	})
	if err != nil {
		return err
	}
	if err := shared.OpenShared(h.node.ID()); err != nil {
		return err
	}
	if err := shared.SendFrames(frames); err != nil {
		return err
	}
	return f.serve(ctx, h, shared, pos)
}

// deep runs f on a goroutine of its own and waits for it. f goes deep
// (store reads, encoding a seat map): a watcher's goroutine, which lives
// as long as its watch, would keep the stack f grows for good.
func deep(f func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	<-done
}

// openLocal waits until the replica may serve the watch and returns its
// first events and the index read up to.
func (h *Hub) openLocal(ctx context.Context, g *raftnode.Group, show string, from uint64) ([]*ledgerpb.WatchEvent, uint64, error) {
	if err := catchUp(ctx, g, from); err != nil {
		return nil, 0, err
	}
	for attempt := 0; ; attempt++ {
		v, err := g.Machine().View()
		if err != nil {
			return nil, 0, err
		}
		events, pos, err := h.firstEvents(v, show, from)
		v.Close()
		if !errors.Is(err, shard.ErrShowNotFound) || attempt > 0 {
			return events, pos, err
		}
		// This replica may not have applied the show's creation yet: ask
		// the leader, and wait for the revision it read the show at.
		rev, err := h.showRevision(ctx, show)
		if err != nil {
			return nil, 0, err
		}
		if err := catchUp(ctx, g, rev); err != nil {
			return nil, 0, err
		}
	}
}

// firstEvents reads a watch's first events from one view, so that nothing
// falls between a seat map and the changes after it.
func (h *Hub) firstEvents(v *fsm.View, show string, from uint64) ([]*ledgerpb.WatchEvent, uint64, error) {
	ok, err := v.ShowExists(show)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, shard.ErrShowNotFound
	}
	if from == 0 {
		e, err := h.snapshotEvent(v, show, false)
		if err != nil {
			return nil, 0, err
		}
		return []*ledgerpb.WatchEvent{e}, v.Applied(), nil
	}
	return h.changesAfter(v, show, from)
}

// readChanges reads the changes after pos from a fresh view of the replica.
func (h *Hub) readChanges(g *raftnode.Group, show string, pos uint64) ([]*ledgerpb.WatchEvent, uint64, error) {
	v, err := g.Machine().View()
	if err != nil {
		return nil, 0, err
	}
	defer v.Close()
	return h.changesAfter(v, show, pos)
}

// changesAfter returns the change records of a show after pos in v, and the
// index up to which the log is now read; or, if the log was pruned past pos
// (a client resuming from too old a revision, or a snapshot installed from
// the leader while this watch waited), a reset seat map.
func (h *Hub) changesAfter(v *fsm.View, show string, pos uint64) ([]*ledgerpb.WatchEvent, uint64, error) {
	events, next, err := h.changeEvents(v, show, pos)
	if errors.Is(err, fsm.ErrEventsPruned) {
		e, err := h.snapshotEvent(v, show, true)
		if err != nil {
			return nil, 0, err
		}
		return []*ledgerpb.WatchEvent{e}, next, nil
	}
	return events, next, err
}

// changeEvents returns the change records of a show after pos in v as
// events, and the index up to which the log is now read. When the log was
// pruned past pos it returns fsm.ErrEventsPruned and the view's index.
func (h *Hub) changeEvents(v *fsm.View, show string, pos uint64) ([]*ledgerpb.WatchEvent, uint64, error) {
	recs, err := v.SeatEvents(show, pos, watchReadMax)
	if errors.Is(err, fsm.ErrEventsPruned) {
		return nil, max(pos, v.Applied()), err
	}
	if err != nil {
		return nil, 0, err
	}
	events := make([]*ledgerpb.WatchEvent, len(recs))
	for i, rec := range recs {
		events[i] = &ledgerpb.WatchEvent{ShowId: show, Revision: rec.Revision,
			AppliedAt: timestamppb.New(time.UnixMilli(rec.AppliedAtMs)), Changes: rec.Changes, Offers: rec.Offers, Room: rec.Room}
	}
	if len(recs) == watchReadMax {
		// More may follow before the view's index: read on from here.
		return events, recs[len(recs)-1].Revision, nil
	}
	return events, max(pos, v.Applied()), nil
}

// snapshotEvent is the show's seat map at the view's index as an event,
// with the show's last change at or before it (a relay feed's ring covers
// the revisions between: relay.go).
func (h *Hub) snapshotEvent(v *fsm.View, show string, reset bool) (*ledgerpb.WatchEvent, error) {
	sm, err := v.SeatMap(show)
	if errors.Is(err, fsm.ErrNotFound) {
		return nil, shard.ErrShowNotFound
	}
	if err != nil {
		return nil, err
	}
	last, err := v.ShowLastChange(show)
	if err != nil {
		return nil, err
	}
	at := timestamppb.New(time.UnixMilli(v.Clock()))
	sm.AsOf, sm.Consistency, sm.ServedBy = at, ledgerpb.Consistency_STALE, h.node.ID()
	return &ledgerpb.WatchEvent{ShowId: show, Revision: v.Applied(), AppliedAt: at, Snapshot: sm, Reset_: reset,
		LastChangeRevision: last}, nil
}

// catchUp waits, at most watchCatchUpMax, until the replica applied index.
func catchUp(ctx context.Context, g *raftnode.Group, index uint64) error {
	wctx, cancel := context.WithTimeout(ctx, watchCatchUpMax)
	defer cancel()
	err := g.WaitApplied(wctx, index)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: this replica of group %d is at %d, behind revision %d", raftnode.ErrUnavailable, g.ID(), g.Machine().Applied(), index)
	}
	return err
}

// showRevision asks the show's leader for the show (a linearizable read) and
// returns the revision it was read at: shard.ErrShowNotFound if it does not exist.
func (h *Hub) showRevision(ctx context.Context, show string) (uint64, error) {
	rctx, cancel := context.WithTimeout(ctx, watchCatchUpMax)
	defer cancel()
	sm, err := h.router.SeatMap(rctx, show, ledgerpb.Consistency_LINEARIZABLE)
	if err != nil {
		return 0, err
	}
	return sm.Revision, nil
}

// watchTargets lists the nodes to ask for a group's watch, the hinted
// leader first.
func (h *Hub) watchTargets(group uint32) []string {
	hint := h.router.LeaderHint(group)
	var out []string
	if hint != "" && hint != h.node.ID() {
		out = append(out, hint)
	}
	for _, p := range h.node.Peers() {
		if p.ID != h.node.ID() && p.ID != hint {
			out = append(out, p.ID)
		}
	}
	return out
}

// remoteWatchErr maps a forwarded watch's failure: a missing show is
// shard.ErrShowNotFound, anything that another node may serve is ErrUnavailable,
// and other statuses pass through (the remote gateway made them).
func remoteWatchErr(ctx context.Context, target string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	switch {
	case client.NotFound(err):
		return shard.ErrShowNotFound
	case client.Gone(err):
		return fmt.Errorf("%w: watch at %s: %w", raftnode.ErrUnavailable, target, err)
	}
	return fmt.Errorf("watch: at %s: %w", target, err)
}
