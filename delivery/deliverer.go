// Package delivery pushes the shows' events to backends: webhooks
// registered through the Admin API, and a Kafka topic (docs/WEBHOOKS.md).
//
// The source is each group's change log (fsm.View.GroupEvents): replicated,
// in revision order, kept for fsm.EventRetentionMs. Each group's leader
// delivers that group's events to every sink, retrying each with backoff
// until the sink takes it: one show's events one after another, so they
// arrive in revision order, and up to Config.Lanes shows at once, so that
// an endpoint's round trip does not bound the group's event rate. How far each sink got is
// recorded in the group's log (WebhookCursorCmd) every CursorInterval, so
// a new leader, or this one after a restart, resumes there: at least once,
// with at most a CursorInterval's events sent again.
//
// Delivery never touches the booking path: it reads committed state and
// proposes one small entry per group and CursorInterval at most. A sink
// that fails keeps only its own cursor back; its backlog is the change log
// itself, bounded by the retention, and what it holds in memory is one
// read of eventsPerReadMax records.
package delivery

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/seatledger/seatledger/proto/ledgerpb"
	"github.com/seatledger/seatledger/raftnode"
	"github.com/seatledger/seatledger/shard"
)

// Deliverer delivers the events of the groups this node leads.
type Deliverer struct {
	router *shard.Router
	cfg    Config
	log    *slog.Logger
	client *http.Client
	kafka  *kafka // nil without a Kafka sink
	m      *metrics
}

// New makes a deliverer for a node's router; cfg must be valid.
func New(router *shard.Router, cfg Config, log *slog.Logger) (*Deliverer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	// Connections are kept for every lane of every group to one endpoint.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = lanesMax
	d := &Deliverer{router: router, cfg: cfg, log: log, m: newMetrics(),
		client: &http.Client{Transport: tr, Timeout: cfg.RequestTimeout, CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is not a 2xx: the registration names the URL
		}}}
	if cfg.KafkaTopic != "" {
		// Idempotent producing (franz-go's default) with acks from every
		// in-sync replica: a retried produce is not written twice, and a
		// produced record survives a broker's loss.
		cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.KafkaBrokers...), kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), kgo.ProduceRequestTimeout(cfg.RequestTimeout))
		if err != nil {
			return nil, fmt.Errorf("delivery: kafka client: %w", err)
		}
		d.kafka = &kafka{topic: cfg.KafkaTopic, client: cl}
	}
	return d, nil
}

// RegisterMetrics registers the delivery metrics with reg.
func (d *Deliverer) RegisterMetrics(reg prometheus.Registerer) error { return d.m.register(reg) }

// Run delivers until ctx ends, then returns once every goroutine it started
// has returned. Every PollInterval it rereads the registrations and starts
// or stops a runner per group as this node gains or loses its leadership.
func (d *Deliverer) Run(ctx context.Context) {
	runners := map[uint32]*groupRunner{}
	defer func() {
		for _, r := range runners {
			r.stop()
		}
		if d.kafka != nil {
			d.kafka.client.Close()
		}
	}()
	var sinks []sink
	known := false // until the first read, no runner may take "none" for an answer
	t := time.NewTicker(d.cfg.PollInterval)
	defer t.Stop()
	for {
		if s, err := d.sinks(ctx); err == nil {
			sinks, known = s, true
		} else if ctx.Err() == nil {
			d.log.Debug("webhook registrations not read", "err", err)
		}
		if known {
			d.follow(ctx, runners, sinks)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// follow starts a runner for each group this node leads and stops the rest.
func (d *Deliverer) follow(ctx context.Context, runners map[uint32]*groupRunner, sinks []sink) {
	led := map[uint32]*raftnode.Group{}
	for _, g := range d.router.Node().Groups() {
		if g.IsLeader() {
			led[g.ID()] = g
		}
	}
	for id, r := range runners {
		if led[id] != r.g {
			r.stop()
			delete(runners, id)
		}
	}
	for id, g := range led {
		r := runners[id]
		if r == nil {
			r = d.startRunner(ctx, g)
			runners[id] = r
		}
		r.setSinks(sinks)
	}
}

// sinks reads the registrations and adds the Kafka sink.
func (d *Deliverer) sinks(ctx context.Context) ([]sink, error) {
	rctx, cancel := context.WithTimeout(ctx, d.cfg.PollInterval+d.cfg.RequestTimeout)
	defer cancel()
	recs, _, err := d.router.Webhooks(rctx, false)
	if err != nil {
		return nil, err
	}
	var out []sink
	for _, rec := range recs {
		out = append(out, newWebhook(rec, d.client))
	}
	if d.kafka != nil {
		out = append(out, d.kafka)
	}
	return out, nil
}

// startedAt is where a sink with no cursor in a group starts: a webhook at
// the log time it was registered, the Kafka sink at the oldest event kept.
func startedAt(s sink) *ledgerpb.WebhookCursor {
	if w, ok := s.(*webhook); ok {
		return &ledgerpb.WebhookCursor{SinkId: s.id(), AppliedAtMs: w.rec.CreatedAtMs}
	}
	return &ledgerpb.WebhookCursor{SinkId: s.id()}
}

// sleep waits d or until ctx ends; false if ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// sinkKey tells two registrations apart when one is replaced by another
// with the same id (deleted and added again).
func sinkKey(s sink) string {
	if w, ok := s.(*webhook); ok {
		return fmt.Sprintf("%s@%d", w.rec.WebhookId, w.rec.Revision)
	}
	return s.id()
}

// started is a goroutine run by start: its owner ends it with stop, which
// returns once it has returned.
type started struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// start runs f in a goroutine under a child of ctx; wg, if not nil, counts
// it too (an owner of many waits for all at once).
func start(ctx context.Context, wg *sync.WaitGroup, f func(ctx context.Context)) started {
	ctx, cancel := context.WithCancel(ctx)
	s := started{cancel: cancel, done: make(chan struct{})}
	if wg != nil {
		wg.Add(1)
	}
	go func() {
		if wg != nil {
			defer wg.Done()
		}
		defer close(s.done)
		f(ctx)
	}()
	return s
}

func (s started) stop() { s.cancel(); <-s.done }
