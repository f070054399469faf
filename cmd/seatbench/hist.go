package main

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// histogram is a log-linear latency histogram in microseconds, in the manner
// of HdrHistogram with 3 significant bits short of 3 digits: values below
// 256 µs are exact, larger ones fall in buckets 1/128 wide (under 0.8%
// error), up to 2^37 µs. Recording is one atomic add, so the many workers
// share one histogram per call; a snapshot is a plain copy that can be
// subtracted from a later one for a per-second view. It stands in for
// hdrhistogram-go: the few lines here keep the module's dependencies as
// they are (STYLE 18).
type histogram struct {
	counts [histBuckets]atomic.Uint64
	max    atomic.Int64 // µs
}

const (
	histSubBits  = 8
	histSub      = 1 << histSubBits // exact values below this
	histHalf     = histSub / 2
	histShiftMax = 30
	histBuckets  = histSub + histShiftMax*histHalf
)

// bucketOf maps a value in µs to its bucket.
func bucketOf(v uint64) int {
	if v < histSub {
		return int(v)
	}
	shift := bits.Len64(v) - histSubBits
	if shift > histShiftMax {
		return histBuckets - 1
	}
	return histSub + (shift-1)*histHalf + int(v>>shift) - histHalf
}

// bucketHigh is the highest value (µs) that falls in bucket i.
func bucketHigh(i int) uint64 {
	if i < histSub {
		return uint64(i)
	}
	shift := (i-histSub)/histHalf + 1
	sub := uint64((i-histSub)%histHalf + histHalf)
	return (sub+1)<<shift - 1
}

func (h *histogram) record(d time.Duration) {
	us := d.Microseconds()
	if us < 0 {
		us = 0
	}
	h.counts[bucketOf(uint64(us))].Add(1)
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// recordMax raises the histogram's max to us (merging another's).
func (h *histogram) recordMax(us int64) {
	for {
		m := h.max.Load()
		if us <= m || h.max.CompareAndSwap(m, us) {
			return
		}
	}
}

// histSnapshot is a point-in-time copy of a histogram.
type histSnapshot struct {
	counts [histBuckets]uint64
	total  uint64
	max    int64
}

func (h *histogram) snapshot() *histSnapshot {
	s := &histSnapshot{max: h.max.Load()}
	for i := range h.counts {
		c := h.counts[i].Load()
		s.counts[i] = c
		s.total += c
	}
	return s
}

// minus returns the values recorded since prev (max is then approximate:
// the highest bucket that grew).
func (s *histSnapshot) minus(prev *histSnapshot) *histSnapshot {
	d := &histSnapshot{}
	for i := range s.counts {
		d.counts[i] = s.counts[i] - prev.counts[i]
		d.total += d.counts[i]
		if d.counts[i] > 0 {
			d.max = int64(bucketHigh(i))
		}
	}
	return d
}

// quantile returns the latency at q (0..1): the highest value of the bucket
// holding the q-th value, as HdrHistogram reports it; the max is exact.
func (s *histSnapshot) quantile(q float64) time.Duration {
	if s.total == 0 {
		return 0
	}
	rank := uint64(q*float64(s.total) + 0.5)
	rank = max(rank, 1)
	var seen uint64
	for i, c := range s.counts {
		seen += c
		if seen >= rank {
			v := min(int64(bucketHigh(i)), s.max)
			return time.Duration(v) * time.Microsecond
		}
	}
	return time.Duration(s.max) * time.Microsecond
}
