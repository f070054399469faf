package fsm

import (
	"strings"
	"testing"
	"unsafe"
)

// TestShowIDKeptInShow: a short show id's bytes lie in its showState (the
// show map's key comparison then reads the show's own memory), a long one
// keeps its own string, and both are found, also after a restart's load.
func TestShowIDKeptInShow(t *testing.T) {
	db := newTestDB(t)
	m := newTestMachine(t, db, 1)
	short, long := "s1", strings.Repeat("L", ShowIDLenMax)
	rows := "A:4:std"
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r1", testShow(short, rows, "std:1000:EUR"))), 1)
	mustApply(t, m, 2, at(1000, cmdShow("admin", "r2", testShow(long, rows, "std:1000:EUR"))), 1)
	check := func(m *Machine) {
		t.Helper()
		for _, id := range []string{short, long} {
			s := m.led.shows[id]
			if s == nil || s.id != id || m.led.showList[s.num] != s {
				t.Fatalf("show %.8s... not found by its id", id)
			}
			inline := unsafe.StringData(s.id) == &s.idBuf[0]
			if want := len(id) <= showIDInline; inline != want {
				t.Fatalf("show %.8s... (%d bytes): id in the show %t, want %t", id, len(id), inline, want)
			}
		}
	}
	check(m)
	if err := m.Checkpoint(); err != nil {
		t.Fatal(err)
	}
	check(newTestMachine(t, db, 1))
}
