package fsm

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// Machine is the seat state machine of one raft group. Apply, Restore and
// Snapshot are called only from raft's FSM goroutine (one owner); readers use
// the published overlay over Pebble snapshots, and the atomically published
// applied index and clock.
type Machine struct {
	db     *pebble.DB
	group  uint32
	prefix []byte

	// published is the applied index and clock of the group's last commit
	// (they mirror the meta record) and the next expiry of a live hold at
	// it (written only by the apply goroutine, read by anyone), and commits counts commits begun and ended (odd
	// while one is in flight): together they let a view skip reading the
	// meta record (View.snapshot).
	published atomic.Pointer[appliedPoint]
	commits   atomic.Uint64

	// unsafe is set once before the first Apply and read only by apply.
	unsafe Unsafe

	// changes remembers which shows' change logs grew lately (events.go).
	changes changeIndex
	// led is the group's seat ledger in memory (ledger.go). The apply
	// goroutine changes it holding mu, and reads it without; readers hold
	// mu for reading (View), so they see it between batches, as published.
	mu  sync.RWMutex
	led ledger
	// requests filters the request records in the store (requests.go);
	// only the apply goroutine uses it.
	requests requestFilter
	// requestsPruned is the bucket below which the request records are
	// deleted, as far as this machine knows (it only spares repeating the
	// deletion); apply goroutine only.
	requestsPruned uint64
	// scratchDir is where Restore and checkpoints write the tables they ingest ("": the
	// system's temporary directory).
	scratchDir string
	// eventBuckets is 1 + the newest bucket of change records the store has
	// begun (events.go), 0 before the first; apply goroutine only.
	eventBuckets uint64
	// spare is the txn of the last committed batch, reused by the next
	// (begin); apply goroutine only.
	spare *txn
	// storeReads counts the apply path's reads and scans of Pebble, for
	// benchmarks (the hold path makes none); apply goroutine only.
	storeReads uint64
	// storeWrites counts the records the apply path's batches wrote or
	// deleted, range deletions and the meta record included, for the
	// same benchmarks: each is one insert into the overlay.
	storeWrites uint64
	// ov holds the group's writes since its last checkpoint (overlay.go,
	// checkpoint.go); only the apply goroutine uses it, holding mu.
	ov *overlay
	// checkpoints counts checkpoints, and checkpointFlushes those whose
	// table overlapped the memtables (checkpoint.go), for tests; held by
	// mu.
	checkpoints       uint64
	checkpointFlushes uint64
	// checkpointMu makes checkpoints run one at a time.
	checkpointMu sync.Mutex
	// pendRun caches pubLayers' answer for the readers of one commit.
	pendRun atomic.Pointer[pendLayers]
	// checkpointDue is set by a commit that finds the overlay past
	// checkpointBound, and cleared by the freeze that follows (on the
	// owner's goroutine).
	checkpointDue   atomic.Bool
	checkpointBytes int
	// checkpointInLine is set by a commit that finds the overlay past
	// twice the bound (checkpointIfDue); apply goroutine only.
	checkpointInLine bool
	// chunks keeps the memory of retired overlays for the next ones.
	chunks chunkPool
	// decodeScratch is the memory decodeEntry decodes entries' messages
	// into; apply goroutine only.
	decodeScratch decodeScratch
}

// SetUnsafe switches off safety checks (unsafe_faults.go); call it before
// the first Apply. Only a fault build (-tags faults) has any to switch off.
func (m *Machine) SetUnsafe(u Unsafe) { m.unsafe = u }

// SetCheckpointBytes sets the overlay size past which a checkpoint is
// due (CheckpointDue; 0 or more than overlayBytesMax: overlayBytesMax,
// 16 MiB); call it before the first Apply. A fault harness makes it small,
// so that its runs checkpoint often.
func (m *Machine) SetCheckpointBytes(n int) { m.checkpointBytes = n }

// NewMachine loads group's applied index, clock and ledger from db.
func NewMachine(db *pebble.DB, group uint32) (*Machine, error) {
	m := &Machine{db: db, group: group, prefix: groupPrefix(group)}
	m.ov = newOverlay(&m.chunks)
	applied, clock, err := readMeta(m.store(), m.metaKey())
	if err != nil {
		return nil, fmt.Errorf("fsm: read meta of group %d: %w", group, err)
	}
	if m.led, err = m.load(m.store()); err != nil {
		return nil, err
	}
	if m.requests, err = m.loadRequests(m.store()); err != nil {
		return nil, fmt.Errorf("fsm: load request filter of group %d: %w", group, err)
	}
	if m.eventBuckets, err = m.loadEventBuckets(m.store()); err != nil {
		return nil, fmt.Errorf("fsm: load change buckets of group %d: %w", group, err)
	}
	m.published.Store(&appliedPoint{index: applied, clock: clock, next: m.led.nextExpiry(), live: m.led.live})
	m.changes.reset(applied)
	return m, nil
}

// Group returns the raft group this machine serves.
func (m *Machine) Group() uint32 { return m.group }

// Applied returns the last raft index applied to this machine.
func (m *Machine) Applied() uint64 { return m.published.Load().index }

// Clock returns the machine's log clock (Unix ms), the max proposed_at seen.
func (m *Machine) Clock() int64 { return m.published.Load().clock }

// Apply applies one committed entry at index and returns one Result per
// client command (a Batch yields one per inner command). An entry at or below
// the applied index was applied before and is skipped: it returns nil.
func (m *Machine) Apply(index uint64, cmd *ledgerpb.Command) []*ledgerpb.Result {
	if index <= m.Applied() {
		return nil
	}
	results := m.apply(index, cmd)
	m.checkpointIfDue()
	return results
}

func (m *Machine) apply(index uint64, cmd *ledgerpb.Command) []*ledgerpb.Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	tx := m.begin()
	defer m.end(tx)
	results := tx.applyEntry(index, cmd)
	m.commit(tx)
	return results
}

// Entry is one committed raft entry for ApplyEntries.
type Entry struct {
	Index uint64
	Data  []byte
}

// applyBatchBytesMax bounds one Pebble batch of ApplyEntries: past it the
// batch commits and the next entries start another.
const applyBatchBytesMax = 4 << 20

// ApplyEntries decodes and applies committed entries in log order, several
// to one Pebble batch (one commit, one meta write), which is what raft hands
// over at once under load. out[i] holds entries[i]'s results, nil for an
// entry at or below the applied index. Like ApplyEntry it panics on data that
// does not decode.
func (m *Machine) ApplyEntries(entries []Entry) [][]*ledgerpb.Result {
	out := make([][]*ledgerpb.Result, len(entries))
	m.applyEntries(entries, out)
	m.checkpointIfDue()
	return out
}

// ApplyEntriesUnanswered applies entries as ApplyEntries does, for a
// replica whose results nobody reads (a follower's): the state and the
// records written are the same, but the results are built in reused
// buffers, only to be recorded for exactly-once, and are not returned.
// It returns how many entries it applied (those above the applied index)
// and how many commands they held.
func (m *Machine) ApplyEntriesUnanswered(entries []Entry) (applied, commands int) {
	applied, commands = m.applyEntries(entries, nil)
	m.checkpointIfDue()
	return applied, commands
}

// applyEntries applies entries and counts them; out, if not nil, receives
// each entry's results (nil: nobody reads them, txn.unanswered).
func (m *Machine) applyEntries(entries []Entry, out [][]*ledgerpb.Result) (applied, commands int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var tx *txn
	defer func() {
		if tx != nil {
			m.end(tx)
		}
	}()
	for i, e := range entries {
		if e.Index <= m.Applied() || (tx != nil && e.Index <= tx.index) {
			continue
		}
		cmd, err := m.decodeEntry(e.Data)
		if err != nil {
			must(err, fmt.Sprintf("decode entry %d", e.Index))
		}
		if tx == nil {
			tx = m.begin()
			tx.unanswered = out == nil
		}
		results := tx.applyEntry(e.Index, cmd)
		applied, commands = applied+1, commands+len(results)
		if out != nil {
			out[i] = results
		} else {
			clear(results) // nothing keeps them past their records
		}
		if tx.bytes() >= applyBatchBytesMax {
			m.commit(tx)
			m.end(tx)
			tx = nil
		}
	}
	if tx != nil {
		m.commit(tx)
	}
	return applied, commands
}

// applyEntry applies one entry to tx at index.
func (tx *txn) applyEntry(index uint64, cmd *ledgerpb.Command) []*ledgerpb.Result {
	if index <= tx.index {
		violated("entry %d applied after %d", index, tx.index)
	}
	tx.index = index
	// Never before 1970 (expiry times are stored as unsigned keys) nor
	// after year 9999 (so now + a TTL cannot overflow).
	tx.now = min(max(tx.now, cmd.ProposedAtMs, 0), ClockMaxMs)
	batch := cmd.GetBatch()
	if batch == nil {
		results := []*ledgerpb.Result{tx.applyOne(cmd, 0)}
		tx.offerFreed()  // seats freed by the entry go to the waiting queue
		tx.flushEvents() // the entry's seat changes, offers included, one record per show
		return results
	}
	if len(batch.Commands) > BatchCommandsMax {
		violated("batch of %d commands at index %d", len(batch.Commands), index)
	}
	var results []*ledgerpb.Result
	if tx.unanswered {
		results = slices.Grow(tx.results[:0], len(batch.Commands))[:len(batch.Commands)]
		tx.results = results
	} else {
		results = make([]*ledgerpb.Result, len(batch.Commands))
	}
	for i, c := range batch.Commands {
		if c.GetBatch() != nil {
			violated("nested batch at index %d", index)
		}
		results[i] = tx.applyOne(c, i)
	}
	tx.offerFreed()
	tx.flushEvents()
	return results
}

// reload reads the ledger and the request filter again from the store.
func (m *Machine) reload() {
	led, err := m.load(m.store())
	must(err, "load the ledger")
	requests, err := m.loadRequests(m.store())
	must(err, "load the request filter")
	buckets, err := m.loadEventBuckets(m.store())
	must(err, "load the change buckets")
	m.led, m.requests, m.requestsPruned, m.eventBuckets = led, requests, 0, buckets
}

// commit writes the applied index and clock of tx's last entry with its
// changes and publishes them.
func (m *Machine) commit(tx *txn) {
	tx.set(m.metaKey(), encodeMeta(tx.index, tx.now))
	// Nothing reaches Pebble before a checkpoint: the raft log is durable
	// and replays entries above the checkpoint's applied index after a
	// crash (checkpoint.go).
	m.commits.Add(1)
	m.storeWrites += uint64(tx.writes)
	// A commit seals its records only once sealPendMax of them wait:
	// readers that need the store are rare next to commits, and see the
	// pending records through pubLayers meanwhile.
	m.ov.commit()
	if m.ov.pending() >= sealPendMax {
		m.ov.seal()
	}
	tx.committed = true
	m.changes.note(tx.index, tx.touched) // before the index: see changeIndex
	m.published.Store(&appliedPoint{index: tx.index, clock: tx.now, next: m.led.nextExpiry(), live: m.led.live})
	m.commits.Add(1)
	if b := m.ov.bytes(); b >= m.checkpointBound() {
		m.checkpointDue.Store(true) // the owner's CheckpointBehind
		m.checkpointInLine = b >= 2*m.checkpointBound()
	}
	if checkLedger {
		stored, err := m.load(m.store())
		must(err, "load the ledger to check it")
		if d := m.led.diff(&stored); d != "" {
			violated("the ledger differs from the store at index %d: %s", tx.index, d)
		}
	}
}

// ApplyEntry decodes a raft entry's data and applies it. Data that does not
// decode panics: every replica received the same bytes, so this replica
// cannot follow the log.
func (m *Machine) ApplyEntry(index uint64, data []byte) []*ledgerpb.Result {
	cmd, err := m.decodeEntry(data) // the apply goroutine: it alone writes the ledger
	must(err, fmt.Sprintf("decode entry %d", index))
	return m.Apply(index, cmd)
}

// DecodeCommand decodes a log entry.
func DecodeCommand(data []byte) (*ledgerpb.Command, error) {
	cmd := &ledgerpb.Command{}
	if err := proto.Unmarshal(data, cmd); err != nil {
		return nil, fmt.Errorf("fsm: decode command: %w", err)
	}
	return cmd, nil
}

// EncodeCommand encodes a command for the log, deterministically.
func EncodeCommand(cmd *ledgerpb.Command) ([]byte, error) {
	return proto.MarshalOptions{Deterministic: true}.Marshal(cmd)
}

// applyOne applies one client or leader command with exactly-once handling.
func (tx *txn) applyOne(c *ledgerpb.Command, pos int) *ledgerpb.Result {
	if _, leader := c.Op.(*ledgerpb.Command_Expire); leader {
		return tx.stamp(tx.expire(c.GetExpire()))
	}
	if _, leader := c.Op.(*ledgerpb.Command_WebhookCursor); leader {
		return tx.stamp(tx.webhookCursor(c.GetWebhookCursor()))
	}
	if a, leader := c.Op.(*ledgerpb.Command_Admit); leader {
		return tx.stamp(tx.admit(a.Admit))
	}
	if c.Op == nil {
		panic(fmt.Sprintf("fsm: command without op at index %d", tx.index))
	}
	if fe := ValidateIdentity(c.ClientId, c.RequestId); fe != nil {
		return tx.stamp(invalid(fe))
	}
	// Fields before the request id (doc.go's order): an invalid request is
	// answered the same way every time without being remembered.
	if fe := validateOp(c); fe != nil {
		return tx.stamp(invalid(fe))
	}
	hash := tx.payloadHash(c)
	if r := tx.joinReplay(c, hash); r != nil { // a join's room entry is its record (joinroom.go)
		return r
	}
	if prev := tx.request(c.ClientId, c.RequestId); prev != nil {
		if string(prev.PayloadHash) != string(hash) {
			return tx.stamp(&ledgerpb.Result{Code: ledgerpb.Code_CODE_REQUEST_ID_REUSED,
				Message: fmt.Sprintf("request_id %q of client %q was used for a different request", c.RequestId, c.ClientId)})
		}
		r := proto.Clone(prev.Result).(*ledgerpb.Result)
		r.Replayed = true
		return r
	}
	if r := tx.sendLimit(c); r != nil {
		return tx.stamp(r)
	}
	var r *ledgerpb.Result
	switch op := c.Op.(type) {
	case *ledgerpb.Command_CreateShow:
		r = tx.createShow(op.CreateShow)
	case *ledgerpb.Command_Hold:
		r = tx.hold(c.ClientId, op.Hold, pos)
	case *ledgerpb.Command_Confirm:
		r = tx.confirm(c.ClientId, op.Confirm)
	case *ledgerpb.Command_Release:
		r = tx.release(c.ClientId, op.Release)
	case *ledgerpb.Command_Extend:
		r = tx.extend(c.ClientId, op.Extend)
	case *ledgerpb.Command_Refund:
		r = tx.refund(c.ClientId, op.Refund)
	case *ledgerpb.Command_LeaveQueue:
		r = tx.leaveQueue(c.ClientId, op.LeaveQueue)
	case *ledgerpb.Command_Catalog:
		r = tx.catalog(op.Catalog)
	case *ledgerpb.Command_Node:
		r = tx.node(op.Node)
	case *ledgerpb.Command_Webhook:
		r = tx.webhook(op.Webhook)
	case *ledgerpb.Command_SetRoom:
		r = tx.setRoom(op.SetRoom)
	case *ledgerpb.Command_JoinRoom:
		r = tx.joinRoom(c, op.JoinRoom, pos, hash)
	default:
		panic(fmt.Sprintf("fsm: unknown op %T at index %d", c.Op, tx.index))
	}
	tx.stamp(r)
	if tx.joinRecorded(c, r) { // its room entry is its record (joinroom.go)
		return r
	}
	// The record is encoded at once, so tx's own serves every command.
	tx.rec.PayloadHash, tx.rec.Result, tx.rec.AppliedAtMs = hash, r, tx.now
	tx.putRequest(c.ClientId, c.RequestId, &tx.rec)
	tx.rec.Result = nil
	return r
}

// validateOp checks a client command's fields against the limits.
func validateOp(c *ledgerpb.Command) *FieldError {
	switch op := c.Op.(type) {
	case *ledgerpb.Command_CreateShow:
		if len(op.CreateShow.TokenKey) > TokenKeyBytes {
			return fieldErr("token_key", "longer than %d bytes", TokenKeyBytes)
		}
		return ValidateShow(op.CreateShow.Show)
	case *ledgerpb.Command_Hold:
		return ValidateHold(op.Hold)
	case *ledgerpb.Command_Confirm:
		return ValidateConfirm(op.Confirm)
	case *ledgerpb.Command_Release:
		return ValidateRelease(op.Release)
	case *ledgerpb.Command_Extend:
		return ValidateExtend(op.Extend)
	case *ledgerpb.Command_Refund:
		return ValidateRefund(op.Refund)
	case *ledgerpb.Command_LeaveQueue:
		return ValidateLeaveQueue(op.LeaveQueue)
	case *ledgerpb.Command_Catalog:
		return ValidateCatalog(op.Catalog)
	case *ledgerpb.Command_Node:
		return ValidateNodeCmd(op.Node)
	case *ledgerpb.Command_Webhook:
		return ValidateWebhookCmd(op.Webhook)
	case *ledgerpb.Command_SetRoom:
		return ValidateSetRoom(op.SetRoom)
	case *ledgerpb.Command_JoinRoom:
		return ValidateJoinRoom(op.JoinRoom)
	}
	return nil
}

func (tx *txn) stamp(r *ledgerpb.Result) *ledgerpb.Result {
	r.Revision = tx.index
	r.AppliedAtMs = tx.now
	return r
}

func invalid(fe *FieldError) *ledgerpb.Result {
	return &ledgerpb.Result{Code: ledgerpb.Code_CODE_INVALID_ARGUMENT, Field: fe.Field, Message: fe.Message}
}

func reject(code ledgerpb.Code, format string, args ...any) *ledgerpb.Result {
	return &ledgerpb.Result{Code: code, Message: fmt.Sprintf(format, args...)}
}

// store is the group's state as the apply goroutine has it: the overlay
// over Pebble. Pending records are sealed so that they are read too.
func (m *Machine) store() reader {
	m.ov.seal()
	return reader{l: m.ov.view(), r: m.db}
}

// pubStore is the group's state as of its last commit, for a reader that
// holds mu for reading.
func (m *Machine) pubStore() reader { return reader{l: m.pubLayers(), r: m.db} }

// sealPendMax is how many pending records a commit leaves unsealed. One
// seal sorts them in the caches, where a seal per commit pushed runs of a
// few records, each merged up the stack a dozen times over records spread
// across the arena (docs/PERFORMANCE.md).
const sealPendMax = 1024

// pubLayers returns the group's overlay as of its last commit, for a
// reader that holds mu for reading (so apply waits, and everything in the
// overlay is committed): its runs, and the records that commits left
// pending sorted into a run of the reader's own (the overlay stays as it
// is: only apply changes it). The first reader after a commit sorts them,
// and the readers after it until the next commit share its run. The
// layers never change: apply pushes runs onto a copy of the stack (seal).
func (m *Machine) pubLayers() layers {
	l := m.ov.view()
	if m.ov.pending() == 0 {
		return l
	}
	seq := m.ov.commits
	if c := m.pendRun.Load(); c != nil && c.seq == seq && c.l.ar == l.ar && c.l.below == l.below {
		return c.l
	}
	var scratch []sealed
	r := sortRun(l.a, m.ov.pend, m.ov.pendDels, &scratch, func(n int) []uint32 { return make([]uint32, 0, n) })
	l.runs = append(l.runs[:len(l.runs):len(l.runs)], r)
	m.pendRun.Store(&pendLayers{seq: seq, l: l})
	return l
}

// pendLayers are an overlay's layers with the pending records of its
// commit seq as their top run (pubLayers).
type pendLayers struct {
	seq uint64
	l   layers
}
