package raftnode

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/raft"

	"github.com/seatledger/seatledger/fsm"
	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// proposal is one client command waiting for its result.
type proposal struct {
	cmd *ledgerpb.Command
	// done receives the proposal's outcome, once. It is buffered for every
	// proposal that shares it (those queued together by Queue, each with
	// its own i), so the proposer never blocks on a caller.
	done chan outcome
	i    int
	// start is when Propose was called, for the commit latency metric.
	start time.Time
	// with are proposals queued together with this one (Queue): the
	// proposer takes them into the same entry.
	with []proposal
}

// size is how many commands p brings to an entry.
func (p *proposal) size() int { return 1 + len(p.with) }

// outcome is the answer to proposal i of those sharing a done channel.
type outcome struct {
	i   int
	res *ledgerpb.Result
	err error
}

// pending is one proposed entry awaiting commit.
type pending struct {
	future raft.ApplyFuture
	batch  []*proposal
}

// Propose replicates one command through the group's log and returns the
// FSM's result. Errors: ErrNotLeader (not appended: retry at the leader),
// ErrUnavailable (not appended), ErrOutcomeUnknown (may have been applied:
// retry with the same request_id).
func (g *Group) Propose(ctx context.Context, cmd *ledgerpb.Command) (*ledgerpb.Result, error) {
	if !g.IsLeader() {
		return nil, ErrNotLeader
	}
	p := &proposal{cmd: cmd, done: make(chan outcome, 1), start: time.Now()}
	select {
	case g.proposals <- p:
	case <-g.stop:
		return nil, ErrUnavailable
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
	}
	select {
	case o := <-p.done:
		return o.res, o.err
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %v", ErrOutcomeUnknown, ctx.Err())
	}
}

// ProposeAll replicates each of cmds as Propose does, and answers each in
// cmds' order with what Propose would. The commands are queued together,
// so that the proposer takes them into one entry (into as few as
// BatchCommandsMax allows) rather than into whichever entries their
// arrival happens to straddle: a batch of calls from one client costs one
// entry, not several.
func (g *Group) ProposeAll(ctx context.Context, cmds []*ledgerpb.Command) ([]*ledgerpb.Result, []error) {
	return g.Queue(ctx, cmds).Wait(ctx)
}

// Queued are commands queued together (Group.Queue) and their answers.
// The proposals share one done channel and one allocation: a command
// queued costs no allocation of its own.
type Queued struct {
	ps      []proposal
	queued  int // ps[:queued] reached the proposer
	done    chan outcome
	results []*ledgerpb.Result
	errs    []error
}

// errUnanswered marks, during Wait, a queued command with no answer yet.
var errUnanswered = errors.New("raftnode: unanswered")

// Queue queues cmds together as ProposeAll does, and returns them for
// Wait: a caller with commands for several groups queues each group's
// before it waits for any, so that no group's commands wait for another
// group's proposer. A command that cannot be queued (not leader, group
// closed, ctx ended) has its answer at once: not appended.
func (g *Group) Queue(ctx context.Context, cmds []*ledgerpb.Command) *Queued {
	q := &Queued{results: make([]*ledgerpb.Result, len(cmds)), errs: make([]error, len(cmds))}
	if !g.IsLeader() {
		for i := range q.errs {
			q.errs[i] = ErrNotLeader
		}
		return q
	}
	if err := ctx.Err(); err != nil {
		// The caller has gone: append nothing it cannot hear the answer
		// to (select would pick a free queue slot half the time).
		for i := range q.errs {
			q.errs[i] = fmt.Errorf("%w: %v", ErrUnavailable, err)
		}
		return q
	}
	now := time.Now()
	q.ps = make([]proposal, len(cmds))
	q.done = make(chan outcome, len(cmds))
	for i, cmd := range cmds {
		q.ps[i] = proposal{cmd: cmd, done: q.done, i: i, start: now}
	}
	max := g.node.cfg.BatchCommandsMax
	for q.queued < len(q.ps) {
		end := min(q.queued+max, len(q.ps))
		head := &q.ps[q.queued]
		head.with = q.ps[q.queued+1 : end]
		var err error
		select {
		case g.proposals <- head:
			q.queued = end
			continue
		case <-g.stop:
			err = ErrUnavailable
		case <-ctx.Done():
			err = fmt.Errorf("%w: %v", ErrUnavailable, ctx.Err())
		}
		for i := q.queued; i < len(q.ps); i++ {
			q.errs[i] = err // never queued: not appended
		}
		break
	}
	return q
}

// Wait returns each command's answer, in the order queued: an answer
// that has not come when ctx ends is ErrOutcomeUnknown. Call it once.
func (q *Queued) Wait(ctx context.Context) ([]*ledgerpb.Result, []error) {
	for i := range q.queued {
		q.errs[i] = errUnanswered
	}
	for left := q.queued; left > 0; left-- {
		select {
		case o := <-q.done:
			q.results[o.i], q.errs[o.i] = o.res, o.err
		case <-ctx.Done():
			q.giveUp(ctx.Err())
			return q.results, q.errs
		}
	}
	return q.results, q.errs
}

// giveUp takes the answers that have come and marks the others unknown.
func (q *Queued) giveUp(cause error) {
	for {
		select {
		case o := <-q.done:
			q.results[o.i], q.errs[o.i] = o.res, o.err
			continue
		default:
		}
		break
	}
	for i := range q.queued {
		if q.errs[i] == errUnanswered {
			q.errs[i] = fmt.Errorf("%w: %v", ErrOutcomeUnknown, cause)
		}
	}
}

// appendProposal appends p and the proposals queued with it.
func appendProposal(batch []*proposal, p *proposal) []*proposal {
	batch = append(batch, p)
	for i := range p.with {
		batch = append(batch, &p.with[i])
	}
	return batch
}

// runProposer is group commit: it takes every queued proposal (up to
// BatchCommandsMax) into one Batch entry stamped with the leader's clock and
// hands it to raft without waiting for the previous entry to commit. Raft
// replicates what is queued (each AppendEntries carries every entry up to
// its last, heartbeat_transport.go); a bounded queue of pending entries (awaitCommits)
// applies back-pressure, which in turn makes the next batch larger, and so
// does waiting while raft writes the group's log (awaitLogWrite).
func (g *Group) runProposer() {
	defer g.wg.Done()
	inflight := make(chan pending, g.node.cfg.InflightEntriesMax)
	g.wg.Add(1)
	go g.awaitCommits(inflight)
	defer close(inflight)
	max := g.node.cfg.BatchCommandsMax
	// batch is reused; each entry gets a copy of its size, not a fresh
	// slice of max (docs/PERFORMANCE-SHAPE.md, "The proposer's batch").
	batch := make([]*proposal, 0, max)
	// carry is proposals queued together that did not fit in the last
	// entry: the next one starts with them (Queue queues at most max together).
	var carry *proposal
	for {
		if carry == nil {
			select {
			case <-g.stop:
				g.failQueued()
				return
			case carry = <-g.proposals:
			}
		}
		batch, carry = appendProposal(batch[:0], carry), nil
		g.awaitLogWrite()
	drain:
		for len(batch) < max {
			select {
			case p := <-g.proposals:
				if len(batch)+p.size() > max {
					carry = p
					break drain
				}
				batch = appendProposal(batch, p)
			default:
				break drain
			}
		}
		inflight <- g.submit(slices.Clone(batch))
		clear(batch)
	}
}

// awaitLogWrite waits while raft's leader loop writes this group's last
// entries to the node log. Until that write ends the loop takes no new
// entry from its queue, and on its return it takes every queued one into
// its next write: an entry proposed now would only wait there beside the
// next ones, each with its own index, encoding and apply. Proposed once
// the write ends, the commands that arrive meanwhile make one entry, which
// raft takes at the same moment as it would have taken the many.
func (g *Group) awaitLogWrite() {
	if end := g.nodeLog.appending(); end != nil {
		select {
		case <-end:
		case <-g.stop:
		}
	}
}

// submit proposes one batch; a batch that cannot be encoded or enqueued
// fails definitely.
func (g *Group) submit(batch []*proposal) pending {
	cmds := make([]*ledgerpb.Command, len(batch))
	for i, p := range batch {
		cmds[i] = p.cmd
	}
	entry := &ledgerpb.Command{
		ProposedAtMs: g.node.cfg.Now().UnixMilli(),
		Op:           &ledgerpb.Command_Batch{Batch: &ledgerpb.Batch{Commands: cmds}},
	}
	g.metrics.batchCommands.Observe(float64(len(batch)))
	data, err := fsm.EncodeCommand(entry)
	if err != nil {
		return pending{future: errFuture{fmt.Errorf("raftnode: encode batch: %w", err)}, batch: batch}
	}
	return pending{future: g.raft.Apply(data, proposeTimeout), batch: batch}
}

// awaitCommits hands each committed batch's results to its callers, in log
// order.
func (g *Group) awaitCommits(inflight <-chan pending) {
	defer g.wg.Done()
	for p := range inflight {
		err := g.waitFuture(p.future)
		var results []*ledgerpb.Result
		if err == nil {
			if r, ok := p.future.Response().(*[]*ledgerpb.Result); ok { // adapter.ApplyBatch
				results = *r
			}
			if len(results) != len(p.batch) {
				// Applied, but not by this replica's FSM call (skipped as
				// a replay): the callers must retry to learn the result.
				err = ErrOutcomeUnknown
			}
		} else {
			err = classify(err)
		}
		// Counted before any caller hears its answer, so that a client
		// that saw a result finds it in the metrics.
		g.metrics.observeCommitted(p.batch, results, err)
		for i, pr := range p.batch {
			if err != nil {
				pr.done <- outcome{i: pr.i, err: err}
			} else {
				pr.done <- outcome{i: pr.i, res: results[i]}
			}
		}
	}
}

// waitFuture waits for f's answer, or until the group closes (then the
// outcome is unknown). Raft never answers a future it left in its apply
// queue when it shut down (with BatchApplyCh the queue is buffered, and a
// leader that removes itself shuts down on its own, ShutdownOnRemove,
// while the proposer still hands it batches): waiting for one hung
// DropGroup, and the node's API behind it, for good. The goroutine that
// waits on such a future then stays blocked with it: one per batch raft
// dropped, only after raft shut down, and nothing can wake it.
func (g *Group) waitFuture(f raft.Future) error {
	done := make(chan error, 1)
	go func() { done <- f.Error() }()
	select {
	case err := <-done:
		return err
	case <-g.stop:
		select {
		case err := <-done:
			return err
		default:
			return ErrOutcomeUnknown
		}
	}
}

// failQueued fails proposals that never reached raft: not appended.
func (g *Group) failQueued() {
	for {
		select {
		case p := <-g.proposals:
			g.metrics.observeFailed(p.size(), ErrUnavailable)
			for _, q := range appendProposal(nil, p) {
				q.done <- outcome{i: q.i, err: ErrUnavailable}
			}
		default:
			return
		}
	}
}

// errFuture is an ApplyFuture that failed before reaching raft.
type errFuture struct{ err error }

func (e errFuture) Error() error  { return e.err }
func (e errFuture) Index() uint64 { return 0 }
func (e errFuture) Response() any { return nil }
