package fsm

import (
	"path/filepath"
	"testing"
)

// TestStoreUsageTalliesByKind: a show, a hold and a confirm, checkpointed
// and closed, read back by kind.
func TestStoreUsageTalliesByKind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := newTestMachine(t, db, 2)
	mustApply(t, m, 1, at(1000, cmdShow("admin", "r0", testShow("s1", "A:4:std", "std:100:EUR"))), 1)
	h := mustApply(t, m, 2, at(1100, cmdHold("c1", "r1", "s1", 60000, "A1", "A2")), 1)[0]
	mustApply(t, m, 3, at(1200, cmdConfirm("c1", "r2", "s1", h.HoldId, "pay")), 1)
	must(m.Checkpoint(), "checkpoint")
	must(CloseDB(db), "close")

	usage, err := StoreUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]KindUsage{}
	for _, u := range usage {
		got[u.Kind] = u
		if u.KeyBytes <= 0 {
			t.Errorf("%s: %d records of %d key bytes", u.Kind, u.Records, u.KeyBytes)
		}
	}
	for kind, want := range map[string]int64{"meta": 1, "show": 1, "request record": 3, "client's booking": 1, "live hold or booking": 1} {
		if got[kind].Records != want {
			t.Errorf("%q: %d records, want %d (all: %+v)", kind, got[kind].Records, want, usage)
		}
	}
	if _, err := StoreUsage(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Errorf("StoreUsage of a directory without a store: no error")
	}
}
