// This file adds the waiting room to the entry generator (gen_test.go) and
// proves that replicas applying rooms agree: results, digests and restores
// (TestDeterminismRooms), as the fuzz target does for fuzzed sequences.
package fsm

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

// roomCommand opens, re-rates, closes or arms a room, joins one, admits, or holds
// with an admission token (usually of the client's own entry).
func (g *gen) roomCommand() *ledgerpb.Command {
	show := g.pick(genShows)
	switch p := g.ch.intn(10); {
	case p < 2:
		rates := []uint32{1, 3, 50, 0}
		arms := []uint32{0, 0, 1, 2} // auto-open thresholds: holds a second
		open := g.ch.intn(4) != 0
		return g.remember(&ledgerpb.Command{ClientId: "admin", RequestId: g.request(),
			Op: &ledgerpb.Command_SetRoom{SetRoom: &ledgerpb.SetRoomCmd{ShowId: show, Open: open, AdmitPerSecond: rates[g.ch.intn(len(rates))],
				AutoOpenArrivalsPerSecond: arms[g.ch.intn(len(arms))]}}})
	case p < 6:
		seed := []byte{byte(g.ch.intn(256)), byte(g.ch.intn(256))}
		return g.remember(&ledgerpb.Command{ClientId: g.pick(genClients), RequestId: g.request(),
			Op: &ledgerpb.Command_JoinRoom{JoinRoom: &ledgerpb.JoinRoomCmd{ShowId: show, Seed: seed}}})
	case p < 8:
		limits := []uint32{0, 1, 2}
		return &ledgerpb.Command{Op: &ledgerpb.Command_Admit{Admit: &ledgerpb.AdmitCmd{UptoMs: g.at + int64(g.ch.intn(3000)) - 1000, Limit: limits[g.ch.intn(len(limits))]}}}
	default:
		c := g.hold(g.pick(genClients), g.request())
		if len(g.roomEntry) > 0 {
			e := g.roomEntry[g.ch.intn(len(g.roomEntry))]
			c.GetHold().ShowId = e.show
			if g.ch.intn(5) != 0 {
				c.ClientId = e.client
			}
			c.GetHold().AdmissionToken = admissionToken(nil, e.id)
		}
		return g.remember(c)
	}
}

func TestDeterminismRooms(t *testing.T) {
	seed := testSeed(t)
	for run := range 4 {
		g := newGen(randChooser{rand.New(rand.NewPCG(seed, 77+uint64(run)))})
		g.rooms = true
		a := newTestMachine(t, newTestDB(t), 7)
		b := newTestMachine(t, newTestDB(t), 7)
		c := newTestMachine(t, newTestDB(t), 7)
		feed(t, g, 200, a, b)
		if err := c.Restore(bytes.NewReader(snapshotBytes(t, a))); err != nil {
			t.Fatalf("Restore: %v", err)
		}
		feed(t, g, 200, a, b, c)
		if len(g.roomEntry) == 0 {
			t.Fatalf("run %d joined no room: the generator does not reach rooms", run)
		}
	}
}
