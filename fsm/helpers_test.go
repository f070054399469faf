// This file proves nothing by itself: it holds what the fsm tests share —
// machines on real Pebble databases, command builders, a panic-to-error
// wrapper for Apply (tests only; the apply path itself never recovers) and
// an S1 checker that reads the stored hold and seat records.
package fsm

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// TestMain runs every test with the ledger checked against the store after
// every commit and on every read (checkLedger), so the scenario, model,
// determinism and fuzz tests prove the write-behind exact (and hold ids
// fresh); benchmarks measure it unchecked.
func TestMain(m *testing.M) {
	flag.Parse()
	checkLedger = flag.Lookup("test.bench").Value.String() == ""
	checkHoldIDs = checkLedger
	os.Exit(m.Run())
}

// newTestDB opens a Pebble database in a temporary directory that is closed
// before the directory is removed.
func newTestDB(t testing.TB) *pebble.DB {
	t.Helper()
	db, err := OpenDB(t.TempDir())
	if err != nil {
		t.Fatalf("OpenDB: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newTestMachine(t testing.TB, db *pebble.DB, group uint32) *Machine {
	t.Helper()
	m, err := NewMachine(db, group)
	if err != nil {
		t.Fatalf("NewMachine(group %d): %v", group, err)
	}
	return m
}

// applyRecover applies an entry and turns a panic into an error, so that a
// test can report a crashing command as a failure instead of dying.
func applyRecover(m *Machine, index uint64, cmd *ledgerpb.Command) (res []*ledgerpb.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("Apply(%d) panicked: %v", index, r)
		}
	}()
	return m.Apply(index, cmd), nil
}

// applyEncodedRecover is applyRecover through the log's bytes: the entry is
// encoded and applied as raft hands it over (decodeEntry).
func applyEncodedRecover(m *Machine, index uint64, cmd *ledgerpb.Command) ([]*ledgerpb.Result, error) {
	return applyBytesRecover(m, index, cmd, false)
}

// applyUnansweredRecover is applyEncodedRecover as a follower applies:
// unanswered, so it returns no results.
func applyUnansweredRecover(m *Machine, index uint64, cmd *ledgerpb.Command) ([]*ledgerpb.Result, error) {
	return applyBytesRecover(m, index, cmd, true)
}

func applyBytesRecover(m *Machine, index uint64, cmd *ledgerpb.Command, unanswered bool) (res []*ledgerpb.Result, err error) {
	data, err := EncodeCommand(cmd)
	if err != nil {
		return applyRecover(m, index, cmd) // not encodable, so never in a log
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("ApplyEntries(%d, unanswered %t) panicked: %v", index, unanswered, r)
		}
	}()
	entries := []Entry{{Index: index, Data: data}}
	if unanswered {
		m.ApplyEntriesUnanswered(entries)
		return nil, nil
	}
	return m.ApplyEntries(entries)[0], nil
}

// mustApply applies an entry that must not panic and must yield n results.
func mustApply(t testing.TB, m *Machine, index uint64, cmd *ledgerpb.Command, n int) []*ledgerpb.Result {
	t.Helper()
	res, err := applyRecover(m, index, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != n {
		t.Fatalf("Apply(%d) returned %d results, want %d", index, len(res), n)
	}
	return res
}

func mustDigest(t testing.TB, m *Machine) Digest {
	t.Helper()
	d, err := m.Digest()
	if err != nil {
		t.Fatalf("Digest: %v", err)
	}
	return d
}

// Command builders. proposed_at_ms is set by the caller of Apply.

func cmdShow(client, request string, show *ledgerpb.Show) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_CreateShow{CreateShow: &ledgerpb.CreateShowCmd{Show: show}}}
}

func cmdHold(client, request, show string, ttl int64, seats ...string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: show, SeatIds: seats, TtlMs: ttl}}}
}

// Commands that act on a hold carry its token: shows built by cmdShow have
// no token key, so the token is HoldToken(nil, hold) (testToken).

func testToken(hold string) string { return HoldToken(nil, hold) }

func cmdConfirm(client, request, show, hold, pay string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Confirm{Confirm: &ledgerpb.ConfirmCmd{ShowId: show, HoldId: hold, PaymentRef: pay, HoldToken: testToken(hold)}}}
}

func cmdRelease(client, request, show, hold string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Release{Release: &ledgerpb.ReleaseCmd{ShowId: show, HoldId: hold, HoldToken: testToken(hold)}}}
}

func cmdBest(client, request, show string, ttl int64, count uint32, category string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Hold{Hold: &ledgerpb.HoldCmd{ShowId: show, Count: count, Category: category, TtlMs: ttl}}}
}

func cmdExtend(client, request, show, hold string, ttl int64) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Extend{Extend: &ledgerpb.ExtendCmd{ShowId: show, HoldId: hold, TtlMs: ttl, HoldToken: testToken(hold)}}}
}

func cmdRefund(client, request, show, hold, reason string) *ledgerpb.Command {
	return &ledgerpb.Command{ClientId: client, RequestId: request,
		Op: &ledgerpb.Command_Refund{Refund: &ledgerpb.RefundCmd{ShowId: show, HoldId: hold, Reason: reason, HoldToken: testToken(hold)}}}
}

func cmdExpire(upto int64, limit uint32) *ledgerpb.Command {
	return &ledgerpb.Command{Op: &ledgerpb.Command_Expire{Expire: &ledgerpb.ExpireCmd{UptoMs: upto, Limit: limit}}}
}

func cmdBatch(cmds ...*ledgerpb.Command) *ledgerpb.Command {
	return &ledgerpb.Command{Op: &ledgerpb.Command_Batch{Batch: &ledgerpb.Batch{Commands: cmds}}}
}

// at returns cmd stamped with proposed_at_ms.
func at(ms int64, cmd *ledgerpb.Command) *ledgerpb.Command {
	cmd.ProposedAtMs = ms
	return cmd
}

// parseRows parses "A:20:std,B:10:vip" (name:seats:category); "-" is none.
func parseRows(spec string) ([]*ledgerpb.Row, error) {
	var rows []*ledgerpb.Row
	for _, f := range splitList(spec) {
		p := strings.Split(f, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("row %q is not name:seats:category", f)
		}
		n, err := strconv.ParseUint(p[1], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("row %q: %v", f, err)
		}
		rows = append(rows, &ledgerpb.Row{Name: p[0], Seats: uint32(n), Category: p[2]})
	}
	return rows, nil
}

// parseCats parses "std:1000:EUR,vip:2500:EUR" (name:price:currency).
func parseCats(spec string) ([]*ledgerpb.Category, error) {
	var cats []*ledgerpb.Category
	for _, f := range splitList(spec) {
		p := strings.Split(f, ":")
		if len(p) != 3 {
			return nil, fmt.Errorf("category %q is not name:price:currency", f)
		}
		n, err := strconv.ParseInt(p[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("category %q: %v", f, err)
		}
		cats = append(cats, &ledgerpb.Category{Name: p[0], PriceMinor: n, Currency: p[2]})
	}
	return cats, nil
}

// splitList splits "a,b,c"; "-" and "" are the empty list.
func splitList(s string) []string {
	if s == "-" || s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

// testShow builds a show from row and category specs; it panics on a bad
// spec, which is a bug in the test.
func testShow(id, rows, cats string) *ledgerpb.Show {
	r, err := parseRows(rows)
	if err != nil {
		panic(err)
	}
	c, err := parseCats(cats)
	if err != nil {
		panic(err)
	}
	return &ledgerpb.Show{ShowId: id, Rows: r, Categories: c}
}

// seatStates reads a show's seat map as "A1" -> state.
func seatStates(t testing.TB, m *Machine, show string) map[string]ledgerpb.SeatState {
	t.Helper()
	v, err := m.View()
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	defer v.Close()
	sm, err := v.SeatMap(show)
	if err != nil {
		t.Fatalf("SeatMap(%s): %v", show, err)
	}
	out := make(map[string]ledgerpb.SeatState, len(sm.Seats))
	for _, s := range sm.Seats {
		out[s.SeatId] = s.State
	}
	return out
}

// storedHolds reads every hold record of the machine's group: the ended
// ones under their ids, then the live ones and bookings under their shows.
// A record in the wrong place, or in both, is an error.
func storedHolds(v *View) ([]*ledgerpb.HoldRecord, error) {
	var out []*ledgerpb.HoldRecord
	seen := map[string]bool{}
	for _, kind := range []byte{kindHold, kindLiveHold} {
		lo := v.m.key(kind)
		it, err := v.snapIter(&pebble.IterOptions{LowerBound: lo, UpperBound: prefixEnd(lo)})
		if err != nil {
			return nil, err
		}
		for ok := it.First(); ok; ok = it.Next() {
			h := &ledgerpb.HoldRecord{}
			if err := proto.Unmarshal(it.Value(), h); err != nil {
				it.Close()
				return nil, fmt.Errorf("hold record %q: %v", it.Key(), err)
			}
			live := h.State == ledgerpb.HoldState_HOLD_STATE_HELD || h.State == ledgerpb.HoldState_HOLD_STATE_CONFIRMED
			want := v.m.holdKey(h.HoldId)
			if live {
				want = v.m.liveKey(h.ShowId, h.HoldId)
			}
			if !bytes.Equal(it.Key(), want) || seen[h.HoldId] {
				it.Close()
				return nil, fmt.Errorf("hold %s (%s, show %s) is stored under %q (seen before: %t)", h.HoldId, h.State, h.ShowId, it.Key(), seen[h.HoldId])
			}
			seen[h.HoldId] = true
			out = append(out, h)
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkS1 verifies S1 on a machine's stored state and its seat maps: no seat
// index is owned by two holds that still own seats (HELD and live by the
// clock, or CONFIRMED), those holds name their seats as the seat map does,
// each record is stored where its state says (storedHolds), and SeatMap
// shows exactly the seats of those holds as HELD or BOOKED.
func checkS1(m *Machine, shows []string) error {
	v, err := m.View()
	if err != nil {
		return err
	}
	defer v.Close()
	holds, err := storedHolds(v)
	if err != nil {
		return err
	}
	byID := map[string]*ledgerpb.HoldRecord{}
	owner := map[string]string{} // show/seat index -> hold id
	want := map[string]map[string]ledgerpb.SeatState{}
	for _, h := range holds {
		byID[h.HoldId] = h
		var st ledgerpb.SeatState
		switch {
		case h.State == ledgerpb.HoldState_HOLD_STATE_CONFIRMED:
			st = ledgerpb.SeatState_BOOKED
		case h.State == ledgerpb.HoldState_HOLD_STATE_HELD && v.Clock() < h.ExpiresAtMs:
			st = ledgerpb.SeatState_HELD
		default:
			continue
		}
		show := &ledgerpb.Show{}
		if ok, err := v.get(m.showKey(h.ShowId), show); err != nil || !ok {
			return fmt.Errorf("hold %s names show %s that cannot be read (%v)", h.HoldId, h.ShowId, err)
		}
		l := newLayout(show)
		for _, s := range h.SeatIds {
			n, ok := l.seatIndex(s)
			if !ok {
				return fmt.Errorf("hold %s names unknown seat %s", h.HoldId, s)
			}
			if c := seatName(l, int(n)); c != s {
				return fmt.Errorf("hold %s names seat %q, which the seat map calls %s", h.HoldId, s, c)
			}
			k := fmt.Sprintf("%s/%d", h.ShowId, n)
			if other, dup := owner[k]; dup {
				return fmt.Errorf("S1: seat %s (index %d) of show %s is owned by holds %s and %s", s, n, h.ShowId, other, h.HoldId)
			}
			owner[k] = h.HoldId
			if want[h.ShowId] == nil {
				want[h.ShowId] = map[string]ledgerpb.SeatState{}
			}
			want[h.ShowId][seatName(l, int(n))] = st
		}
	}
	for _, show := range shows {
		sm, err := v.SeatMap(show)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("SeatMap(%s): %v", show, err)
		}
		for _, s := range sm.Seats {
			w, ok := want[show][s.SeatId]
			if !ok {
				w = ledgerpb.SeatState_FREE
			}
			if s.State != w {
				return fmt.Errorf("SeatMap(%s) seat %s = %s, want %s", show, s.SeatId, s.State, w)
			}
		}
		if err := sameSeatStates(v, sm); err != nil {
			return err
		}
	}
	return nil
}

// sameSeatStates checks that the layout-less map (SeatStates) says what the
// full map sm says, seat by seat and in its counts.
func sameSeatStates(v *View, sm *ledgerpb.SeatMap) error {
	st, err := v.SeatStates(sm.ShowId)
	if err != nil {
		return fmt.Errorf("SeatStates(%s): %v", sm.ShowId, err)
	}
	if len(st.SeatStates) != len(sm.Seats) || len(st.Seats) != 0 || len(st.Categories) != 0 {
		return fmt.Errorf("SeatStates(%s): %d letters, %d seats, %d categories; want %d letters only",
			sm.ShowId, len(st.SeatStates), len(st.Seats), len(st.Categories), len(sm.Seats))
	}
	for i, s := range sm.Seats {
		if got := SeatStateOfLetter(st.SeatStates[i]); got != s.State {
			return fmt.Errorf("SeatStates(%s)[%d] = %c (%s), full map says %s for %s", sm.ShowId, i, st.SeatStates[i], got, s.State, s.SeatId)
		}
	}
	if st.Free != sm.Free || st.Held != sm.Held || st.Booked != sm.Booked || st.Revision != sm.Revision {
		return fmt.Errorf("SeatStates(%s) counts %d/%d/%d at %d, full map %d/%d/%d at %d", sm.ShowId,
			st.Free, st.Held, st.Booked, st.Revision, sm.Free, sm.Held, sm.Booked, sm.Revision)
	}
	return nil
}

func seatName(l *layout, idx int) string {
	r, n := l.seat(idx)
	return fmt.Sprintf("%s%d", r.Name, n)
}

// resultString renders a result compactly for failure messages.
func resultString(r *ledgerpb.Result) string {
	if r == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString(strings.TrimPrefix(r.Code.String(), "CODE_"))
	if r.Field != "" {
		fmt.Fprintf(&b, " field=%s", r.Field)
	}
	if r.HoldId != "" {
		fmt.Fprintf(&b, " hold=%s", r.HoldId)
	}
	if len(r.SeatIds) > 0 {
		fmt.Fprintf(&b, " seats=%s", strings.Join(r.SeatIds, ","))
	}
	if r.ExpiresAtMs != 0 {
		fmt.Fprintf(&b, " expires=%d", r.ExpiresAtMs)
	}
	if r.HoldState != 0 {
		fmt.Fprintf(&b, " state=%s", strings.TrimPrefix(r.HoldState.String(), "HOLD_STATE_"))
	}
	if r.AmountMinor != 0 {
		fmt.Fprintf(&b, " amount=%d", r.AmountMinor)
	}
	if r.Expired != 0 {
		fmt.Fprintf(&b, " expired=%d", r.Expired)
	}
	if r.Replayed {
		b.WriteString(" replayed")
	}
	fmt.Fprintf(&b, " revision=%d applied_at=%d", r.Revision, r.AppliedAtMs)
	return b.String()
}

// opName names a command's op for failure messages: Hold(A1,A2).
func opName(c *ledgerpb.Command) string {
	switch op := c.Op.(type) {
	case *ledgerpb.Command_CreateShow:
		return fmt.Sprintf("CreateShow(%s)", op.CreateShow.GetShow().GetShowId())
	case *ledgerpb.Command_Hold:
		return fmt.Sprintf("Hold(%s)", strings.Join(op.Hold.SeatIds, ","))
	case *ledgerpb.Command_Confirm:
		return fmt.Sprintf("Confirm(%s)", op.Confirm.HoldId)
	case *ledgerpb.Command_Release:
		return fmt.Sprintf("Release(%s)", op.Release.HoldId)
	case *ledgerpb.Command_Expire:
		return fmt.Sprintf("Expire(%d)", op.Expire.UptoMs)
	case *ledgerpb.Command_Batch:
		names := make([]string, len(op.Batch.Commands))
		for i, c := range op.Batch.Commands {
			names[i] = opName(c)
		}
		return "Batch{" + strings.Join(names, " ") + "}"
	case *ledgerpb.Command_Catalog:
		return catalogOpName(op.Catalog)
	case *ledgerpb.Command_Node:
		return nodeOpName(op.Node) // node_test.go
	}
	return fmt.Sprintf("%T", c.Op)
}

// readWhileApplying runs read over and over on two goroutines while apply
// runs, then fails t with what a read panicked with, if anything (run
// with -race).
func readWhileApplying(t *testing.T, read, apply func()) {
	t.Helper()
	done := make(chan struct{})
	errs := make(chan any, 2)
	for range 2 {
		go func() {
			defer func() { errs <- recover() }()
			for {
				select {
				case <-done:
					return
				default:
				}
				read()
			}
		}()
	}
	apply()
	close(done)
	for range 2 {
		if p := <-errs; p != nil {
			t.Fatal(p)
		}
	}
}

// checkpointer checkpoints a machine behind apply on a goroutine of its
// own, as raftnode's does: afterApply wakes it when a checkpoint is due,
// stop ends it (after one under way) and returns how many it made.
type checkpointer struct {
	m    *Machine
	wake chan struct{}
	done chan struct{}
	n    atomic.Int64
}

func startCheckpointer(m *Machine) *checkpointer {
	c := &checkpointer{m: m, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for range c.wake {
			if m.CheckpointBehind() > 0 {
				c.n.Add(1)
			}
		}
	}()
	return c
}

// afterApply wakes the checkpointer if a checkpoint is due; call it on
// the goroutine that applies.
func (c *checkpointer) afterApply() {
	if c.m.CheckpointDue() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

func (c *checkpointer) stop() int64 {
	close(c.wake)
	<-c.done
	return c.n.Load()
}
