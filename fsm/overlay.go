package fsm

// The overlay: a group's writes since its last checkpoint, held in memory
// and read over Pebble (issue 16: state in memory, the raft log as the
// write-ahead log, Pebble written behind at checkpoints).
//
// Readers may hold a view of the overlay across later applies (a View's
// reads run outside the machine's lock), so what a reader sees never
// changes: the overlay is a stack of immutable sorted runs, like a small
// LSM tree in memory. Apply appends records to an arena, seals them into a
// run (sorted, one entry per key) and pushes it; runs of like size merge,
// so a stack of n records holds O(log n) runs. A merge copies offsets
// only: the records stay where the arena put them. Nothing here holds a
// Go pointer but a few slice headers, so a full overlay costs the garbage
// collector next to nothing to mark.
//
// Semantics are Pebble's: a newer run's record of a key hides older runs'
// and Pebble's; a record may be a deletion; a range deletion hides older
// runs' and Pebble's keys in [start, end). Within one run every point
// record is newer than every range deletion that covers it (Seal keeps it
// so: a range deletion seals the records before it into their own run).

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
)

// Record kinds in the arena.
const (
	recSet byte = 1
	recDel byte = 2
	recDR  byte = 3 // range deletion: key start, value end
)

// The arena's records: kind(1) | key length u16 | value length u32 | key |
// value. An offset is chunk<<arenaChunkBits | position.
const (
	recHeaderLen   = 7
	arenaChunkBits = 20
	arenaChunkLen  = 1 << arenaChunkBits
	arenaChunksMax = 1 << (32 - arenaChunkBits)
	recKeyLenMax   = 1<<16 - 1
)

// arena holds records, never moving one: a record written stays readable
// at its offset by every reader that learned the offset. A chunk's slice
// header is written once, when the chunk is made, so readers may copy the
// chunk list while apply writes on: they read only what they were told.
// A record larger than a chunk gets one of its own.
type arena struct {
	c     chunks
	used  int // bytes used of the last chunk
	bytes int // bytes of records written, for the checkpoint bound
	// pool gives chunks, and takes them back once the arena is retired
	// (a checkpoint or a restore replaced it) and no view reads it:
	// refs counts the views that do, plus arenaRetired once retired,
	// and whoever brings it to exactly arenaRetired recycles the chunks.
	pool *chunkPool
	refs atomic.Int64
	// idx holds the runs' offsets (offsets), bump-allocated so that
	// sealing and merging allocate nothing of the collector's; recycled
	// with the chunks. Only the apply goroutine allocates, holding mu.
	idx     [][]uint32
	idxUsed int
}

// idxChunkLen is the offsets in one chunk of an arena's run indexes.
const idxChunkLen = 1 << 16

// offsets returns an empty slice with room for n offsets, from the
// arena's index chunks.
func (a *arena) offsets(n int) []uint32 {
	last := len(a.idx) - 1
	if last < 0 || a.idxUsed+n > len(a.idx[last]) {
		if n > idxChunkLen {
			return make([]uint32, 0, n)
		}
		c := a.pool.getIdx()
		if c == nil {
			c = make([]uint32, idxChunkLen)
		}
		a.idx = append(a.idx, c)
		a.idxUsed = 0
		last++
	}
	out := a.idx[last][a.idxUsed : a.idxUsed : a.idxUsed+n]
	a.idxUsed += n
	return out
}

const arenaRetired = 1 << 40

func (a *arena) acquire() { a.refs.Add(1) }

func (a *arena) release() {
	if a.refs.Add(-1) == arenaRetired {
		a.pool.put(a.c, a.idx)
	}
}

func (a *arena) retire() {
	if a.refs.Add(arenaRetired) == arenaRetired {
		a.pool.put(a.c, a.idx)
	}
}

// chunkPool keeps retired arenas' chunks for the next arenas of a
// machine: it writes about overlayBytesMax between checkpoints, and
// reusing that memory spares the collector as much allocation (and the
// pacing of its cycles) each time.
type chunkPool struct {
	mu      sync.Mutex
	free    [][]byte
	freeIdx [][]uint32
}

// chunkPoolMax bounds the pool: an overlay's worth, and a few more.
const chunkPoolMax = overlayBytesMax/arenaChunkLen + 8

func (p *chunkPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return nil
	}
	c := p.free[n-1]
	p.free[n-1] = nil
	p.free = p.free[:n-1]
	return c
}

func (p *chunkPool) getIdx() []uint32 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.freeIdx)
	if n == 0 {
		return nil
	}
	c := p.freeIdx[n-1]
	p.freeIdx[n-1] = nil
	p.freeIdx = p.freeIdx[:n-1]
	return c
}

func (p *chunkPool) put(cs chunks, idx [][]uint32) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		if len(c) == arenaChunkLen && len(p.free) < chunkPoolMax {
			p.free = append(p.free, c)
		}
	}
	for _, c := range idx {
		if len(c) == idxChunkLen && len(p.freeIdx) < idxPoolMax {
			p.freeIdx = append(p.freeIdx, c)
		}
	}
}

// idxPoolMax bounds the pooled index chunks: an overlay's records are
// merged about log2(records) times, each merge a new index.
const idxPoolMax = 64

// chunks are an arena's memory as a reader sees it.
type chunks [][]byte

func (a *arena) add(kind byte, key, val []byte) uint32 {
	n := recHeaderLen + len(key) + len(val)
	if len(key) > recKeyLenMax || n > 1<<31 {
		violated("overlay record of %d bytes, key %d", n, len(key))
	}
	last := len(a.c) - 1
	if last < 0 || a.used+n > len(a.c[last]) {
		if len(a.c) == arenaChunksMax {
			violated("overlay arena full")
		}
		c := a.pool.get()
		if c == nil || n > len(c) {
			c = make([]byte, max(arenaChunkLen, n))
		}
		a.c = append(a.c, c)
		a.used = 0
		last++
	}
	pos := a.used
	b := a.c[last][pos : pos+n]
	b[0] = kind
	binary.LittleEndian.PutUint16(b[1:], uint16(len(key)))
	binary.LittleEndian.PutUint32(b[3:], uint32(len(val)))
	copy(b[recHeaderLen:], key)
	copy(b[recHeaderLen+len(key):], val)
	a.used += n
	a.bytes += n
	return uint32(last)<<arenaChunkBits | uint32(pos)
}

// rec returns the record at off.
func (c chunks) rec(off uint32) (kind byte, key, val []byte) {
	b := c[off>>arenaChunkBits]
	p := int(off & (arenaChunkLen - 1))
	kl := int(binary.LittleEndian.Uint16(b[p+1:]))
	vl := int(binary.LittleEndian.Uint32(b[p+3:]))
	k := p + recHeaderLen
	return b[p], b[k : k+kl : k+kl], b[k+kl : k+kl+vl : k+kl+vl]
}

func (c chunks) key(off uint32) []byte {
	b := c[off>>arenaChunkBits]
	p := int(off & (arenaChunkLen - 1))
	kl := int(binary.LittleEndian.Uint16(b[p+1:]))
	return b[p+recHeaderLen : p+recHeaderLen+kl : p+recHeaderLen+kl]
}

// run is an immutable sorted set of records: points in key order, one per
// key, and range deletions.
type run struct {
	points []uint32 // offsets of recSet and recDel records, by key
	dels   []uint32 // offsets of recDR records
}

// covers reports whether one of r's range deletions covers key.
func (r *run) covers(a chunks, key []byte) bool {
	for _, d := range r.dels {
		_, s, e := a.rec(d)
		if bytes.Compare(s, key) <= 0 && bytes.Compare(key, e) < 0 {
			return true
		}
	}
	return false
}

// find returns the position of the first point >= key.
func (r *run) find(a chunks, key []byte) int {
	i, _ := slices.BinarySearchFunc(r.points, key, func(off uint32, k []byte) int {
		return bytes.Compare(a.key(off), k)
	})
	return i
}

// layers is what a reader sees of an overlay: its arena and runs, oldest
// first, over the overlay a checkpoint is writing, if any (below). A
// layers value is never changed once a reader may hold it.
type layers struct {
	a    chunks
	runs []run
	ar   *arena // a's owner, for a view to hold (acquire)
	// below is the previous overlay, older than every run here, while a
	// checkpoint writes it to Pebble (checkpoint.go); nil otherwise.
	below *layers
}

// get looks key up in the runs, newest first, then below: found reports
// whether the overlay decides the key (set or deleted), ok whether it is
// set.
func (l layers) get(key []byte) (val []byte, ok, found bool) {
	for i := len(l.runs) - 1; i >= 0; i-- {
		r := &l.runs[i]
		if j := r.find(l.a, key); j < len(r.points) {
			kind, k, v := l.a.rec(r.points[j])
			if bytes.Equal(k, key) {
				return v, kind == recSet, true
			}
		}
		if r.covers(l.a, key) {
			return nil, false, true
		}
	}
	if l.below != nil {
		return l.below.get(key)
	}
	return nil, false, false
}

// acquire keeps the arenas l reads until release.
func (l layers) acquire() {
	l.ar.acquire()
	if l.below != nil {
		l.below.ar.acquire()
	}
}

func (l layers) release() {
	l.ar.release()
	if l.below != nil {
		l.below.ar.release()
	}
}

// sources returns l's runs, below's first, and the chunks each one's
// records are in: oldest first, as an iterator merges them.
func (l layers) sources() ([]run, []chunks) {
	n := len(l.runs)
	if l.below == nil {
		as := make([]chunks, n)
		for i := range as {
			as[i] = l.a
		}
		return l.runs, as
	}
	n += len(l.below.runs)
	runs, as := make([]run, 0, n), make([]chunks, 0, n)
	{
		for _, r := range l.below.runs {
			runs, as = append(runs, r), append(as, l.below.a)
		}
	}
	for _, r := range l.runs {
		runs, as = append(runs, r), append(as, l.a)
	}
	return runs, as
}

// overlay is a machine's writes since its last checkpoint: the published
// layers and the records written since (pending), not yet sealed.
type overlay struct {
	a    *arena
	runs []run
	// below is the previous overlay while a checkpoint writes it
	// (layers.below).
	below *layers
	// pend holds the offsets of point records not yet sealed, in write
	// order; pendDels the range deletions among them, which are older
	// than every record of pend (DeleteRange seals first).
	pend     []uint32
	pendDels []uint32
	// sorted is scratch for seal.
	sorted []sealed
	// base is the stack as of the last commit, basePend and basePendDels
	// how many of pend and pendDels that commit covered: abort goes back
	// to them. Pending records are sealed lazily (commit), so a batch may
	// begin with committed records pending; a seal during the batch seals
	// those into a run of their own first, so that base stays a stack of
	// committed runs.
	base                   []run
	basePend, basePendDels int
	// commits counts commit calls, for pubLayers' cache.
	commits uint64
}

// sealed is a pending record in seal's sort: its key and offset.
type sealed struct {
	key []byte
	off uint32
}

func newOverlay(pool *chunkPool) *overlay { return &overlay{a: &arena{pool: pool}} }

func (o *overlay) set(key, val []byte) { o.pend = append(o.pend, o.a.add(recSet, key, val)) }

func (o *overlay) del(key []byte) { o.pend = append(o.pend, o.a.add(recDel, key, nil)) }

func (o *overlay) deleteRange(start, end []byte) {
	if bytes.Compare(start, end) >= 0 {
		return
	}
	o.seal()
	o.pendDels = append(o.pendDels, o.a.add(recDR, start, end))
}

// get looks key up as the apply goroutine has the overlay, pending records
// included: it scans up to pendScanMax of them, newest first, rather than
// seal them into a run of a few records that merges cost more than the
// scan; more are sealed first.
func (o *overlay) get(key []byte) (val []byte, ok, found bool) {
	if len(o.pend) > pendScanMax {
		o.seal()
	}
	for i := len(o.pend) - 1; i >= 0; i-- {
		kind, k, v := o.a.c.rec(o.pend[i])
		if bytes.Equal(k, key) {
			return v, kind == recSet, true
		}
	}
	// Pending range deletions are older than every pending record.
	for _, d := range o.pendDels {
		if _, s, e := o.a.c.rec(d); bytes.Compare(s, key) <= 0 && bytes.Compare(key, e) < 0 {
			return nil, false, true
		}
	}
	return layers{a: o.a.c, runs: o.runs, below: o.below}.get(key)
}

// pendScanMax is the most pending records a read scans rather than seal.
const pendScanMax = 64

// bytes is the size of the overlay's records, garbage included: what a
// checkpoint bound counts.
func (o *overlay) bytes() int { return o.a.bytes }

// empty reports whether the overlay holds no record.
func (o *overlay) empty() bool { return o.a.bytes == 0 }

// commit marks every record so far committed: an abort keeps them.
func (o *overlay) commit() {
	o.base = o.runs[:len(o.runs):len(o.runs)]
	o.basePend, o.basePendDels = len(o.pend), len(o.pendDels)
	o.commits++
}

// abort drops the records written since the last commit, and the runs
// they were sealed into.
func (o *overlay) abort() {
	o.runs, o.pend, o.pendDels = o.base, o.pend[:o.basePend], o.pendDels[:o.basePendDels]
}

// pending reports how many records wait for a seal.
func (o *overlay) pending() int { return len(o.pend) + len(o.pendDels) }

// seal makes the pending records a run on top of the stack, then merges
// runs of like size. Committed records pending are sealed first into a
// run of their own, which becomes the base an abort returns to.
func (o *overlay) seal() {
	if o.basePend > 0 || o.basePendDels > 0 {
		more := len(o.pend) > o.basePend || len(o.pendDels) > o.basePendDels
		o.push(sortRun(o.a.c, o.pend[:o.basePend], o.pendDels[:o.basePendDels], &o.sorted, o.a.offsets))
		o.pend = o.pend[:copy(o.pend, o.pend[o.basePend:])]
		o.pendDels = o.pendDels[:copy(o.pendDels, o.pendDels[o.basePendDels:])]
		o.basePend, o.basePendDels = 0, 0
		o.base = o.runs[:len(o.runs):len(o.runs)] // what is left is not committed
		if !more {
			return
		}
	}
	if o.pending() == 0 {
		return
	}
	o.push(sortRun(o.a.c, o.pend, o.pendDels, &o.sorted, o.a.offsets))
	o.pend, o.pendDels = o.pend[:0], o.pendDels[:0]
}

// sortRun makes a run of pending records (points in write order, and the
// range deletions older than all of them): sorted by key, the last write
// of each key kept. The points' array comes from alloc, sorted is scratch.
func sortRun(a chunks, pend, dels []uint32, sorted *[]sealed, alloc func(n int) []uint32) run {
	// Each key is resolved once. Of equal keys the last written comes
	// last: offsets grow in write order (arena.add). A stable sort moves
	// records about log n times more than this one.
	s := (*sorted)[:0]
	for _, off := range pend {
		s = append(s, sealed{key: a.key(off), off: off})
	}
	slices.SortFunc(s, func(x, y sealed) int {
		if c := bytes.Compare(x.key, y.key); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	})
	// Keep the last write of each key: it is the latest of equal ones.
	pts := alloc(len(s))
	for i, r := range s {
		if i+1 < len(s) && bytes.Equal(r.key, s[i+1].key) {
			continue
		}
		pts = append(pts, r.off)
	}
	clear(s) // no slice of a retired arena's chunks stays
	*sorted = s[:0]
	return run{points: pts, dels: slices.Clone(dels)}
}

// push puts r on top of the stack and folds runs of like size, foldWidth
// at a time (tiers, as an LSM tree's size-tiered compaction): each record
// is merged about log4 of the runs' growth times instead of log2, and
// each merge reads its records' keys out of the arena once, mostly
// missing the caches for a stack's larger runs: a block at a time
// (keyCursor), so that the misses overlap.
func (o *overlay) push(r run) {
	a := o.a.c
	// Readers (view) and base may hold the stack's array: a new one takes
	// the merges, a copy of a few slice headers for a seal of hundreds of
	// records.
	runs := append(o.runs[:len(o.runs):len(o.runs)], r)
	for n := len(runs); ; n = len(runs) {
		switch {
		case n >= foldWidth && foldable(runs[n-foldWidth:]):
			w := runs[n-foldWidth:]
			points := 0
			for i := range w {
				points += len(w[i].points)
			}
			runs[n-foldWidth] = fold4(a, w, o.a.offsets(points))
			clear(runs[n-foldWidth+1:])
			runs = runs[:n-foldWidth+1]
		case n > runsTiered && mergeable(&runs[n-2], &runs[n-1]):
			// Runs that tiers leave unmerged (a small seal between
			// larger ones) are merged two by two past runsTiered.
			out := o.a.offsets(len(runs[n-2].points) + len(runs[n-1].points))
			runs[n-2] = mergeRuns(a, &runs[n-2], &runs[n-1], out)
			runs[n-1] = run{}
			runs = runs[:n-1]
		default:
			o.runs = runs
			return
		}
	}
}

// foldWidth is how many runs of like size fold into one (fold4).
const foldWidth = 4

// fold4 merges four runs, oldest first, as mergeRuns would pairwise, in
// one pass: two pair streams, whose heads a third merge takes as a pair
// stream takes its runs'. Each
// point's key is read from the arena once, and each point costs two
// compares, where merging 1+1, 1+1, then 2+2 read and compared the first
// pairs' points twice. The points go to out's array, which has room for
// all of w's.
func fold4(a chunks, w []run, out []uint32) run {
	var lo, hi pairStream
	lo.init(a, &w[0], &w[1])
	hi.init(a, &w[2], &w[3])
	hiDels := len(w[2].dels) > 0 || len(w[3].dels) > 0
	for lo.has || hi.has {
		c := 1
		switch {
		case !hi.has:
			c = -1
		case lo.has:
			c = bytes.Compare(lo.key, hi.key)
		}
		if c < 0 {
			if !hiDels || !(w[2].covers(a, lo.key) || w[3].covers(a, lo.key)) {
				out = append(out, lo.off)
			}
			lo.next()
			continue
		}
		if c == 0 {
			lo.next() // the newer pair's point hides it
		}
		out = append(out, hi.off)
		hi.next()
	}
	dels := w[0].dels
	for i := 1; i < len(w); i++ {
		if len(w[i].dels) > 0 {
			dels = append(slices.Clip(dels), w[i].dels...)
		}
	}
	return run{points: out, dels: dels}
}

// keyBlock is how many points' keys a keyCursor resolves at a time.
const keyBlock = 16

// keyCursor walks a run's points, resolving their keys from the arena a
// block at a time. A merge's runs name records all over the arena, so
// most keys miss the caches: resolved one per step, each miss stalls the
// merge; resolved a block at a time, the loads do not depend on one
// another and the core overlaps their misses.
type keyCursor struct {
	pts []uint32
	i   int // the head is pts[i], its key buf[pos]
	pos int
	n   int // keys resolved in buf
	buf [keyBlock][]byte
}

func (c *keyCursor) init(a chunks, pts []uint32) {
	c.pts, c.i = pts, 0
	c.fill(a)
}

func (c *keyCursor) fill(a chunks) {
	rest := c.pts[c.i:]
	n := min(len(rest), keyBlock)
	for k, off := range rest[:n] {
		c.buf[k] = a.key(off)
	}
	c.pos, c.n = 0, n
}

// ok reports whether the cursor has a head.
func (c *keyCursor) ok() bool { return c.i < len(c.pts) }

func (c *keyCursor) off() uint32 { return c.pts[c.i] }

func (c *keyCursor) key() []byte { return c.buf[c.pos] }

// advance moves the head to the next point.
func (c *keyCursor) advance(a chunks) {
	c.i++
	if c.pos++; c.pos == c.n && c.i < len(c.pts) {
		c.fill(a)
	}
}

// pairStream merges an older and a newer run a point at a time: the
// newer's points win over the older's of the same key, and its range
// deletions drop the older's points they cover. Its head (off, key) is
// the next point of the merge; each point's key is read from the arena
// once (keyCursor).
type pairStream struct {
	a     chunks
	newer *run
	o, n  keyCursor // older's and newer's points
	off   uint32
	key   []byte
	has   bool
}

// init starts p on its runs' first points.
func (p *pairStream) init(a chunks, older, newer *run) {
	p.a, p.newer = a, newer
	p.o.init(a, older.points)
	p.n.init(a, newer.points)
	p.next()
}

// next moves the head to the merge's next point.
func (p *pairStream) next() {
	for {
		oi, nj := p.o.ok(), p.n.ok()
		if !oi && !nj {
			p.has = false
			return
		}
		c := 1
		switch {
		case !nj:
			c = -1
		case oi:
			c = bytes.Compare(p.o.key(), p.n.key())
		}
		if c < 0 {
			off, key := p.o.off(), p.o.key()
			p.o.advance(p.a)
			if len(p.newer.dels) > 0 && p.newer.covers(p.a, key) {
				continue
			}
			p.off, p.key, p.has = off, key, true
			return
		}
		if c == 0 { // the newer's point hides the older's
			p.o.advance(p.a)
		}
		p.off, p.key, p.has = p.n.off(), p.n.key(), true
		p.n.advance(p.a)
		return
	}
}

// runsTiered is the stack's height past which runs also merge two by two.
const runsTiered = 24

// foldable says when the top runs w (oldest first) fold into one: none
// has runPointsMerged points, and the oldest is at most twice the newest,
// so sizes grow about fourfold down the stack.
func foldable(w []run) bool {
	for i := range w {
		if len(w[i].points) >= runPointsMerged {
			return false
		}
	}
	newest := &w[len(w)-1]
	return 2*(len(newest.points)+len(newest.dels)) >= len(w[0].points)+len(w[0].dels)
}

// mergeable says when the newer of two runs is big enough to merge into
// the older (past runsTiered runs): sizes then fall by half or more down
// the stack.
// A run of runPointsMerged points or more takes no more merges: merging
// into it would walk its records all over the arena, out of the caches,
// for a run that the next checkpoint folds anyway; an overlay of
// overlayBytesMax holds a few such runs.
func mergeable(older, newer *run) bool {
	return len(older.points) < runPointsMerged &&
		2*(len(newer.points)+len(newer.dels)) >= len(older.points)+len(older.dels)
}

// runPointsMerged is the size of a run past which it takes no merges.
const runPointsMerged = 1 << 15

// mergeRuns merges newer over older: newer's records win, and its range
// deletions drop older's points they cover (pairStream).
// The points go to out's array, which has room for both runs'.
func mergeRuns(a chunks, older, newer *run, out []uint32) run {
	var p pairStream
	for p.init(a, older, newer); p.has; p.next() {
		out = append(out, p.off)
	}
	dels := append(slices.Clip(older.dels), newer.dels...)
	return run{points: out, dels: dels}
}

// foldRuns merges runs, oldest first, into one as mergeRuns would two by
// two, but in one pass: two by two, the first run's points would be
// copied (and their keys compared) once for every later run. A heap keeps
// each run's next point, its key resolved once; of equal keys the newest
// run's comes first and hides the others.
func foldRuns(a chunks, runs []run) run {
	points, dels := 0, 0
	for i := range runs {
		points += len(runs[i].points)
		dels += len(runs[i].dels)
	}
	out := make([]uint32, 0, points)
	// delsAbove[i]: a run newer than run i has range deletions.
	delsAbove := make([]bool, len(runs))
	for i, any := len(runs)-1, false; i >= 0; i-- {
		delsAbove[i] = any
		any = any || len(runs[i].dels) > 0
	}
	cursors := make([]keyCursor, len(runs))
	h := foldHeap{heads: make([]foldHead, 0, len(runs))}
	for i := range runs {
		if len(runs[i].points) > 0 {
			cursors[i].init(a, runs[i].points)
			h.heads = append(h.heads, foldHead{run: i, c: &cursors[i]})
		}
	}
	for i := len(h.heads)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	var last []byte
	for n := 0; len(h.heads) > 0; n++ {
		top := &h.heads[0]
		if key := top.c.key(); n == 0 || !bytes.Equal(key, last) {
			last = key
			if !delsAbove[top.run] || !coveredAfter(a, runs[top.run+1:], key) {
				out = append(out, top.c.off())
			}
		}
		if top.c.advance(a); !top.c.ok() {
			h.heads[0] = h.heads[len(h.heads)-1]
			h.heads = h.heads[:len(h.heads)-1]
		}
		h.down(0)
	}
	all := make([]uint32, 0, dels)
	for i := range runs {
		all = append(all, runs[i].dels...)
	}
	return run{points: out, dels: all}
}

// coveredAfter reports whether a range deletion of runs covers key.
func coveredAfter(a chunks, runs []run, key []byte) bool {
	for i := range runs {
		if runs[i].covers(a, key) {
			return true
		}
	}
	return false
}

// foldHead is a run's next point in foldRuns.
type foldHead struct {
	run int
	c   *keyCursor
}

// foldHeap orders runs' heads by key, the newest run first among equal
// keys.
type foldHeap struct{ heads []foldHead }

func (h *foldHeap) less(i, j int) bool {
	x, y := &h.heads[i], &h.heads[j]
	c := bytes.Compare(x.c.key(), y.c.key())
	return c < 0 || c == 0 && x.run > y.run
}

func (h *foldHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h.heads) {
			return
		}
		m := l
		if r := l + 1; r < len(h.heads) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h.heads[i], h.heads[m] = h.heads[m], h.heads[i]
		i = m
	}
}

// view returns the overlay's runs as a reader sees them, pending records
// left out: the caller seals first when they must be seen, or adds them
// (Machine.pubLayers). It changes nothing: readers holding the machine's
// lock for reading call it too.
func (o *overlay) view() layers {
	return layers{a: o.a.c[:len(o.a.c):len(o.a.c)], runs: o.runs[:len(o.runs):len(o.runs)], ar: o.a, below: o.below}
}

// reader is a group's state as one reader sees it: layers over a Pebble
// reader. Every read of group state goes through one.
type reader struct {
	l layers
	r pebble.Reader
	// o, when set, is the overlay of the apply goroutine, which reads it
	// as it is at each call instead of l: pending records included.
	o *overlay
}

// Get is pebble.Reader's Get over the layers: pebble.ErrNotFound when the
// key is not set.
func (s reader) Get(key []byte) ([]byte, io.Closer, error) {
	var v []byte
	var ok, found bool
	if s.o != nil {
		v, ok, found = s.o.get(key)
	} else {
		v, ok, found = s.l.get(key)
	}
	if found {
		if !ok {
			return nil, nil, pebble.ErrNotFound
		}
		return v, nopCloser{}, nil
	}
	return s.r.Get(key)
}

// NewIter opens an iterator over the layers and the store.
func (s reader) NewIter(o *pebble.IterOptions) (*overlayIter, error) {
	if s.o != nil {
		s.o.seal() // an iterator reads sorted runs
		s.l = s.o.view()
	}
	p, err := s.r.NewIter(o)
	if err != nil {
		return nil, err
	}
	return newOverlayIter(s.l, p, o), nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// overlayBytesMax bounds a group's overlay (records, overwritten ones
// included): past it apply checkpoints, so the overlay stays bounded when
// raft snapshots rarely (raftnode's SnapshotThreshold). A loaded node holds
// 8 groups: at most 8 x 16 MiB of arenas (and their run indexes, about
// two fifths of that: every merge writes a new index, and the merged-away
// ones are kept until the arena retires), next to which Pebble's
// memtables now hold almost nothing (store.go). Smaller overlays
// checkpoint more often, each a table Pebble must sync, ingest into L0 and
// compact; larger ones merge runs that no longer fit the caches, and hold
// the lock longer while they fold (docs/PERFORMANCE.md has the
// measurements).
const overlayBytesMax = 16 << 20
