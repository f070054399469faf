// This file proves the key layout the state machine's scans rely on: the
// request retention index sorts by time (so pruning forgets oldest first,
// and the request filter can drop whole generations), length prefixes
// keep ("a","bc") and ("ab","c") apart, every key of a group sorts inside
// [groupPrefix(g), groupEnd(g)) for every group id including the last, the
// meta record round-trips, and prefixEnd is the tightest bound.
package fsm

import (
	"bytes"
	"testing"
)

func TestRequestAgeKeysSortByTime(t *testing.T) {
	m := &Machine{group: 3, prefix: groupPrefix(3)}
	times := []int64{0, 1, 255, 256, 1 << 40, 1<<62 + 5}
	for i := 1; i < len(times); i++ {
		a, b := m.requestAgeKey(times[i-1], "zz", "r9"), m.requestAgeKey(times[i], "a", "r1")
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("requestAgeKey(%d) >= requestAgeKey(%d)", times[i-1], times[i])
		}
		at, c, r, err := decodeRequestAgeKey(b)
		if err != nil || at != times[i] || c != "a" || r != "r1" {
			t.Errorf("decodeRequestAgeKey(requestAgeKey(%d, a, r1)) = %d, %q, %q, %v", times[i], at, c, r, err)
		}
	}
}

func TestLengthPrefixedKeysDoNotCollide(t *testing.T) {
	m := &Machine{group: 1, prefix: groupPrefix(1)}
	if bytes.Equal(m.requestKey("a", "bc"), m.requestKey("ab", "c")) {
		t.Errorf("requestKey(a, bc) == requestKey(ab, c)")
	}
	if bytes.HasPrefix(m.seatKey("s10", 0), m.seatPrefix("s1")) {
		t.Errorf("seat keys of show s10 fall under the seat prefix of show s1")
	}
	at, c, r, err := decodeRequestAgeKey(m.requestAgeKey(77, "ab", "c"))
	if err != nil || at != 77 || c != "ab" || r != "c" {
		t.Errorf("decodeRequestAgeKey(requestAgeKey(77, ab, c)) = %d, %q, %q, %v", at, c, r, err)
	}
}

func TestGroupRange(t *testing.T) {
	for _, g := range []uint32{0, 1, 255, 256, 1 << 24, ^uint32(0) - 1, ^uint32(0)} {
		m := &Machine{group: g, prefix: groupPrefix(g)}
		lo, hi := groupPrefix(g), groupEnd(g)
		for _, k := range [][]byte{m.metaKey(), m.showKey("zzz"), m.seatKey("s", 0xffff), m.holdKey("\xff\xff"),
			m.requestKey("c", "r"), m.requestAgeKey(-1, "c", "r")} {
			if bytes.Compare(k, lo) < 0 || bytes.Compare(k, hi) >= 0 {
				t.Errorf("group %d: key %x outside [groupPrefix, groupEnd) = [%x, %x)", g, k, lo, hi)
				break
			}
		}
	}
}

func TestMetaRoundTrip(t *testing.T) {
	for _, c := range []struct {
		applied uint64
		clock   int64
	}{{0, 0}, {1, 1000}, {^uint64(0), -1}, {42, 1 << 62}} {
		a, k, err := decodeMeta(encodeMeta(c.applied, c.clock))
		if err != nil || a != c.applied || k != c.clock {
			t.Errorf("decodeMeta(encodeMeta(%d, %d)) = %d, %d, %v", c.applied, c.clock, a, k, err)
		}
	}
	for _, n := range []int{0, 15, 17} {
		if _, _, err := decodeMeta(make([]byte, n)); err == nil {
			t.Errorf("decodeMeta of %d bytes = nil error, want an error", n)
		}
	}
}

func TestPrefixEnd(t *testing.T) {
	tests := []struct{ p, want []byte }{
		{[]byte("ab"), []byte("ac")},
		{[]byte{'a', 0xff}, []byte("b")},
		{[]byte{0xff, 0xff}, nil},
	}
	for _, tt := range tests {
		if got := prefixEnd(tt.p); !bytes.Equal(got, tt.want) {
			t.Errorf("prefixEnd(%x) = %x, want %x", tt.p, got, tt.want)
		}
	}
}
