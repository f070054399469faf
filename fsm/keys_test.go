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

func TestRequestKeysSortByHour(t *testing.T) {
	m := &Machine{group: 3, prefix: groupPrefix(3)}
	times := []int64{0, requestBucketMs, 256 * requestBucketMs, 1 << 40, 1<<62 + 5}
	for i := 1; i < len(times); i++ {
		a, b := m.requestKey(requestBucket(times[i-1]), "zz", "r9"), m.requestKey(requestBucket(times[i]), "a", "r1")
		if bytes.Compare(a, b) >= 0 {
			t.Errorf("requestKey(hour of %d) >= requestKey(hour of %d)", times[i-1], times[i])
		}
		bucket, c, r, err := decodeRequestKey(b)
		if err != nil || bucket != requestBucket(times[i]) || c != "a" || r != "r1" {
			t.Errorf("decodeRequestKey(requestKey(%d, a, r1)) = %d, %q, %q, %v", requestBucket(times[i]), bucket, c, r, err)
		}
	}
	// Pruning deletes [requestKey(0), requestKey(below)): every key of an
	// earlier hour, none of a later one.
	if lo, hi := m.requestKey(0, "", ""), m.requestKey(5, "", ""); bytes.Compare(lo, m.requestKey(4, "\xff", "\xff")) > 0 ||
		bytes.Compare(m.requestKey(4, "\xff", "\xff"), hi) >= 0 || bytes.Compare(m.requestKey(5, "", "r"), hi) < 0 {
		t.Errorf("the pruning range of hours below 5 is not [requestKey(0), requestKey(5))")
	}
}

func TestLengthPrefixedKeysDoNotCollide(t *testing.T) {
	m := &Machine{group: 1, prefix: groupPrefix(1)}
	if bytes.Equal(m.requestKey(1, "a", "bc"), m.requestKey(1, "ab", "c")) {
		t.Errorf("requestKey(a, bc) == requestKey(ab, c)")
	}
	if bytes.HasPrefix(m.liveKey("s10", "h1-1-0"), m.livePrefix("s1")) {
		t.Errorf("live keys of show s10 fall under the live prefix of show s1")
	}
	bucket, c, r, err := decodeRequestKey(m.requestKey(77, "ab", "c"))
	if err != nil || bucket != 77 || c != "ab" || r != "c" {
		t.Errorf("decodeRequestKey(requestKey(77, ab, c)) = %d, %q, %q, %v", bucket, c, r, err)
	}
}

func TestGroupRange(t *testing.T) {
	for _, g := range []uint32{0, 1, 255, 256, 1 << 24, ^uint32(0) - 1, ^uint32(0)} {
		m := &Machine{group: g, prefix: groupPrefix(g)}
		lo, hi := groupPrefix(g), groupEnd(g)
		for _, k := range [][]byte{m.metaKey(), m.showKey("zzz"), m.liveKey("s", "\xff\xff"), m.holdKey("\xff\xff"),
			m.requestKey(^uint64(0), "c", "r")} {
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
