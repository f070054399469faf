package fsm

// What reading the group's state from the store costs a view once apply
// has written behind a while: a watcher's page of changes, a client's
// bookings, a hold that ended (none of which the ledger keeps).

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

func BenchmarkViewReads(b *testing.B) {
	const shows, entries = 500, 30000
	m := newTestMachine(b, newTestDB(b), 1)
	index := uint64(0)
	for s := range shows {
		index++
		mustApply(b, m, index, at(1000, cmdShow("admin", fmt.Sprintf("r%d", s), testShow(fmt.Sprintf("s%d", s), "A:20:std,B:20:std", "std:1000:EUR"))), 1)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range entries {
		index++
		show := fmt.Sprintf("s%d", rng.IntN(shows))
		seat := fmt.Sprintf("%c%d", 'A'+rng.IntN(2), 1+rng.IntN(20))
		cmd := cmdHold(fmt.Sprintf("c%d", i%5000), fmt.Sprintf("r%d", i), show, 1000, seat)
		m.Apply(index, at(2000+int64(i)*10, cmd))
	}
	b.Run("SeatEvents", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			v := m.ReadView()
			if _, err := v.SeatEvents(fmt.Sprintf("s%d", rng.IntN(shows)), index-2000, 50); err != nil {
				b.Fatal(err)
			}
			v.Close()
		}
	})
	b.Run("EndedHold", func(b *testing.B) {
		b.ReportAllocs()
		v := m.ReadView()
		defer v.Close()
		for b.Loop() {
			if _, err := v.Hold(fmt.Sprintf("h%d", rng.IntN(20000))); err != nil && err != ErrNotFound {
				b.Fatal(err)
			}
		}
	})
}
