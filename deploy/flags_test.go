// This file reads the real `seatd serve` flag set from the binary the
// Dockerfile builds (its `serve -h`), and checks a deployment's command line
// against it: every flag exists, a flag that takes a value has one, nothing
// follows the flags (flag parsing would stop there and drop the rest
// silently), no test-only flag is used, and the flags a node cannot start
// without are there. TestServeFlagsRead proves the reading itself.
package deploy

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// flagSet maps each flag of `seatd serve` to whether it takes a value
// (false for a boolean flag).
type flagSet map[string]bool

// serveFlags runs `seatd serve -h` and parses the flag package's usage:
// "  -name type" for a flag with a value, "  -name" for a boolean.
func serveFlags(t *testing.T) flagSet {
	t.Helper()
	bin := filepath.Join(buildImageBinaries(t), "seatd")
	out, _ := exec.Command(bin, "serve", "-h").CombinedOutput() // the usage is on stdout
	flags := flagSet{}
	for _, line := range strings.Split(string(out), "\n") {
		rest, ok := strings.CutPrefix(line, "  -")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		flags[f[0]] = len(f) > 1
	}
	if len(flags) == 0 {
		t.Fatalf("seatd serve -h lists no flags:\n%s", out)
	}
	return flags
}

func TestServeFlagsRead(t *testing.T) {
	flags := serveFlags(t)
	for name, value := range map[string]bool{"id": true, "peers": true, "data-dir": true, "groups": true,
		"heartbeat-timeout": true, "cors-origin": true, "log-json": false, "peer-mtls": false} {
		if got, ok := flags[name]; !ok || got != value {
			t.Errorf("serve flag %s: listed %v, takes a value %v; want listed, takes a value %v", name, ok, got, value)
		}
	}
}

// testOnlyFlag reports flags that exist for the fault harness and tests
// only; a deployment must not use them.
func testOnlyFlag(name string) bool {
	return strings.HasPrefix(name, "unsafe-") || name == "dial" || name == "insecure-no-auth"
}

// serveRequired are the flags a node refuses to start without (besides one
// of --peers or --join).
var serveRequired = []string{"id", "raft", "grpc", "data-dir", "admin-token-file"}

// checkServe checks args, the words after `seatd serve`, against flags. It
// returns the flags given with their values (a boolean's is "true") and
// what is wrong, one sentence each.
func checkServe(args []string, flags flagSet) (given map[string]string, problems []string) {
	given = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			problems = append(problems, fmt.Sprintf("argument %q is not a flag: flag parsing stops there and ignores %q", a, args[i:]))
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, ok := flags[name]
		switch {
		case !ok:
			problems = append(problems, "seatd serve has no flag --"+name)
			continue
		case testOnlyFlag(name):
			problems = append(problems, "--"+name+" is for tests only, not for a deployment")
		}
		if takesValue && !hasValue {
			if i+1 >= len(args) {
				problems = append(problems, "--"+name+" needs a value")
				break
			}
			i++
			value = args[i]
		}
		if !takesValue && !hasValue {
			value = "true"
		}
		given[name] = value
	}
	for _, name := range serveRequired {
		if given[name] == "" {
			problems = append(problems, "without --"+name+" seatd serve refuses to start")
		}
	}
	if (given["peers"] == "") == (given["join"] == "") {
		problems = append(problems, "seatd serve needs one of --peers or --join")
	}
	return given, problems
}

// mustServe is checkServe reporting each problem as a test error.
func mustServe(t *testing.T, where string, args []string, flags flagSet) map[string]string {
	t.Helper()
	given, problems := checkServe(args, flags)
	for _, p := range problems {
		t.Errorf("%s: %s", where, p)
	}
	return given
}

func TestCheckServe(t *testing.T) {
	flags := flagSet{"id": true, "raft": true, "grpc": true, "data-dir": true, "admin-token-file": true,
		"peers": true, "join": true, "log-json": false, "unsafe-broken": true, "insecure-no-auth": false}
	ok := []string{"--id=n1", "--raft", "a:1", "--grpc", "a:2", "-data-dir", "/d", "--admin-token-file=/t", "--peers", "p", "--log-json"}
	given, problems := checkServe(ok, flags)
	if len(problems) > 0 || given["raft"] != "a:1" || given["log-json"] != "true" || given["data-dir"] != "/d" {
		t.Fatalf("checkServe(%q) = %v, %q; want every flag read and no problem", ok, given, problems)
	}
	for _, tc := range []struct {
		extra []string
		want  string
	}{
		{[]string{"--nope", "x"}, "no flag --nope"},
		{[]string{"--unsafe-broken=x"}, "tests only"},
		{[]string{"--insecure-no-auth"}, "tests only"},
		{[]string{"stray", "--log-json"}, "not a flag"},
		{[]string{"--join", "j"}, "one of --peers or --join"},
		{[]string{"--id"}, "needs a value"},
	} {
		args := append(append([]string{}, ok...), tc.extra...)
		if _, problems := checkServe(args, flags); !strings.Contains(strings.Join(problems, "; "), tc.want) {
			t.Errorf("checkServe(... %q) problems %q, want one saying %q", tc.extra, problems, tc.want)
		}
	}
	if _, problems := checkServe([]string{"--id=n1"}, flags); !strings.Contains(strings.Join(problems, "; "), "without --raft") {
		t.Errorf("checkServe without --raft: problems %q, want it named", problems)
	}
}

// serveArgs returns the words after "serve" in a command line whose first
// word is seatd (or, for a container, the image's entrypoint).
func serveArgs(t *testing.T, where string, argv []string) []string {
	t.Helper()
	if len(argv) == 0 || argv[0] != "serve" {
		t.Fatalf("%s: runs seatd %q, want seatd serve ...", where, argv)
	}
	return argv[1:]
}
