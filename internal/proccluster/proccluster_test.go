// These tests prove that proccluster starts real seatd processes that serve,
// and that kill, stop, pause, resume and restart do what they say, that a
// failed start cleans up after itself, that Close leaves no process, no
// zombie and no goroutine behind, and that a node added later runs with
// --join through the running nodes instead of --peers.
package proccluster

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// seatd is the binary TestMain builds once for every test.
var seatd string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "proccluster-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	seatd = filepath.Join(dir, "seatd")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	err = Build(ctx, seatd)
	cancel()
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func startTest(t *testing.T, cfg Config) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg.Binary, cfg.Dir, cfg.AdminToken = seatd, t.TempDir(), testToken
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testToken is the test clusters' admin token; post presents it.
const testToken = "proccluster-test-token"

// post sends a JSON body and retries 503s (same request id) until ctx ends.
func post(ctx context.Context, addr, path, body string) (int, string, error) {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				return resp.StatusCode, string(b), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, "", fmt.Errorf("POST %s: %w (last error %v)", path, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

const testShow = `{"show":{"show_id":"pc","title":"t","rows":[{"name":"A","seats":10,"category":"std"}],"categories":[{"name":"std","price_minor":100,"currency":"EUR"}]}}`

func hold(t *testing.T, n *Node, request, seat string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	body := fmt.Sprintf(`{"seat_ids":[%q],"client_id":"pc","request_id":%q}`, seat, request)
	code, resp, err := post(ctx, n.HTTPAddr, "/v1/shows/pc/holds", body)
	if err != nil || code != http.StatusOK {
		t.Fatalf("Hold(%s) at %s = %d %s %v, want 200", seat, n.ID, code, resp, err)
	}
}

func alive(pid int) bool { return pid != 0 && syscall.Kill(pid, 0) == nil }

func TestLifecycle(t *testing.T) {
	goroutines := runtime.NumGoroutine()
	c := startTest(t, Config{Nodes: 3, Groups: 2})
	if got := strings.Count(c.PeersFlag(), ","); got != 2 {
		t.Fatalf("PeersFlag() = %q, want 3 peers", c.PeersFlag())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if code, body, err := post(ctx, c.Node("n1").HTTPAddr, "/v1/shows", testShow); err != nil || code != http.StatusOK {
		t.Fatalf("CreateShow = %d %s %v, want 200", code, body, err)
	}
	hold(t, c.Node("n1"), "r1", "A1")

	pid1 := c.Node("n1").PID()
	if err := c.Kill("n1"); err != nil {
		t.Fatalf("Kill(n1): %v", err)
	}
	if c.Running("n1") || alive(pid1) {
		t.Fatalf("n1 runs after Kill")
	}
	hold(t, c.Node("n2"), "r2", "A2") // two of three still serve
	if err := c.Restart(ctx, "n1"); err != nil {
		t.Fatalf("Restart(n1): %v", err)
	}
	if !c.Running("n1") || c.Node("n1").PID() == pid1 {
		t.Fatalf("n1 not running as a new process after Restart")
	}
	if err := c.Restart(ctx, "n1"); err == nil {
		t.Fatalf("Restart(n1) of a running node succeeded")
	}

	if err := c.Pause("n2"); err != nil || !c.Paused("n2") {
		t.Fatalf("Pause(n2) = %v, paused %v", err, c.Paused("n2"))
	}
	if err := c.Resume("n2"); err != nil || c.Paused("n2") {
		t.Fatalf("Resume(n2) = %v, paused %v", err, c.Paused("n2"))
	}
	if err := c.Stop("n3"); err != nil || c.Running("n3") {
		t.Fatalf("Stop(n3) = %v, running %v", err, c.Running("n3"))
	}
	if err := c.Restart(ctx, "n3"); err != nil {
		t.Fatalf("Restart(n3): %v", err)
	}
	if err := c.WaitReady(ctx); err != nil {
		t.Fatalf("WaitReady after restarts: %v", err)
	}
	hold(t, c.Node("n3"), "r3", "A3")

	// Close must resume a paused node to stop it, and cope with a killed one.
	pids := []int{c.Node("n1").PID(), c.Node("n2").PID(), c.Node("n3").PID()}
	if err := c.Pause("n2"); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill("n3"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for i, pid := range pids {
		if alive(pid) {
			t.Errorf("n%d (pid %d) alive after Close", i+1, pid)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		t.Errorf("%d goroutines after Close, %d before Start", n, goroutines)
	}
}

func TestStartFailureCleansUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir()
	_, err := Start(ctx, Config{Binary: seatd, Nodes: 3, Dir: dir, Args: []string{"--no-such-flag"}})
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Fatalf("Start with a bad flag = %v, want an exit error", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "n1.log")); serr != nil {
		t.Fatalf("no log for n1: %v", serr)
	}
}

func TestValidate(t *testing.T) {
	for _, cfg := range []Config{
		{Nodes: 3, Dir: "d"},
		{Binary: "b", Nodes: 4, Dir: "d"},
		{Binary: "b", Nodes: 3},
		{Binary: "b", Nodes: 3, Dir: "d", Groups: -1},
	} {
		if err := cfg.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", cfg)
		}
	}
	if err := (&Config{Binary: "b", Nodes: 5, Dir: "d"}).Validate(); err != nil {
		t.Errorf("Validate(5 nodes) = %v", err)
	}
	var c Cluster
	if err := c.Kill("n9"); err == nil {
		t.Errorf("Kill(unknown) = %v, want an error", err)
	}
}

func TestAddNodeJoins(t *testing.T) {
	c := &Cluster{cfg: Config{Dir: t.TempDir()}, tokenPath: "tok", peers: "n1=a/b"}
	if _, err := c.AddNode("n4"); err == nil {
		t.Fatalf("AddNode with no running node = nil error, want one")
	}
	seed := &Node{ID: "n1", GRPCAddr: "127.0.0.1:1"}
	seed.mu.done = make(chan struct{}) // running
	c.nodes = []*Node{seed}
	n, err := c.AddNode("n4")
	if err != nil {
		t.Fatal(err)
	}
	args := strings.Join(c.args(n), " ")
	if !strings.Contains(args, "--join 127.0.0.1:1") || strings.Contains(args, "--peers") {
		t.Fatalf("added node's args = %q, want --join through n1 and no --peers", args)
	}
	if !strings.Contains(strings.Join(c.args(seed), " "), "--peers n1=a/b") {
		t.Fatalf("seed node's args lack --peers")
	}
	if _, err := c.AddNode("n4"); err == nil {
		t.Fatalf("AddNode(n4) twice = nil error, want one")
	}
}
