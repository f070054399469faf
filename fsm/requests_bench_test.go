// This file measures the request filter as apply uses it for a new
// request: ask which hours may hold its record (none, nearly always),
// then note it.
package fsm

import (
	"fmt"
	"testing"
)

// BenchmarkRequestFilter asks about and adds new requests to an hour
// that already holds 200,000 (several filters, as BenchmarkApplyUniform
// makes).
func BenchmarkRequestFilter(b *testing.B) {
	var f requestFilter
	for i := range 200_000 {
		f.add(requestHash(fmt.Sprintf("c%d", i), "r"), 1)
	}
	named := 0
	x := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		x += 0x9e3779b97f4a7c15 // splitmix64: a new request's hash
		h := x
		h = (h ^ h>>30) * 0xbf58476d1ce4e5b9
		h = (h ^ h>>27) * 0x94d049bb133111eb
		h ^= h >> 31
		f.each(h, func(uint64) bool { named++; return true })
		f.add(h, 1)
	}
	b.ReportMetric(float64(named)/float64(b.N), "named/op")
}
