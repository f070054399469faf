package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Watcher processes: the watchers workload reads at most watchProcessMax
// watchers in one process and starts a child seatbench for each further
// share. The parent writes the child its share (one JSON line), then one
// line per writer answer ("a REV UNIX_NS"), then "end"; the child answers
// "ok" once its watchers are connected (or "error: ..."), and its figures
// as one JSON line after "end". A child measures delivery against the
// parent's answers, as the parent does for its own watchers.

// watchChildEnv, set, makes seatbench a watcher process.
const watchChildEnv = "SEATBENCH_WATCH_CHILD"

// watchChildConfig is a child's share of the watchers.
type watchChildConfig struct {
	Show   string
	Addrs  []string
	Count  int
	Offset int // of its first watcher, for the round robin over Addrs
}

// watchChild is the parent's end of a child.
type watchChild struct {
	cfg watchChildConfig
	cmd *exec.Cmd
	in  *bufio.Writer
	inc io.Closer
	out *bufio.Reader
}

func startWatchChild(cfg watchChildConfig) (*watchChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), watchChildEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start a watcher process: %w", err)
	}
	c := &watchChild{cfg: cfg, cmd: cmd, in: bufio.NewWriter(in), inc: in, out: bufio.NewReader(out)}
	b, _ := json.Marshal(cfg)
	c.in.Write(append(b, '\n'))
	return c, c.in.Flush()
}

// connected waits until the child's watchers are connected.
func (c *watchChild) connected() error {
	line, err := c.out.ReadString('\n')
	if err != nil {
		return fmt.Errorf("watcher process: %w", err)
	}
	if line = strings.TrimSpace(line); line != "ok" {
		return fmt.Errorf("watcher process: %s", line)
	}
	return nil
}

// answer tells the child of a writer's answer.
func (c *watchChild) answer(rev uint64, at int64) {
	fmt.Fprintf(c.in, "a %d %d\n", rev, at)
	c.in.Flush()
}

// finish stops the child's watchers and returns its figures.
func (c *watchChild) finish() (watchResult, error) {
	var r watchResult
	c.in.WriteString("end\n")
	c.in.Flush()
	line, err := c.out.ReadString('\n')
	c.inc.Close()
	werr := c.cmd.Wait()
	if err != nil {
		return r, errors.Join(err, werr)
	}
	return r, json.Unmarshal([]byte(line), &r)
}

// runWatchChild is a child's main.
func runWatchChild(stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewScanner(stdin)
	var cfg watchChildConfig
	if !in.Scan() || json.Unmarshal(in.Bytes(), &cfg) != nil || len(cfg.Addrs) == 0 {
		fmt.Fprintln(stdout, "error: bad share")
		return 2
	}
	wl := &watchers{show: cfg.Show, addrs: cfg.Addrs}
	wl.pending.at = map[uint64][]int64{}
	if err := wl.dialAll(context.Background(), cfg.Count, cfg.Offset); err != nil {
		wl.close()
		fmt.Fprintf(stdout, "error: %v\n", err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 3 && f[0] == "a" {
			rev, _ := strconv.ParseUint(f[1], 10, 64)
			at, _ := strconv.ParseInt(f[2], 10, 64)
			wl.resolve(rev, at)
			continue
		}
		if len(f) == 1 && f[0] == "end" {
			break
		}
	}
	wl.close()
	r := wl.ownResults()
	wl.resolveLeft()
	snap := wl.delivery.snapshot()
	r.Delivery, r.MaxUs = map[int]uint64{}, snap.max
	for i, n := range snap.counts {
		if n > 0 {
			r.Delivery[i] = n
		}
	}
	b, _ := json.Marshal(r)
	fmt.Fprintf(stdout, "%s\n", b)
	return 0
}

// resolve records a writer's answer in a child, and the deliveries of that
// revision that arrived before it.
func (wl *watchers) resolve(rev uint64, at int64) {
	wl.pending.Lock()
	defer wl.pending.Unlock()
	wl.answered.Store(rev, at)
	wl.revs = append(wl.revs, rev)
	for _, arrived := range wl.pending.at[rev] {
		wl.delivery.record(time.Duration(max(0, arrived-at)))
	}
	delete(wl.pending.at, rev)
}

// hold keeps a delivery whose answer a child has not heard of yet; it
// reports false in the parent, which hears of every answer first.
func (wl *watchers) hold(rev uint64, arrived int64) bool {
	if wl.pending.at == nil {
		return false
	}
	wl.pending.Lock()
	defer wl.pending.Unlock()
	if at, ok := wl.answered.Load(rev); ok {
		wl.delivery.record(time.Duration(max(0, arrived-at.(int64))))
		return true
	}
	wl.pending.at[rev] = append(wl.pending.at[rev], arrived)
	return true
}

// resolveLeft records deliveries whose answer never came as 0 (they
// arrived before the writer's answer, which the run ended without).
func (wl *watchers) resolveLeft() {
	wl.pending.Lock()
	defer wl.pending.Unlock()
	for rev, arrivals := range wl.pending.at {
		for range arrivals {
			wl.delivery.record(0)
		}
		delete(wl.pending.at, rev)
	}
}
