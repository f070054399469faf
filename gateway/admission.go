package gateway

import (
	"strings"
	"sync"
	"time"
)

// Admission control: each client_id gets a token bucket per node for the
// calls that write (hold, confirm, release, extend, refund, leave), so a
// flood from one client is answered 429 RATE_LIMITED with Retry-After at
// the gateway, before it costs a raft proposal, and cannot starve the
// others. Reads (seat maps, holds, queue entries, watches) are not counted:
// browsing never uses up a fan's budget for booking. The buckets live on
// each node: a client spreading over n nodes gets up to n times the rate,
// which bounds a flood without coordination between nodes.

// Defaults, per client and node. A fan books a few times a minute; a
// booking site that proxies many fans should give each its own client_id.
const (
	ClientRateDefault  = 200 // writes per second
	ClientBurstDefault = 400
	// clientBucketsMax bounds the buckets kept; past it, buckets idle for
	// clientBucketIdle are dropped (a full bucket is the same as none).
	clientBucketsMax = 100_000
	clientBucketIdle = time.Minute
)

// Admission configures the per-client limit; Rate 0 turns it off.
type Admission struct {
	Rate  float64 // tokens per second
	Burst float64 // bucket size
}

// limiter is a set of token buckets by client_id.
type limiter struct {
	cfg Admission
	// epoch is what a bucket's last is counted from: buckets held by
	// value, without a pointer (a time.Time has one), cost no allocation
	// per new client and nothing for the collector to follow.
	epoch time.Time
	mu    struct {
		sync.Mutex
		buckets map[string]bucket
	}
}

type bucket struct {
	tokens float64
	last   time.Duration // since the limiter's epoch
}

func newLimiter(cfg Admission) *limiter {
	l := &limiter{cfg: cfg, epoch: time.Now()}
	l.mu.buckets = map[string]bucket{}
	return l
}

// allow takes a token of client's bucket at now; when none is left it
// returns false and how long until one is.
func (l *limiter) allow(client string, now time.Time) (bool, time.Duration) {
	if l == nil || l.cfg.Rate <= 0 {
		return true, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	at := now.Sub(l.epoch)
	b, ok := l.mu.buckets[client]
	if !ok {
		if len(l.mu.buckets) >= clientBucketsMax {
			l.sweepLocked(at)
		}
		b = bucket{tokens: l.cfg.Burst, last: at}
		// The id may be a slice of its request's bytes (decodeBatch):
		// the map keeps only the id.
		client = strings.Clone(client)
	}
	b.tokens = min(l.cfg.Burst, b.tokens+(at-b.last).Seconds()*l.cfg.Rate)
	b.last = at
	allowed := b.tokens >= 1
	if allowed {
		b.tokens--
	}
	l.mu.buckets[client] = b
	if allowed {
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.cfg.Rate * float64(time.Second))
	return false, max(wait, time.Millisecond)
}

// sweepLocked drops idle buckets; if every bucket is busy it starts over,
// which at worst lets each client burst once more.
func (l *limiter) sweepLocked(at time.Duration) {
	for id, b := range l.mu.buckets {
		if at-b.last > clientBucketIdle {
			delete(l.mu.buckets, id)
		}
	}
	if len(l.mu.buckets) >= clientBucketsMax {
		l.mu.buckets = map[string]bucket{}
	}
}
