// This file proves that a join is exactly-once although the join that
// makes an entry writes no request record (the entry is its record): a
// retry under the same request id gets the original answer, byte for
// byte, after other joins and admissions moved the line, after a restart,
// and after the room closed; the same id with another payload (another
// show, a hold) is still refused; a second join under a new id answers
// with the entry and is recorded like any request.
package fsm

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// sameAnswer fails unless again replays first exactly.
func sameAnswer(t *testing.T, what string, again, first *ledgerpb.Result) {
	t.Helper()
	if !again.Replayed {
		t.Fatalf("%s = %s, want a replay", what, resultString(again))
	}
	a := proto.Clone(again).(*ledgerpb.Result)
	a.Replayed = false
	if !proto.Equal(a, first) {
		t.Fatalf("%s = %v, want the original answer %v", what, a, first)
	}
}

// requestRecords counts the machine's request records in the store.
func requestRecords(t *testing.T, m *Machine) int {
	t.Helper()
	n := 0
	err := scanPrefix(m.store(), m.key(kindRequest), func(_, _ []byte) error { n++; return nil })
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestJoinExactlyOnce(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	rt := &roomTest{t: t, m: newTestMachine(t, db, 0)}
	t.Cleanup(func() { rt.m.db.Close() })
	ok := ledgerpb.Code_CODE_OK
	reused := ledgerpb.Code_CODE_REQUEST_ID_REUSED
	rt.want(1000, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR")), ok)
	rt.want(1000, cmdShow("admin", "r2", testShow("s2", "A:4:std", "std:100:EUR")), ok)
	rt.want(1000, cmdSetRoom("s1", true, 2), ok)
	rt.want(1000, cmdSetRoom("s2", true, 2), ok)

	records := requestRecords(t, rt.m)
	first := rt.want(1100, cmdJoin("c1", "j", "s1"), ok)
	if got := requestRecords(t, rt.m); got != records {
		t.Fatalf("a join that made an entry wrote %d request records, want none", got-records)
	}
	if first.RoomPosition != 1 || first.RoomAdmitPerSecond != 2 || first.RoomEntry.RequestId != "" || first.RoomEntry.PayloadHash != nil {
		t.Fatalf("first join = %v, want position 1 at 2/s and no record fields in its entry", first)
	}
	// Other joins land around it; the window closes; admissions move the
	// line: the retry still gets the answer of its time.
	for i, c := range []string{"c2", "c3", "c4", "c5"} {
		rt.want(1200+int64(i)*10, cmdJoin(c, "j", "s1"), ok)
	}
	rt.want(3000, cmdAdmit(3000), ok)
	retry := func(what string, ms int64) {
		t.Helper()
		c := cmdJoin("c1", "j", "s1")
		c.GetJoinRoom().Seed = []byte("another gateway's seed")
		sameAnswer(t, what, rt.want(ms, c, ok), first)
	}
	retry("retried join after other joins and admissions", 3100)

	// The same id for something else is refused, whatever it asks.
	rt.want(3200, cmdJoin("c1", "j", "s2"), reused)
	rt.want(3200, cmdHold("c1", "j", "s2", 0, "A1"), reused)
	// Under another id the client's join answers with its entry as it
	// stands, recorded like any request.
	second := rt.want(3300, cmdJoin("c1", "j2", "s1"), ok)
	if second.Replayed || second.RoomEntry.EntryId != first.RoomEntry.EntryId {
		t.Fatalf("second join = %s, want entry %s", resultString(second), first.RoomEntry.EntryId)
	}
	sameAnswer(t, "retried second join", rt.want(3400, cmdJoin("c1", "j2", "s1"), ok), second)

	// After a restart the entries, loaded from the store, answer alike.
	rt.m = reopen(t, rt.m, dir, 0)
	retry("retried join after a restart", 3500)
	rt.want(3500, cmdJoin("c1", "j", "s2"), reused)

	// Closing the room writes the joins' request records: the retry, and
	// the refusal of another payload, outlive the entries.
	records = requestRecords(t, rt.m)
	rt.want(3600, cmdSetRoom("s1", false, 0), ok)
	if got := requestRecords(t, rt.m); got != records+5+1 {
		t.Fatalf("closing a room of 5 joins wrote %d request records, want 6 (with the close's own)", got-records)
	}
	retry("retried join after the room closed", 3700)
	rt.want(3700, cmdJoin("c1", "j", "s2"), reused)
	rt.m = reopen(t, rt.m, dir, 0)
	retry("retried join after the room closed and a restart", 3800)
}

// TestJoinReplaySameBatch: a join retried in the same batch as the join is a
// replay too, and a twin applying the same log has the same digest.
func TestJoinReplaySameBatch(t *testing.T) {
	var digests []Digest
	for range 2 {
		m := newTestMachine(t, newTestDB(t), 0)
		mustApply(t, m, 1, at(0, cmdShow("admin", "r1", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
		mustApply(t, m, 2, at(0, cmdSetRoom("s1", true, 2)), 1)
		batch := &ledgerpb.Command{ProposedAtMs: 10, Op: &ledgerpb.Command_Batch{Batch: &ledgerpb.Batch{
			Commands: []*ledgerpb.Command{cmdJoin("c1", "j", "s1"), cmdJoin("c2", "j", "s1"), cmdJoin("c1", "j", "s1")}}}}
		res := mustApply(t, m, 3, batch, 3)
		sameAnswer(t, "join retried in its batch", res[2], res[0])
		digests = append(digests, mustDigest(t, m))
	}
	if digests[0] != digests[1] {
		t.Fatalf("twins' digests %v and %v differ", digests[0], digests[1])
	}
}
