//go:build linux

package main

import (
	"crypto/sha256"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// measureYardstick times what a node's CPU per command is made of, on
// this machine at this hour, before the cluster starts: a syscall, a page
// fault, a 4 KiB write and its fdatasync, a loopback TCP round trip, a
// load that misses the caches, and hashing. The same tree's node CPU per
// command has moved by a factor of three between sessions
// (docs/PERFORMANCE.md, "The machine's hour"); these figures, printed
// with every run, say whether the machine or the code moved. It takes
// under a second; dir is where the nodes keep their data (the file
// written there is removed).
func measureYardstick(dir string) *Yardstick {
	y := &Yardstick{}
	const calls = 100_000
	t := time.Now()
	for range calls {
		syscall.Getppid()
	}
	y.SyscallNs = float64(time.Since(t).Nanoseconds()) / calls

	const faultBytes = 32 << 20
	if m, err := syscall.Mmap(-1, 0, faultBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON); err == nil {
		_ = syscall.Madvise(m, syscall.MADV_NOHUGEPAGE) // 4 KiB pages even where transparent huge pages are always on
		t = time.Now()
		for i := 0; i < faultBytes; i += 4096 {
			m[i] = 1
		}
		y.PageFaultUs = float64(time.Since(t).Nanoseconds()) / (faultBytes / 4096) / 1e3
		_ = syscall.Munmap(m)
	}

	if f, err := os.CreateTemp(dir, "yardstick-*"); err == nil {
		const syncs = 50
		page := make([]byte, 4096)
		t = time.Now()
		var failed error
		for i := range syncs {
			if _, err := f.WriteAt(page, int64(i%8)*4096); err != nil {
				failed = err
				break
			}
			if err := syscall.Fdatasync(int(f.Fd())); err != nil {
				failed = err
				break
			}
		}
		if failed == nil {
			y.FdatasyncUs = float64(time.Since(t).Nanoseconds()) / syncs / 1e3
		}
		f.Close()
		os.Remove(f.Name())
	}

	y.LoopbackRoundTripUs = loopbackRoundTrip()
	y.MemoryLatencyNs = memoryLatency()

	buf := make([]byte, 1<<20)
	t = time.Now()
	const hashed = 64
	for range hashed {
		sha256.Sum256(buf)
	}
	y.SHA256MBs = hashed / time.Since(t).Seconds()
	return y
}

// memoryLatency is the mean time of a load that misses every cache, in
// ns: a chase through a cycle of 64 MiB of indexes in a scattered order,
// each load's address the previous load's value, so no two overlap. Such
// misses bound a node's apply (docs/PERFORMANCE.md, "What is left").
func memoryLatency() float64 {
	const n = 8 << 20 // 64 MiB of uint64
	// x -> a*x + c mod 2^23, with a = 1 mod 4 and c odd, visits every
	// index in one cycle (Hull-Dobell), in an order no prefetcher follows.
	const a, c = 0x5DEECE66D*4 + 1, 0x9E3779B97F4A7C15 | 1
	next := make([]uint64, n)
	for i := range next {
		next[i] = (uint64(i)*a + c) & (n - 1)
	}
	const loads = 1_000_000
	p := uint64(0)
	t := time.Now()
	for range loads {
		p = next[p]
	}
	d := time.Since(t)
	if p == n { // never: keeps the chase from being optimized away
		return 0
	}
	return float64(d.Nanoseconds()) / loads
}

// loopbackRoundTrip is the mean time of a 1-byte TCP round trip over
// 127.0.0.1, in µs; 0 if it could not be measured.
func loopbackRoundTrip() float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second)
	if err != nil {
		return 0
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	const trips = 2000
	b := []byte{1}
	t := time.Now()
	for range trips {
		if _, err := c.Write(b); err != nil {
			return 0
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return 0
		}
	}
	return float64(time.Since(t).Nanoseconds()) / trips / 1e3
}
