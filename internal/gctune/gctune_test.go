package gctune

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, headroom uint64
		want           int
	}{
		{0, 256 * mib, percentMax},
		{1, 256 * mib, percentMax},
		{16 * mib, 256 * mib, 1600},
		{128 * mib, 256 * mib, 200},
		{256 * mib, 256 * mib, 100},
		{1024 * mib, 256 * mib, 100}, // a big heap keeps Go's default
	} {
		if got := percent(c.live, c.headroom); got != c.want {
			t.Errorf("percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.headroom/mib, got, c.want)
		}
	}
}

// TestRetunesAfterEachCollection grows the live heap and checks that the
// percentage set after the next collection follows it down, and that Stop
// gives Go's default back.
func TestRetunesAfterEachCollection(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	set := make(chan int, 64)
	tn := start(64<<20, func(p int) { set <- p })
	defer tn.Stop()
	first := <-set
	var keep [][]byte
	for range 256 {
		keep = append(keep, make([]byte, 1<<20)) // 256 MiB live: above the headroom
	}
	deadline := time.After(10 * time.Second)
	for {
		runtime.GC()
		select {
		case p := <-set:
			if p == 100 {
				if first <= 100 {
					t.Fatalf("with a small heap the tuner set GOGC %d, want above 100", first)
				}
				runtime.KeepAlive(keep)
				tn.Stop()
				if prev := debug.SetGCPercent(100); prev != 100 {
					t.Fatalf("after Stop GOGC is %d, want 100", prev)
				}
				return
			}
		case <-deadline:
			t.Fatal("the tuner never set GOGC 100 for a live heap above its headroom")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func TestStartRespectsGOGC(t *testing.T) {
	t.Setenv("GOGC", "100")
	if tn := Start(256 << 20); tn != nil {
		tn.Stop()
		t.Fatal("Start tuned the collector although GOGC is set")
	}
	if tn := Start(0); tn != nil {
		t.Fatal("Start tuned the collector with no headroom")
	}
}
