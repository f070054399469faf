// This file proves that `seatd dev`, the real binary, serves again when it
// is restarted on its data directory, as the README promises: a hold made
// before a Ctrl-C (SIGINT) is still held after the restart and can be
// confirmed, a new hold is taken, and the restart reuses the addresses the
// cluster registered at its first start while its public ports (--http,
// --grpc) are new. It also proves that a restart whose saved port is taken
// stops at once with an error naming the port, not after a long wait.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seatledger/seatledger/internal/proccluster"
)

const (
	// devStartMax bounds a dev cluster's start up to its banner.
	devStartMax = 60 * time.Second
	// devStopMax bounds its stop after SIGINT.
	devStopMax = 20 * time.Second
)

// devHTTPLine matches the banner line with the HTTP/JSON address.
var devHTTPLine = regexp.MustCompile(`HTTP/JSON\s+(http://\S+)`)

// devProc is a running `seatd dev`.
type devProc struct {
	cmd  *exec.Cmd
	base string // the HTTP/JSON API's base URL, from the banner
	mu   sync.Mutex
	out  bytes.Buffer // stdout and stderr
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

func (p *devProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *devProc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// startDev runs `seatd dev` on dataDir with fresh public ports and waits
// for its banner; the process is killed when the test ends if still
// running.
func startDev(t *testing.T, bin, dataDir string) *devProc {
	t.Helper()
	p := &devProc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, "dev", "--data-dir", dataDir, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0", "--groups", "2")
	p.cmd.Stderr = p
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(p, sc.Text())
			if m := devHTTPLine.FindStringSubmatch(sc.Text()); m != nil {
				base <- m[1]
			}
		}
		io.Copy(io.Discard, stdout)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("seatd dev output:\n%s", p.output())
		}
	})
	select {
	case p.base = <-base:
		return p
	case <-p.done:
		t.Fatalf("seatd dev exited before its banner: %v", p.err)
	case <-time.After(devStartMax):
		t.Fatalf("seatd dev printed no banner within %v", devStartMax)
	}
	return nil
}

// stop sends SIGINT, as Ctrl-C does, and waits for a clean exit.
func (p *devProc) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		if p.err != nil {
			t.Fatalf("seatd dev after SIGINT: %v, want exit 0", p.err)
		}
	case <-time.After(devStopMax):
		t.Fatalf("seatd dev still running %v after SIGINT", devStopMax)
	}
}

func TestDevRestartServesAgain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "seatd")
	if err := proccluster.Build(ctx, bin); err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "data")

	first := startDev(t, bin, dataDir)
	r := httpCall(t, "POST", first.base+"/v1/shows/demo/holds", `{"seat_ids":["A1","A2"],"client_id":"alice","request_id":"r1"}`)
	if r.code != 200 {
		t.Fatalf("Hold(A1, A2) = %d %s, want 200", r.code, r.raw)
	}
	holdID, token := r.body["hold_id"].(string), r.body["hold_token"].(string)
	layout, err := os.ReadFile(filepath.Join(dataDir, devLayoutFile))
	if err != nil {
		t.Fatalf("after the first start: %v", err)
	}
	first.stop(t)

	second := startDev(t, bin, dataDir)
	if second.base == first.base {
		t.Logf("the OS gave the restart the same HTTP port %s", second.base)
	}
	// With the hold's token, as the fan's page reads it: httpCall's bearer
	// is the test clusters' admin token, not this dev cluster's.
	r = httpCall(t, "GET", second.base+"/v1/shows/demo/holds/"+holdID+"?hold_token="+url.QueryEscape(token), "")
	if r.code != 200 || !strings.Contains(r.raw, "HOLD_STATE_HELD") {
		t.Fatalf("GetHold(%s) after restart = %d %s, want 200 and HOLD_STATE_HELD", holdID, r.code, r.raw)
	}
	r = httpCall(t, "POST", second.base+"/v1/shows/demo/holds/"+holdID+":confirm",
		fmt.Sprintf(`{"hold_token":%q,"payment_ref":"pay-1","client_id":"alice","request_id":"r2"}`, token))
	if r.code != 200 {
		t.Fatalf("Confirm(%s) after restart = %d %s, want 200", holdID, r.code, r.raw)
	}
	r = httpCall(t, "POST", second.base+"/v1/shows/demo/holds", `{"seat_ids":["A2","A3"],"client_id":"bob","request_id":"r1"}`)
	if r.code != 409 {
		t.Fatalf("Hold(A2, A3) over alice's booking = %d %s, want 409", r.code, r.raw)
	}
	r = httpCall(t, "POST", second.base+"/v1/shows/demo/holds", `{"seat_ids":["A3"],"client_id":"bob","request_id":"r2"}`)
	if r.code != 200 {
		t.Fatalf("Hold(A3) after restart = %d %s, want 200", r.code, r.raw)
	}
	if out := second.output(); strings.Contains(out, "registry entry is not right") {
		t.Errorf("the restarted nodes disagree with the registry:\n%s", out)
	}
	again, err := os.ReadFile(filepath.Join(dataDir, devLayoutFile))
	if err != nil || !bytes.Equal(again, layout) {
		t.Errorf("%s after restart = %q, %v; want it unchanged: %q", devLayoutFile, again, err, layout)
	}
	second.stop(t)

	// A saved port someone else holds: a clear error at once.
	var l devLayout
	if err := json.Unmarshal(layout, &l); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", l.Nodes[1].Raft)
	if err != nil {
		t.Fatalf("bind n2's raft address to take it: %v", err)
	}
	defer ln.Close()
	out, err := exec.CommandContext(ctx, bin, "dev", "--data-dir", dataDir, "--http", "127.0.0.1:0", "--grpc", "127.0.0.1:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), l.Nodes[1].Raft) || !strings.Contains(string(out), "n2") {
		t.Fatalf("seatd dev with n2's raft port taken = %v:\n%s\nwant an error naming n2 and %s", err, out, l.Nodes[1].Raft)
	}
}
