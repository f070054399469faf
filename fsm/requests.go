package fsm

import (
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"math/bits"
	"time"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Exactly-once records. A request's record lives under the hour of log time
// it was applied in (requestKey's bucket): pruning forgets every hour that
// ended before the retention horizon with one range deletion, and nothing
// else is written per request. To find a record, apply asks the request
// filter which hours may hold it and reads only those; a new request
// (nearly every request: retries are rare) usually costs no read.

// request returns the record of an earlier request, nil for a new one.
func (tx *txn) request(client, request string) *ledgerpb.RequestRecord {
	var rec *ledgerpb.RequestRecord
	tx.m.requests.each(requestHash(client, request), func(bucket uint64) bool {
		r := &ledgerpb.RequestRecord{}
		if tx.get(tx.m.requestKey(bucket, client, request), r) {
			rec = r
			return false
		}
		return true
	})
	if rec == nil && checkLedger {
		tx.checkNoRecord(client, request)
	}
	return rec
}

// Past the horizon. A record is pruned RequestRetentionMs or up to an hour
// later after it was applied; a retry that comes later finds none and would
// run as a new request. A client that says when it first sent the request
// (first_sent_at_ms, the same on every retry) is protected: without a
// record, a request first sent more than RequestHorizonMs ago is refused.
// That refusal never turns away a request that ran: it ran at a clock of at
// least first_sent_at_ms - FirstSentAheadMaxMs (sendLimit refused it
// before), so its record lives until first_sent_at_ms - FirstSentAheadMaxMs
// + RequestRetentionMs at least, which is past first_sent_at_ms +
// RequestHorizonMs. The limits must leave that gap:
var _ [RequestRetentionMs - RequestHorizonMs - FirstSentAheadMaxMs]struct{}

// sendLimit answers a request without a record that may not run because
// of its first send time; nil when it may run (or did not say).
// Neither answer is remembered: the clock only moves forward, so a refused
// past-horizon request stays refused, and a request dated too far ahead
// did not run.
func (tx *txn) sendLimit(c *ledgerpb.Command) *ledgerpb.Result {
	if c.FirstSentAtMs == 0 {
		return nil
	}
	if fe := ValidateFirstSent(c.FirstSentAtMs, tx.now); fe != nil {
		return invalid(fe)
	}
	if tx.now-c.FirstSentAtMs <= RequestHorizonMs {
		return nil
	}
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_REQUEST_EXPIRED, Message: fmt.Sprintf(
		"request_id %q of client %q was first sent at %s, longer ago than the %v in which a retry is answered from its record; "+
			"it was not executed now: check its outcome (the client's holds and bookings) and send a new request with a new request_id",
		c.RequestId, c.ClientId, time.UnixMilli(c.FirstSentAtMs).UTC().Format(time.RFC3339Nano),
		time.Duration(RequestHorizonMs)*time.Millisecond)}
}

// ValidateFirstSent checks a request's first send time (Unix ms, 0 for
// none) against now: the log clock in the FSM, the node's clock at the
// gateway, which rejects early.
func ValidateFirstSent(firstSentMs, nowMs int64) *FieldError {
	if firstSentMs < 0 || firstSentMs > ClockMaxMs {
		return fieldErr("first_sent_at_ms", "must be Unix milliseconds from 1970 to 9999")
	}
	if firstSentMs > nowMs+FirstSentAheadMaxMs {
		return fieldErr("first_sent_at_ms", "is %v ahead of the ledger's clock, more than the %v allowed: a request cannot be first sent in the future",
			time.Duration(firstSentMs-nowMs)*time.Millisecond, time.Duration(FirstSentAheadMaxMs)*time.Millisecond)
	}
	return nil
}

// checkNoRecord asserts that no hour holds a record of the request (tests:
// the filter must never miss one).
func (tx *txn) checkNoRecord(client, request string) {
	tx.scan(tx.m.key(kindRequest), prefixEnd(tx.m.key(kindRequest)), 1<<30, func(k []byte) {
		_, c, r, err := decodeRequestKey(k)
		must(err, "decode request key")
		if c == client && r == request {
			violated("the request filter has no record of %q/%q, the store has", client, request)
		}
	})
}

func (tx *txn) putRequest(client, request string, rec *ledgerpb.RequestRecord) {
	bucket := requestBucket(tx.now)
	b := appendRequestRecord(tx.scratch[:0], rec) // the batch copies it
	tx.set(tx.requestKey(bucket, client, request), b)
	tx.scratch = b[:0]
	tx.m.requests.add(requestHash(client, request), bucket)
}

// pruneRequests forgets the records of every hour that ended before the
// retention horizon: one range deletion, once per hour.
func (tx *txn) pruneRequests() {
	horizon := tx.now - RequestRetentionMs
	if horizon <= 0 {
		return
	}
	below := requestBucket(horizon) // hours < below ended by the horizon
	if below <= tx.m.requestsPruned {
		return
	}
	tx.deleteRange(tx.m.requestKey(0, "", ""), tx.m.requestKey(below, "", ""))
	tx.m.requestsPruned = below
	tx.m.requests.prunedBelow(below)
}

// requestFilter answers "which hours may hold a record of this request?"
// without a store read. It is a Bloom filter per span of requestSpanHours
// hours over the records the store holds; a span's filter goes when pruning
// has deleted its last hour, so the filter never forgets a record the store
// still has. "Maybe" is answered by a read of each hour of the span that
// said it (newest first, until one holds the record), so a false positive
// (about 0.1% per span kept) costs up to requestSpanHours reads and changes
// no result: replicas may hold different filters (each builds its own at
// load) and still apply every entry alike.
//
// Spans, not hours: a new request, nearly every request, is asked of every
// filter kept, each question a cache miss or two in filters of millions of
// requests. A day into a group's life a filter per hour made that 25
// filters, 1.4-3 µs a request on this machine (BenchmarkRequestFilter,
// hours=25) against 0.3-0.5 µs with one; spans of four hours make it 7.
//
// Memory: about 1.9 bytes per request in the retention horizon
// (RequestRetentionMs, plus up to requestSpanHours while a span's last hours
// wait for pruning) once a span's filters are full; a span's newest filter
// is made four times its predecessor (requestGenGrowth), so just after it
// is made the span holds up to about 7.5 bytes per request; one stops at
// requestGenBitsMax bits, past which its false positives grow, and so do
// reads, never results.
//
// Only the apply goroutine uses it.
type requestFilter struct {
	gens []*requestGen // oldest first; a span may have several
}

// requestGen is one Bloom filter of a span's records: those of buckets lo
// to hi, lo <= hi (lo rises as pruning deletes hours of the span, and a
// filter goes once it would pass hi).
type requestGen struct {
	span   uint64
	lo, hi uint64
	bits   []uint64
	n, cap int
}

const (
	// requestSpanHours is how many hours of records one filter covers.
	requestSpanHours = 4
	// requestGenCapMin is the first filter's capacity; a filter that fills
	// up is followed, in the same span, by one requestGenGrowth times as
	// large.
	requestGenCapMin = 1 << 14
	// requestGenGrowth is four, not two: a new request asks every filter
	// of its span, and each full filter adds its false positives, so a
	// span that grows from requestGenCapMin to a loaded group's millions
	// in half the filters costs half the probes and reads
	// (BenchmarkRequestFilter: 0.57 % -> 0.34 % of new requests named an
	// hour, 306 -> 277 ns). The price is memory: the newest filter may be
	// four times what it holds instead of twice.
	requestGenGrowth = 4
	// requestGenBitsMax bounds one filter: 256 Mbit, 32 MiB.
	requestGenBitsMax = 1 << 28
	// requestBitsPerKey and requestHashes give about 0.1% false positives.
	requestBitsPerKey = 15
	requestHashes     = 10
)

// requestSeed hashes request identities; any seed will do, the filter being
// no state.
var requestSeed = maphash.MakeSeed()

// requestHash identifies a (client, request) pair in the filter. Pairs that
// collide only cost a read.
func requestHash(client, request string) uint64 {
	var h maphash.Hash
	h.SetSeed(requestSeed)
	h.WriteString(client)
	h.WriteByte(0)
	h.WriteString(request)
	return h.Sum64()
}

// add notes a record in bucket (never older than the previous add's: the
// log clock does not go backwards).
func (f *requestFilter) add(h, bucket uint64) {
	span := bucket / requestSpanHours
	g := f.last()
	if g == nil || g.span != span || (g.n >= g.cap && len(g.bits)*64 < requestGenBitsMax) {
		capacity := requestGenCapMin
		if g != nil && g.span == span {
			capacity = g.cap * requestGenGrowth
		} else if g != nil {
			capacity = max(requestGenCapMin, g.n) // the last span's rate
		}
		nbits := min(capacity*requestBitsPerKey, requestGenBitsMax)
		g = &requestGen{span: span, lo: bucket, bits: make([]uint64, (nbits+63)/64), cap: capacity}
		f.gens = append(f.gens, g)
	}
	g.hi = bucket
	g.n++
	m := uint64(len(g.bits) * 64)
	for i := range uint64(requestHashes) {
		b := probe(h, i, m)
		g.bits[b/64] |= 1 << (b % 64)
	}
}

// probe is the bit of a filter of m bits that hash h sets or tests in
// its i'th probe: the probes step by h's halves swapped (double hashing),
// and the step's high bits scale to [0, m) by a multiplication, not a
// division (a 64-bit division costs tens of cycles, ten times a request).
func probe(h, i, m uint64) uint64 {
	hi, _ := bits.Mul64(h+i*bits.RotateLeft64(h, 32), m)
	return hi
}

// each calls fn with every bucket that may hold a record of h, newest
// first, until fn returns false: the hours of each filter that may have
// it. A bucket several filters cover is named once.
func (f *requestFilter) each(h uint64, fn func(bucket uint64) bool) {
	next := uint64(1<<64 - 1) // buckets from here down are not named yet
	for i := len(f.gens) - 1; i >= 0; i-- {
		g := f.gens[i]
		if g.lo >= next || !g.mayHave(h) {
			continue
		}
		for b := min(g.hi, next-1); ; b-- {
			if !fn(b) {
				return
			}
			if b == g.lo {
				break
			}
		}
		next = g.lo
	}
}

func (g *requestGen) mayHave(h uint64) bool {
	m := uint64(len(g.bits) * 64)
	for i := range uint64(requestHashes) {
		b := probe(h, i, m)
		if g.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
	}
	return true
}

// prunedBelow drops the filters whose buckets are all below bucket, which
// pruning deleted, and stops naming the deleted hours of the rest.
func (f *requestFilter) prunedBelow(bucket uint64) {
	n := 0
	for n < len(f.gens) && f.gens[n].hi < bucket {
		n++
	}
	f.gens = f.gens[n:]
	for _, g := range f.gens {
		if g.lo >= bucket {
			break
		}
		g.lo = bucket
	}
}

func (f *requestFilter) last() *requestGen {
	if len(f.gens) == 0 {
		return nil
	}
	return f.gens[len(f.gens)-1]
}

// loadRequests builds the filter from the stored records, which sort by
// bucket.
func (m *Machine) loadRequests(r reader) (requestFilter, error) {
	var f requestFilter
	err := scanPrefix(r, m.key(kindRequest), func(k, _ []byte) error {
		bucket, client, request, err := decodeRequestKey(k)
		if err != nil {
			return err
		}
		f.add(requestHash(client, request), bucket)
		return nil
	})
	return f, err
}

// payloadHash identifies what a request asked for, so a reused request_id
// with another payload is told apart from a retry. proposed_at is not part of
// it: a retry is proposed at a later time. Nor is first_sent_at: a retry
// through another path (a client that did not stamp, a browser) must match.
//
// Nor is a show's token_key or a join's seed: the gateway draws them at
// random, so a retry through another gateway carries other bytes.
func (tx *txn) payloadHash(c *ledgerpb.Command) []byte {
	// The stamps, and the random bytes the gateway drew (a show's token
	// key, a join's seed), are cleared for the encoding and put back,
	// rather than cloning the command: clients stamp first_sent_at on
	// every write, and a join burst is thousands of joins a second, so a
	// copy per command would be garbage on the hot path. Only apply's
	// goroutine sees the command.
	var tokenKey, seed []byte
	if cs := c.GetCreateShow(); cs != nil {
		tokenKey, cs.TokenKey = cs.TokenKey, nil
		defer func() { cs.TokenKey = tokenKey }()
	}
	if j := c.GetJoinRoom(); j != nil {
		seed, j.Seed = j.Seed, nil
		defer func() { j.Seed = seed }()
	}
	proposed, firstSent := c.ProposedAtMs, c.FirstSentAtMs
	c.ProposedAtMs, c.FirstSentAtMs = 0, 0
	b := appendPayload(tx.scratch[:0], c)
	c.ProposedAtMs, c.FirstSentAtMs = proposed, firstSent
	tx.scratch = b[:0]
	sum := sha256.Sum256(b)
	copy(tx.hash[:], sum[:])
	return tx.hash[:] // the command's; the next one overwrites it
}
