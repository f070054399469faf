package delivery

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
)

// readGapMin spaces a caught-up sink's reads: it wakes on every apply of
// its group, and a busy group applies hundreds of entries a second.
const readGapMin = 100 * time.Millisecond

// groupRunner delivers one led group's events to every sink: one worker
// per sink, and the cursor proposals. It is owned by Deliverer.Run, which
// stops it when this node stops leading the group.
type groupRunner struct {
	d    *Deliverer
	g    *raftnode.Group
	self started
	// sinks (capacity 1) hands the runner the latest sink list.
	sinks chan []sink

	// seen names every sink a list given to this runner had: one missing
	// from a later list was deleted, not merely unknown to a stale read.
	// Only run's goroutine uses it.
	seen map[string]bool

	mu struct {
		sync.Mutex
		delivered map[string]*ledgerpb.WebhookCursor // sink -> last entry fully delivered
	}
}

func (d *Deliverer) startRunner(ctx context.Context, g *raftnode.Group) *groupRunner {
	r := &groupRunner{d: d, g: g, sinks: make(chan []sink, 1), seen: map[string]bool{}}
	r.mu.delivered = map[string]*ledgerpb.WebhookCursor{}
	r.self = start(ctx, nil, r.run)
	return r
}

func (r *groupRunner) stop() { r.self.stop() }

// setSinks replaces the list the runner has not taken yet, if any.
func (r *groupRunner) setSinks(s []sink) {
	select {
	case <-r.sinks:
	default:
	}
	r.sinks <- s
}

func (r *groupRunner) run(ctx context.Context) {
	var wg sync.WaitGroup
	workers := map[string]started{} // sinkKey -> worker
	names := map[string]string{}    // sinkKey -> sink id
	proposed := map[string]uint64{} // sink -> revision last recorded
	defer func() {
		for k, w := range workers {
			w.stop()
			r.d.m.forget(names[k], r.g.ID())
		}
		wg.Wait()
	}()
	t := time.NewTicker(r.d.cfg.CursorInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case sinks := <-r.sinks:
			r.reconcile(ctx, &wg, workers, names, sinks)
		case <-t.C:
			r.record(ctx, proposed)
		}
	}
}

// reconcile starts workers for new sinks, stops those of sinks gone, and
// forgets the cursors this group keeps for sinks that no longer exist: one
// this runner saw deleted, or one whose position is older than the change
// log keeps (deleted while another node led; the registrations are read
// bounded stale, so a sink a list lacks may just be too new for it).
func (r *groupRunner) reconcile(ctx context.Context, wg *sync.WaitGroup, workers map[string]started, names map[string]string, sinks []sink) {
	want := map[string]sink{}
	ids := map[string]bool{}
	for _, s := range sinks {
		want[sinkKey(s)] = s
		ids[s.id()] = true
		r.seen[s.id()] = true
	}
	for k, w := range workers {
		if want[k] == nil {
			w.stop()
			r.d.m.forget(names[k], r.g.ID())
			r.mu.Lock()
			delete(r.mu.delivered, names[k])
			r.mu.Unlock()
			delete(workers, k)
			delete(names, k)
		}
	}
	v, err := r.g.View(ctx, false)
	if err != nil {
		return
	}
	cursors, err := v.WebhookCursors()
	clock := v.Clock()
	v.Close()
	if err != nil {
		r.d.log.Warn("webhook cursors not read", "group", r.g.ID(), "err", err)
		return
	}
	at := map[string]*ledgerpb.WebhookCursor{}
	var forget []*ledgerpb.WebhookCursor
	for _, c := range cursors {
		at[c.SinkId] = c
		if !ids[c.SinkId] && (r.seen[c.SinkId] || clock-c.AppliedAtMs > fsm.EventRetentionMs) {
			forget = append(forget, &ledgerpb.WebhookCursor{SinkId: c.SinkId})
		}
	}
	if len(forget) > 0 {
		r.propose(ctx, forget)
	}
	for k, s := range want {
		if _, ok := workers[k]; ok {
			continue
		}
		cur := at[s.id()]
		if cur == nil {
			cur = startedAt(s)
		}
		names[k] = s.id()
		workers[k] = start(ctx, wg, func(ctx context.Context) { r.deliver(ctx, s, cur) })
	}
}

// record proposes the cursors that moved since the last proposal: one
// entry for all of them.
func (r *groupRunner) record(ctx context.Context, proposed map[string]uint64) {
	var moved []*ledgerpb.WebhookCursor
	r.mu.Lock()
	for id, c := range r.mu.delivered {
		if c.Revision > proposed[id] {
			moved = append(moved, c)
		}
	}
	r.mu.Unlock()
	if len(moved) == 0 {
		return
	}
	if r.propose(ctx, moved) {
		for _, c := range moved {
			proposed[c.SinkId] = c.Revision
		}
	}
}

// propose records cursors in the group's log; a failure is retried at the
// next interval (the cursor only costs repeats while it lags).
func (r *groupRunner) propose(ctx context.Context, cursors []*ledgerpb.WebhookCursor) bool {
	pctx, cancel := context.WithTimeout(ctx, r.d.cfg.RequestTimeout)
	defer cancel()
	res, err := r.g.Propose(pctx, &ledgerpb.Command{Op: &ledgerpb.Command_WebhookCursor{WebhookCursor: &ledgerpb.WebhookCursorCmd{Cursors: cursors}}})
	if err == nil && res.Code != ledgerpb.Code_CODE_OK {
		r.d.log.Warn("webhook cursors refused", "group", r.g.ID(), "code", res.Code, "message", res.Message)
		return false
	}
	if err != nil {
		r.d.log.Debug("webhook cursors not recorded", "group", r.g.ID(), "err", err)
		return false
	}
	return true
}

// delivered notes that sink has everything up to cur.
func (r *groupRunner) delivered(cur *ledgerpb.WebhookCursor) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.mu.delivered[cur.SinkId] = cur
}

// deliver sends the group's events after cur to s until ctx ends, one read
// of the change log at a time: a show's events in revision order, shows
// side by side (sendRead).
func (r *groupRunner) deliver(ctx context.Context, s sink, cur *ledgerpb.WebhookCursor) {
	cur = proto.Clone(cur).(*ledgerpb.WebhookCursor)
	group := r.g.ID()
	r.d.m.start(s.id())
	for ctx.Err() == nil {
		v, err := r.g.View(ctx, false)
		if err != nil {
			sleep(ctx, r.d.cfg.BackoffMin)
			continue
		}
		recs, gap, err := v.GroupEvents(cur, eventsPerReadMax)
		applied := v.Applied()
		v.Close()
		if err != nil {
			r.d.log.Warn("webhook events not read", "group", group, "sink", s.id(), "err", err)
			sleep(ctx, r.d.cfg.BackoffMax)
			continue
		}
		if gap {
			r.d.m.gaps.WithLabelValues(s.id()).Inc()
			r.d.log.Warn("webhook sink fell behind the change log's retention: pruned events were skipped", "group", group, "sink", s.id(), "after", cur.Revision)
		}
		if len(recs) == 0 {
			r.d.m.setBacklog(s.id(), group, 0, 0)
			if !sleep(ctx, readGapMin) {
				return
			}
			wctx, cancel := context.WithTimeout(ctx, r.d.cfg.PollInterval)
			r.g.WaitApplied(wctx, applied+1)
			cancel()
			continue
		}
		r.d.m.setBacklog(s.id(), group, applied-cur.Revision, max(0, time.Since(time.UnixMilli(recs[0].AppliedAtMs)).Seconds()))
		if !r.sendRead(ctx, s, lanesOf(group, s, recs, r.d.cfg.Lanes)) {
			return
		}
		last := recs[len(recs)-1] // GroupEvents reads whole entries
		cur = &ledgerpb.WebhookCursor{SinkId: s.id(), Revision: last.Revision, AppliedAtMs: last.AppliedAtMs}
		r.delivered(cur)
	}
}

// lanesOf splits the events of one read that s wants into lanes by show:
// one show's events all go to one lane, in revision order.
func lanesOf(group uint32, s sink, recs []fsm.ShowEvent, n int) [][]*Event {
	lanes := make([][]*Event, n)
	for len(recs) > 0 {
		k := 1
		for k < len(recs) && recs[k].Revision == recs[0].Revision {
			k++
		}
		for _, e := range eventsOf(group, recs[:k]) { // ids count an entry's events
			if s.wants(e.Type) {
				h := fnv.New32a()
				h.Write([]byte(e.ShowID))
				i := h.Sum32() % uint32(n)
				lanes[i] = append(lanes[i], e)
			}
		}
		recs = recs[k:]
	}
	return lanes
}

// sendRead sends each lane's events in order, the lanes at once, each
// event retried until s takes it; it returns once every lane is done, false
// if ctx ended first. A sink is as slow as its slowest show, per read: the
// position it records is the read's end, which needs every lane done.
func (r *groupRunner) sendRead(ctx context.Context, s sink, lanes [][]*Event) bool {
	var wg sync.WaitGroup
	for _, lane := range lanes {
		if len(lane) == 0 {
			continue
		}
		wg.Go(func() {
			for _, e := range lane {
				body, err := e.encode()
				if err != nil {
					panic(err) // plain strings and numbers always encode
				}
				if !r.sendOne(ctx, s, e, body) {
					return
				}
			}
		})
	}
	wg.Wait()
	return ctx.Err() == nil
}

func (r *groupRunner) sendOne(ctx context.Context, s sink, e *Event, body []byte) bool {
	backoff := r.d.cfg.BackoffMin
	for fails := 0; ; fails++ {
		actx, cancel := context.WithTimeout(ctx, r.d.cfg.RequestTimeout)
		err := s.send(actx, e, body)
		cancel()
		if err == nil {
			r.d.m.deliveries.WithLabelValues(s.id()).Inc()
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		r.d.m.failures.WithLabelValues(s.id()).Inc()
		if fails == 0 || backoff == r.d.cfg.BackoffMax {
			r.d.log.Warn("webhook delivery failed; retrying", "sink", s.id(), "event", e.ID, "err", err, "retry_in", backoff)
		}
		if !sleep(ctx, backoff) {
			return false
		}
		backoff = min(2*backoff, r.d.cfg.BackoffMax)
	}
}
