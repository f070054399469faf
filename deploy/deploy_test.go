// Package deploy holds the files that deploy seatd (a Dockerfile, Kubernetes
// manifests, a systemd unit, Prometheus rules, a Grafana dashboard) and the
// tests that keep them true to the seatd they deploy.
//
// This file proves the Dockerfile builds what it promises: its go build,
// run here exactly as written with the module proxy off (so it needs only
// the repository, the module cache and the Go toolchain), gives a static
// seatd (no ELF interpreter, no shared libraries) and the seatctl it copies;
// the image runs as a non-root user with the data directory as a volume and
// seatd as its entrypoint. The binary built here is also the one whose
// `serve -h` every other deployment file's flags are checked against
// (serveFlags).
package deploy

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// dockerfile is one parsed Dockerfile: its instructions by stage.
type dockerfile struct {
	stages []stage
}

// stage is the instructions from one FROM to the next.
type stage struct {
	from, name string
	// instr are the stage's instructions after FROM: keyword (upper
	// case) and the rest of the line, continuations joined.
	instr []instruction
}

type instruction struct{ cmd, args string }

// all returns the arguments of every instruction cmd of the stage.
func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.instr {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// parseDockerfile reads instructions: comments and blank lines dropped,
// lines ending in a backslash joined with the next.
func parseDockerfile(b []byte) (dockerfile, error) {
	var df dockerfile
	var buf strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			buf.WriteString(cont + " ")
			continue
		}
		buf.WriteString(line)
		full := buf.String()
		buf.Reset()
		cmd, args, _ := strings.Cut(full, " ")
		cmd, args = strings.ToUpper(cmd), strings.TrimSpace(args)
		if cmd == "FROM" {
			from, name, _ := strings.Cut(args, " AS ")
			df.stages = append(df.stages, stage{from: strings.TrimSpace(from), name: strings.TrimSpace(name)})
			continue
		}
		if len(df.stages) == 0 {
			if cmd == "ARG" {
				continue // an ARG before the first FROM
			}
			return df, fmt.Errorf("%s before the first FROM", cmd)
		}
		s := &df.stages[len(df.stages)-1]
		s.instr = append(s.instr, instruction{cmd, args})
	}
	if buf.Len() > 0 {
		return df, fmt.Errorf("the last line ends in a backslash")
	}
	return df, sc.Err()
}

// argDefaults returns the defaults of the ARG instructions of s.
func argDefaults(s stage) map[string]string {
	out := map[string]string{}
	for _, a := range s.all("ARG") {
		for _, kv := range strings.Fields(a) {
			k, v, _ := strings.Cut(kv, "=")
			out[k] = v
		}
	}
	return out
}

// shellWords splits a shell command line into words: whitespace outside
// quotes separates, double and single quotes group. Enough for the
// Dockerfile's RUN line; ${VAR} is replaced by vars[VAR].
func shellWords(s string, vars map[string]string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	for i := range words {
		words[i] = os.Expand(words[i], func(k string) string { return vars[k] })
	}
	return words
}

// goBuildArgs finds the stage's `go build` command in its RUN lines and
// returns its arguments (after "build"), up to the next && or ;.
func goBuildArgs(s stage) ([]string, bool) {
	for _, run := range s.all("RUN") {
		words := shellWords(run, argDefaults(s))
		for i := 0; i+1 < len(words); i++ {
			if words[i] != "go" || words[i+1] != "build" {
				continue
			}
			rest := words[i+2:]
			if end := slices.IndexFunc(rest, func(w string) bool { return w == "&&" || w == ";" }); end >= 0 {
				rest = rest[:end]
			}
			return rest, true
		}
	}
	return nil, false
}

// stageEnv returns the KEY=VALUE pairs of the stage's ENV instructions.
func stageEnv(s stage) []string {
	var out []string
	for _, e := range s.all("ENV") {
		out = append(out, strings.Fields(e)...)
	}
	return out
}

// The binaries built as the Dockerfile builds them, once per test run.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// buildImageBinaries runs the Dockerfile's go build (its arguments and ENV,
// its ARG defaults) in the repository with the module proxy off, into a
// temporary directory instead of /out/usr/local/bin/, and returns that
// directory.
func buildImageBinaries(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		df := mustDockerfile(t)
		build := df.stages[0]
		args, ok := goBuildArgs(build)
		if !ok {
			built.err = fmt.Errorf("the first stage of deploy/Dockerfile has no go build")
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "seatledger-deploy-"); built.err != nil {
			return
		}
		if i := slices.Index(args, "-o"); i >= 0 && i+1 < len(args) {
			args[i+1] = built.dir + string(filepath.Separator)
		} else {
			built.err = fmt.Errorf("deploy/Dockerfile: go build %v has no -o", args)
			return
		}
		cmd := exec.Command(goTool(), append([]string{"build"}, args...)...)
		cmd.Dir = ".."
		cmd.Env = append(append(os.Environ(), stageEnv(build)...), "GOPROXY=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build %s (as deploy/Dockerfile, offline): %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// goTool is the go command on PATH, else the running toolchain's.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

func mustDockerfile(t *testing.T) dockerfile {
	t.Helper()
	b, err := os.ReadFile("Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	df, err := parseDockerfile(b)
	if err != nil {
		t.Fatalf("deploy/Dockerfile: %v", err)
	}
	if len(df.stages) < 2 {
		t.Fatalf("deploy/Dockerfile has %d stages, want a build stage and a runtime stage", len(df.stages))
	}
	return df
}

// imageDataDir is the data directory the image declares as its volume.
const imageDataDir = "/var/lib/seatd"

// imageSeatd is where the image keeps seatd.
const imageSeatd = "/usr/local/bin/seatd"

func TestDockerfileImage(t *testing.T) {
	df := mustDockerfile(t)
	final := df.stages[len(df.stages)-1]
	if final.from != "scratch" && !strings.Contains(final.from, "distroless/static") {
		t.Errorf("runtime stage FROM %s, want scratch or distroless/static: a static binary needs no libc", final.from)
	}
	if !slices.Contains(stageEnv(df.stages[0]), "CGO_ENABLED=0") {
		t.Errorf("build stage ENV %v, want CGO_ENABLED=0 (a static binary)", stageEnv(df.stages[0]))
	}
	users := final.all("USER")
	if len(users) == 0 {
		t.Errorf("runtime stage has no USER: the container would run as root")
	}
	for _, u := range users {
		if name, _, _ := strings.Cut(u, ":"); name == "0" || name == "root" {
			t.Errorf("USER %s, want a non-root user", u)
		}
	}
	if v := final.all("VOLUME"); !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, `"`+imageDataDir+`"`) }) {
		t.Errorf("VOLUME %v, want %s (the data directory) as a volume", v, imageDataDir)
	}
	if e := final.all("ENTRYPOINT"); !slices.Equal(e, []string{`["` + imageSeatd + `"]`}) {
		t.Errorf("ENTRYPOINT %v, want [%q] in exec form (seatd gets SIGTERM itself)", e, imageSeatd)
	}
}

func TestDockerfileBuildsStaticBinaries(t *testing.T) {
	dir := buildImageBinaries(t)
	for _, name := range []string{"seatd", "seatctl"} {
		f, err := elf.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%s from the Dockerfile's go build: %v", name, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has an ELF interpreter: it is dynamically linked and would not run FROM scratch", name)
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("%s needs shared libraries %v, want none", name, libs)
		}
		f.Close()
	}
	out, err := exec.Command(filepath.Join(dir, "seatd"), "version").CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), "seatd dev") {
		t.Errorf("seatd version = %q, %v; want the ARG VERSION default (dev) stamped by -ldflags", out, err)
	}
}
