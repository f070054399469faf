// This file proves that every seatd and seatctl command line the README and
// docs/ show in their code blocks parses: the command (and for seatctl each
// subcommand) exists and every flag is one that command accepts, with a
// value where it takes one. The flag sets are read from the binaries built
// from this module (`seatd CMD -h`, `seatctl PATH --help`), so a renamed or
// removed flag fails here, not in a reader's terminal. TestCheckLine proves
// the checker catches a misspelled flag and an unknown command.
package doccheck

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// docLine is one command line of a code block, continuation lines joined.
type docLine struct {
	where string // file:line
	text  string
	vars  map[string]string // shell variables assigned earlier in the file
}

// assignment matches a shell variable assignment line: P='...' or S=word.
var assignment = regexp.MustCompile(`^([A-Z][A-Z0-9_]*)=('([^']*)'|"([^"]*)"|(\S*))\s*$`)

// codeLines returns the lines of path's fenced code blocks.
func codeLines(t *testing.T, path string) []docLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []docLine
	vars := map[string]string{}
	inside, pending, start := false, "", 0
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			inside, pending = !inside, ""
			continue
		}
		if !inside {
			continue
		}
		if pending == "" {
			start = n
		}
		if s, ok := strings.CutSuffix(l, `\`); ok {
			pending += s + " "
			continue
		}
		l, pending = pending+l, ""
		if m := assignment.FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			vars[m[1]] = m[3] + m[4] + m[5]
			continue
		}
		lines = append(lines, docLine{where: fmt.Sprintf("%s:%d", path, start), text: l, vars: maps.Clone(vars)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

// words splits a shell line into words: quotes group, an unquoted # starts
// a comment, and |, ;, & and > end the command. $NAME of a known variable
// expands (split into words outside quotes); $(...) stays one opaque word.
func words(line string, vars map[string]string) []string {
	var out []string
	var cur strings.Builder
	inWord, quote := false, byte(0)
	flush := func() {
		if inWord {
			out = append(out, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case c == ' ' || c == '\t':
			flush()
		case c == '#' && !inWord:
			flush()
			return out
		case c == '|' || c == ';' || c == '&' || c == '>':
			flush()
			return out
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			depth, j := 0, i+1
			for ; j < len(line); j++ {
				if line[j] == '(' {
					depth++
				} else if line[j] == ')' {
					if depth--; depth == 0 {
						break
					}
				}
			}
			cur.WriteString("SUBST")
			inWord, i = true, j
		case c == '$':
			j := i + 1
			for j < len(line) && (line[j] == '_' || line[j] >= 'A' && line[j] <= 'Z' || line[j] >= '0' && line[j] <= '9') {
				j++
			}
			v, ok := vars[line[i+1:j]]
			if !ok {
				cur.WriteByte(c)
				inWord = true
				continue
			}
			flush()
			out = append(out, strings.Fields(v)...)
			i = j - 1
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	flush()
	return out
}

// command finds the seatd or seatctl command a line runs: its words after
// the program name, with the docs' notation for optional parts ([--flag])
// and elisions (...) taken out.
func command(line docLine) (tool string, args []string, ok bool) {
	w := words(line.text, line.vars)
	for len(w) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(w[0]) {
		w = w[1:] // VAR=value before the command
	}
	switch {
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/seatd":
		tool, w = "seatd", w[3:]
	case len(w) >= 3 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/seatctl":
		tool, w = "seatctl", w[3:]
	case len(w) > 0 && (filepath.Base(w[0]) == "seatd" || filepath.Base(w[0]) == "seatctl"):
		tool, w = filepath.Base(w[0]), w[1:]
	default:
		return "", nil, false
	}
	for _, a := range w {
		a = strings.Trim(a, "[]")
		if a != "" && a != "..." {
			args = append(args, a)
		}
	}
	return tool, args, true
}

// flagSet maps a command's flags (long and short names, without dashes) to
// whether each takes a value.
type flagSet map[string]bool

// spec is what a command accepts: its flags and its subcommands.
type spec struct {
	flags flagSet
	subs  []string
}

// binaries builds seatd and seatctl once per test binary.
var binaries = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "seatledger-doccheck-")
	if err != nil {
		return "", err
	}
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	if p, err := exec.LookPath("go"); err == nil {
		goTool = p
	}
	cmd := exec.Command(goTool, "build", "-o", dir+string(filepath.Separator), "./cmd/seatd", "./cmd/seatctl")
	cmd.Dir = filepath.Join("..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return dir, nil
})

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := binaries(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// helpOf runs a binary with args and returns its output; help exits 0.
func helpOf(t *testing.T, tool string, args ...string) string {
	t.Helper()
	dir, err := binaries()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(dir, tool), args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", tool, strings.Join(args, " "), err, out)
	}
	return string(out)
}

var (
	// goFlag is a line of the flag package's usage: "  -name type" or "  -name".
	goFlag = regexp.MustCompile(`^  -(\S+)( \S+)?$`)
	// seatdCommand is a command line of seatd's usage.
	seatdCommand = regexp.MustCompile(`^  seatd (\w+)`)
	// cobraFlag is a line of cobra's Flags sections: "  -o, --output string   ..."
	// or "      --dry-run   ...".
	cobraFlag = regexp.MustCompile(`^\s+(?:-(\w), )?--([\w-]+)( \w+)?(?:\s{2,}|$)`)
	// cobraCommand is a line of cobra's Available Commands section.
	cobraCommand = regexp.MustCompile(`^  (\S+)\s`)
)

// seatdSpecs reads seatd's commands and each one's flags.
func seatdSpecs(t *testing.T) map[string]spec {
	specs := map[string]spec{}
	for _, l := range strings.Split(helpOf(t, "seatd", "--help"), "\n") {
		m := seatdCommand.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		fs := flagSet{"h": false, "help": false}
		for _, fl := range strings.Split(helpOf(t, "seatd", m[1], "-h"), "\n") {
			if f := goFlag.FindStringSubmatch(fl); f != nil {
				fs[f[1]] = f[2] != ""
			}
		}
		specs[m[1]] = spec{flags: fs}
	}
	if len(specs) < 6 {
		t.Fatalf("seatd --help lists %d commands, want every one", len(specs))
	}
	return specs
}

// seatctlSpecs reads the spec of every seatctl command by its path ("" for
// the root, "group rebalance"), walking the tree by its help.
func seatctlSpecs(t *testing.T) map[string]spec {
	specs := map[string]spec{}
	var walk func(path []string)
	walk = func(path []string) {
		s := spec{flags: flagSet{}}
		section := ""
		for _, l := range strings.Split(helpOf(t, "seatctl", append(slices.Clone(path), "--help")...), "\n") {
			if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") {
				section = l
				continue
			}
			switch section {
			case "Available Commands:":
				if m := cobraCommand.FindStringSubmatch(l); m != nil && m[1] != "help" && m[1] != "completion" {
					s.subs = append(s.subs, m[1])
				}
			case "Flags:", "Global Flags:":
				if m := cobraFlag.FindStringSubmatch(l); m != nil {
					takes := m[3] != ""
					s.flags[m[2]] = takes
					if m[1] != "" {
						s.flags[m[1]] = takes
					}
				}
			}
		}
		specs[strings.Join(path, " ")] = s
		for _, sub := range s.subs {
			walk(append(slices.Clone(path), sub))
		}
	}
	walk(nil)
	if len(specs) < 20 || !specs[""].flags["endpoints"] {
		t.Fatalf("seatctl's help shows %d commands (root flags %v), want the whole tree", len(specs), specs[""].flags)
	}
	return specs
}

// checkFlags checks args against flags from index i on; it returns the
// index of the first positional argument at or after i (len(args) if none)
// and any problem.
func checkFlags(cmd string, args []string, i int, flags flagSet) (int, string) {
	for ; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			return i, ""
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takes, ok := flags[name]
		if !ok {
			return i, fmt.Sprintf("%s has no flag %s", cmd, a)
		}
		if takes && !hasValue {
			if i+1 >= len(args) {
				return i, fmt.Sprintf("%s: %s needs a value", cmd, a)
			}
			i++
		}
	}
	return i, ""
}

// checkSeatd checks the words after `seatd`.
func checkSeatd(args []string, specs map[string]spec) string {
	if len(args) == 0 {
		return ""
	}
	s, ok := specs[args[0]]
	if !ok {
		return fmt.Sprintf("seatd has no command %q", args[0])
	}
	// seatd's commands take their positional arguments (certgen DIR,
	// keygen FILE) before or after the flags: check every flag.
	for i := 1; i < len(args); i++ {
		j, problem := checkFlags("seatd "+args[0], args, i, s.flags)
		if problem != "" {
			return problem
		}
		i = j
	}
	return ""
}

// checkSeatctl checks the words after `seatctl`: flags of the command
// reached so far, subcommands while the command has them, then positional
// arguments and flags of the leaf.
func checkSeatctl(args []string, specs map[string]spec) string {
	var path []string
	for i := 0; i < len(args); i++ {
		s := specs[strings.Join(path, " ")]
		name := strings.Join(append([]string{"seatctl"}, path...), " ")
		j, problem := checkFlags(name, args, i, s.flags)
		if problem != "" {
			return problem
		}
		if i = j; i >= len(args) {
			break
		}
		if len(s.subs) > 0 {
			if !slices.Contains(s.subs, args[i]) {
				return fmt.Sprintf("%s has no command %q (it has %s)", name, args[i], strings.Join(s.subs, ", "))
			}
			path = append(path, args[i])
		}
	}
	return ""
}

// docFiles are the documents whose code blocks are checked.
func docFiles(t *testing.T) []string {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join("..", "..", "README.md")}, files...)
}

func TestDocCommandLinesParse(t *testing.T) {
	seatd, seatctl := seatdSpecs(t), seatctlSpecs(t)
	count := map[string]int{}
	for _, path := range docFiles(t) {
		for _, l := range codeLines(t, path) {
			tool, args, ok := command(l)
			if !ok {
				continue
			}
			count[tool]++
			problem := checkSeatctl(args, seatctl)
			if tool == "seatd" {
				problem = checkSeatd(args, seatd)
			}
			if problem != "" {
				t.Errorf("%s: %s\n\t%s", l.where, problem, strings.TrimSpace(l.text))
			}
		}
	}
	// Guard the extraction itself: the docs show dozens of each.
	if count["seatd"] < 15 || count["seatctl"] < 30 {
		t.Errorf("found %d seatd and %d seatctl command lines, want the docs' dozens", count["seatd"], count["seatctl"])
	}
	t.Logf("checked %d seatd and %d seatctl command lines", count["seatd"], count["seatctl"])
}

func TestCheckLine(t *testing.T) {
	seatd := map[string]spec{"serve": {flags: flagSet{"id": true, "log-json": false, "h": false}}, "keygen": {flags: flagSet{"h": false}}}
	seatctl := map[string]spec{
		"":                {flags: flagSet{"endpoints": true, "o": true, "output": true}, subs: []string{"group", "status"}},
		"status":          {flags: flagSet{"endpoints": true, "o": true, "output": true}},
		"group":           {flags: flagSet{"endpoints": true}, subs: []string{"rebalance"}},
		"group rebalance": {flags: flagSet{"endpoints": true, "dry-run": false}},
	}
	vars := map[string]string{"S": "--id n1 --log-json"}
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{".bin/seatd serve --id n1 --log-json &", true},
		{"seatd serve $S   # a comment --bogus", true},
		{"seatd serve --id=n1", true},
		{"seatd keygen ticket.key", true},
		{"seatd serve --idd n1", false},
		{"seatd serve --id", false},
		{"seatd serv --id n1", false},
		{"seatd keygen -o x", false},
		{"seatctl --endpoints a:1 -o json status", true},
		{"seatctl group rebalance [--dry-run]", true},
		{"seatctl group rebalance --dryrun", false},
		{"seatctl grop rebalance", false},
		{"seatctl status --output", false},
		{"go run ./cmd/seatd serve --id n1", true},
		{"go run ./cmd/seatd serve --ide n1", false},
	} {
		tool, args, ok := command(docLine{text: tc.line, vars: vars})
		if !ok {
			t.Errorf("%q: no command found", tc.line)
			continue
		}
		problem := checkSeatctl(args, seatctl)
		if tool == "seatd" {
			problem = checkSeatd(args, seatd)
		}
		if (problem == "") != tc.ok {
			t.Errorf("%q: problem %q, want ok %v", tc.line, problem, tc.ok)
		}
	}
	for _, line := range []string{"curl -s localhost:8080/v1/cities", "# seatctl status", "seatledger dev cluster: 3 nodes"} {
		if _, _, ok := command(docLine{text: line}); ok {
			t.Errorf("%q: found a command, want none", line)
		}
	}
}
