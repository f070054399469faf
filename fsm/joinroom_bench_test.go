// This file measures a burst of joins into one waiting room: entries of
// 64 joins (group commit), 10,000 arrivals a second of log time, so each
// arrival window fills up to 10,000 entries as in the burst.
//
//	go test -run='^$' -bench=ApplyJoin -benchmem -count 3 ./fsm/
package fsm

import (
	"fmt"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// benchJoinsPerEntry and benchJoinsPerSecond shape the burst; a room
// takes benchJoinsPerRoom joins before the next show's opens, well below
// RoomEntriesMax.
const (
	benchJoinsPerEntry  = 64
	benchJoinsPerSecond = 10_000
	benchJoinsPerRoom   = 200_000
)

func BenchmarkApplyJoin(b *testing.B) {
	m := newTestMachine(b, newTestDB(b), 1)
	var index uint64
	apply := func(ms int64, cmd *ledgerpb.Command) []*ledgerpb.Result {
		index++
		return m.Apply(index, at(ms, cmd))
	}
	joined, show := 0, ""
	b.ReportAllocs()
	report := cpuPerOp(b)
	for b.Loop() {
		ms := int64(joined) * 1000 / benchJoinsPerSecond
		if joined%benchJoinsPerRoom == 0 {
			show = fmt.Sprintf("s%d", joined/benchJoinsPerRoom)
			apply(ms, cmdShow("admin", "r"+show, testShow(show, "A:10:std", "std:100:EUR")))
			apply(ms, cmdSetRoom(show, true, 200))
		}
		// The entry is made outside the measure and applied from its
		// bytes, as raft hands it over.
		b.StopTimer()
		cmds := make([]*ledgerpb.Command, benchJoinsPerEntry)
		for i := range cmds {
			cmds[i] = cmdJoin(fmt.Sprintf("fan%d", joined+i), "j", show)
		}
		index++
		data, err := EncodeCommand(at(ms, &ledgerpb.Command{Op: &ledgerpb.Command_Batch{Batch: &ledgerpb.Batch{Commands: cmds}}}))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res := m.ApplyEntries([]Entry{{Index: index, Data: data}})[0]
		if len(res) != benchJoinsPerEntry || res[0].Code != ledgerpb.Code_CODE_OK {
			b.Fatalf("join entry %d = %d results, first %s", index, len(res), resultString(res[0]))
		}
		joined += benchJoinsPerEntry
	}
	report()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(joined), "ns/join")
}
