// This file proves the retry horizon's promise (requests.go, sendLimit): a
// request that states its first send time and ran once is, on every later
// retry, either answered from its record or refused with REQUEST_EXPIRED;
// never executed a second time, whatever the times of the retries and of
// the Expire entries that prune records. Within RequestHorizonMs of the
// first send a retry always gets the original result; once an Expire at
// or past the run time + RequestRetentionMs + an hour pruned the record, it
// is always refused.
package fsm

import (
	"math/rand/v2"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestHorizonLimits(t *testing.T) {
	// The gap that lets a record outlive every horizon it serves; also a
	// compile-time check in requests.go.
	if gap := RequestRetentionMs - RequestHorizonMs; gap <= FirstSentAheadMaxMs {
		t.Errorf("RequestRetentionMs - RequestHorizonMs = %d ms, want more than FirstSentAheadMaxMs (%d)", gap, FirstSentAheadMaxMs)
	}
}

func FuzzRetryPastHorizon(f *testing.F) {
	for seed := range uint64(12) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkRetryPastHorizon(t, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
	})
}

const hourMs = 60 * 60 * 1000

// checkRetryPastHorizon runs one request at a random time with a random
// first send time the FSM accepts, then retries it at random later times
// with Expire entries in between, and checks each answer.
func checkRetryPastHorizon(t *testing.T, r *rand.Rand) {
	m := newTestMachine(t, newTestDB(t), 0)
	ran := 1000 + r.Int64N(10*24*hourMs)
	sent := max(1, ran-r.Int64N(RequestHorizonMs+1)) // 0 would be no stamp
	if r.IntN(2) == 0 {
		sent = ran + r.Int64N(FirstSentAheadMaxMs+1) // the client's clock is ahead
	}
	index := uint64(1)
	apply := func(now int64, cmd *ledgerpb.Command, n int) []*ledgerpb.Result {
		res := mustApply(t, m, index, at(now, cmd), n)
		index++
		return res
	}
	retry := func() *ledgerpb.Command {
		c := cmdHold("fan", "r1", "s1", 0, "A1")
		c.FirstSentAtMs = sent
		return c
	}
	apply(ran, cmdShow("admin", "show", testShow("s1", "A:4:std", "std:1000:EUR")), 1)
	first := apply(ran, retry(), 1)[0]
	if first.Code != ledgerpb.Code_CODE_OK || first.Replayed {
		t.Fatalf("Hold(A1) first sent at %d, run at %d = %s, want OK", sent, ran, resultString(first))
	}
	pruneDue := ran + RequestRetentionMs + hourMs // every record of ran's hour is prunable
	now, prunedAt := ran, int64(0)
	for step := range 16 {
		now += r.Int64N(6 * hourMs)
		if step == 15 {
			now = max(now, pruneDue+r.Int64N(2*24*hourMs))
		}
		if r.IntN(2) == 0 || step == 15 {
			apply(now, cmdExpire(now, 0), 1)
			prunedAt = now
		}
		var got *ledgerpb.Result
		if r.IntN(3) == 0 { // in a batch, behind another client's request
			res := apply(now, cmdBatch(cmdHold("other", "x"+string(rune('a'+step)), "s1", 0, "A4"), retry()), 2)
			got = res[1]
		} else {
			got = apply(now, retry(), 1)[0]
		}
		replay := got.Code == first.Code && got.Replayed && got.HoldId == first.HoldId && got.Revision == first.Revision
		expired := got.Code == ledgerpb.Code_CODE_REQUEST_EXPIRED
		switch {
		case !replay && !expired:
			t.Fatalf("retry at %d (ran at %d, first sent at %d) = %s, want the original result or REQUEST_EXPIRED: executed again", now, ran, sent, resultString(got))
		case now-sent <= RequestHorizonMs && !replay:
			t.Fatalf("retry at %d, %d ms after the first send (within the horizon) = %s, want the original result", now, now-sent, resultString(got))
		case prunedAt >= pruneDue && !expired:
			t.Fatalf("retry at %d after an Expire at %d pruned the record = %s, want REQUEST_EXPIRED", now, prunedAt, resultString(got))
		}
	}
	if states := seatStates(t, m, "s1"); states["A1"] != ledgerpb.SeatState_FREE {
		t.Errorf("seat A1 = %v after the retries, want FREE (no retry took it again)", states["A1"])
	}
}
