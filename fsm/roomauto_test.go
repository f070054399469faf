// This file proves that an armed room opens by itself: holds in the show
// count per second of log time, a new second starts the count again, the
// hold that reaches the threshold opens the room at the armed rate and is
// itself refused without admission, later holds are too, and joins then
// work; the count survives a restart, so a restarted replica opens the
// room at the same entry; disarming stops it.
package fsm

import (
	"fmt"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func cmdArmRoom(show string, open bool, rate, arrivals uint32) *ledgerpb.Command {
	c := cmdSetRoom(show, open, rate)
	c.RequestId = fmt.Sprintf("arm-%s-%t-%d-%d", show, open, rate, arrivals)
	c.GetSetRoom().AutoOpenArrivalsPerSecond = arrivals
	return c
}

func roomOf(t *testing.T, m *Machine, show string) *RoomView {
	t.Helper()
	v := m.ReadView()
	defer v.Close()
	r, err := v.Room(show)
	if err != nil {
		t.Fatalf("Room(%s) = %v", show, err)
	}
	return r
}

func TestRoomAutoOpen(t *testing.T) {
	dir := t.TempDir()
	db, err := OpenDB(dir)
	if err != nil {
		t.Fatal(err)
	}
	rt := &roomTest{t: t, m: newTestMachine(t, db, 0)}
	t.Cleanup(func() { rt.m.db.Close() })
	ok, required := ledgerpb.Code_CODE_OK, ledgerpb.Code_CODE_ADMISSION_REQUIRED
	rt.want(1000, cmdShow("admin", "r1", testShow("s1", "A:10:std", "std:100:EUR")), ok)
	rt.want(1000, cmdArmRoom("s1", false, 0, 3), ledgerpb.Code_CODE_INVALID_ARGUMENT) // arming needs a rate
	r := rt.want(1000, cmdArmRoom("s1", false, 7, 3), ok)
	if r.RoomAuto == nil || r.RoomAuto.ArrivalsPerSecond != 3 || r.Room != nil {
		t.Fatalf("SetRoom(armed, closed) = %v, want armed at 3 a second and no room", r)
	}
	if v := roomOf(t, rt.m, "s1"); v.Open || v.AutoOpenArrivalsPerSecond != 3 || v.AutoOpenAdmitPerSecond != 7 {
		t.Fatalf("room after arming = %+v, want closed, armed at 3 a second to admit 7", v)
	}
	// Two holds in second 1, two in second 2: below the threshold.
	rt.want(1100, cmdHold("c1", "h", "s1", 0, "A1"), ok)
	rt.want(1900, cmdHold("c2", "h", "s1", 0, "A2"), ok)
	rt.want(2000, cmdHold("c3", "h", "s1", 0, "A3"), ok)
	rt.want(2100, cmdHold("c4", "h", "s1", 0, "A4"), ok)
	if roomOf(t, rt.m, "s1").Open {
		t.Fatalf("room open after two holds a second, threshold 3")
	}
	// A restart keeps the count: the third hold of second 2 opens it.
	rt.m = reopen(t, rt.m, dir, 0)
	rt.want(2200, cmdHold("c5", "h", "s1", 0, "A5"), required)
	if v := roomOf(t, rt.m, "s1"); !v.Open || v.AdmitPerSecond != 7 || v.AdmissionTTLMs != RoomAdmissionTTLDefaultMs {
		t.Fatalf("room after the third hold of a second = %+v, want open at 7 a second", v)
	}
	rt.want(2300, cmdHold("c6", "h", "s1", 0, "A6"), required)
	rt.want(2300, cmdJoin("c6", "j", "s1"), ok)
	// The operator closes it and disarms: holds need nothing again.
	rt.want(2400, cmdArmRoom("s1", false, 0, 0), ok)
	for i := range 4 {
		rt.want(2500, cmdHold(fmt.Sprintf("d%d", i), "h", "s1", 0, fmt.Sprintf("A%d", 7+i)), ok)
	}
	if v := roomOf(t, rt.m, "s1"); v.Open || v.AutoOpenArrivalsPerSecond != 0 {
		t.Fatalf("room after disarming = %+v, want closed and not armed", v)
	}
}
