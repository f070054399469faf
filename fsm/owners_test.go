// This file proves seatOwners' bookkeeping: a dropped hold's reference is
// reused, dropping finds a hold whose seats all went to later holds, and
// dropping a hold that has no reference is a violation.
package fsm

import (
	"strings"
	"testing"

	"github.com/seatledger/seatledger/proto/ledgerpb"
)

func TestSeatOwners(t *testing.T) {
	o := newSeatOwners(4)
	a, b := &ledgerpb.HoldRecord{HoldId: "a"}, &ledgerpb.HoldRecord{HoldId: "b"}
	ra := o.add(a)
	o.put(0, ra)
	o.put(1, ra)
	rb := o.add(b)
	o.put(2, rb)
	if o.at(0) != a || o.at(1) != a || o.at(2) != b || o.at(3) != nil {
		t.Fatalf("owners %v %v %v %v, want a a b none", o.at(0), o.at(1), o.at(2), o.at(3))
	}
	o.clear(0)
	o.clear(1)
	o.drop(a, ra)
	c := &ledgerpb.HoldRecord{HoldId: "c"}
	if rc := o.add(c); rc != ra {
		t.Errorf("add after drop = reference %d, want the dropped %d", rc, ra)
	}
	// b lost its only seat to c (a machine that skips the seat check):
	// drop finds b without a reference.
	o.put(2, ra)
	o.drop(b, 0)
	if len(o.holds) != 2 || o.holds[rb-1] != nil || o.at(2) != c {
		t.Errorf("after dropping b: holds %v, seat 2 owned by %v", o.holds, o.at(2))
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "no seat reference") {
			t.Errorf("drop of an unknown hold = %v, want a violation", r)
		}
	}()
	o.drop(&ledgerpb.HoldRecord{HoldId: "x"}, 0)
}
