// This file measures the request filter as apply uses it for a new
// request: ask which hours may hold its record (none, nearly always),
// then note it.
package fsm

import (
	"fmt"
	"testing"
)

// BenchmarkRequestFilter asks about and adds new requests to an hour
// that already holds n (several filters, as BenchmarkApplyUniform makes
// with 200,000; an hour of a group at 1,700 commands a second holds six
// million, whose filters are far out of the caches).
//
// hours=25 is a group a day into its life: each new request is asked of
// every hour the retention keeps, 25 filters of n/25 requests each.
func BenchmarkRequestFilter(b *testing.B) {
	for _, tc := range []struct{ n, hours int }{{200_000, 1}, {4_000_000, 1}, {4_000_000, 25}} {
		b.Run(fmt.Sprintf("held=%d/hours=%d", tc.n, tc.hours), func(b *testing.B) {
			var f requestFilter
			for i := range tc.n {
				f.add(requestHash(fmt.Sprintf("c%d", i), "r"), uint64(1+i*tc.hours/tc.n))
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
				f.add(h, uint64(tc.hours))
			}
			b.ReportMetric(float64(named)/float64(b.N), "named/op")
		})
	}
}
