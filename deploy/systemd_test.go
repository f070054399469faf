// This file proves the systemd unit deploy/systemd/seatd.service starts
// seatd right: it parses (sections, keys, continued lines), ExecStart runs
// seatd serve with flags the real binary accepts, as a non-root user, with
// --data-dir the unit's StateDirectory, and stops it with SIGTERM. Where
// systemd-analyze is installed, `systemd-analyze verify` accepts the unit too.
package deploy

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const unitFile = "systemd/seatd.service"

// unit is a parsed systemd unit: section -> key -> values (a key may repeat).
type unit map[string]map[string][]string

// parseUnit reads a unit file: [Section] headers, Key=Value lines, comments
// (# or ;) and lines continued with a trailing backslash.
func parseUnit(b []byte) (unit, error) {
	u := unit{}
	section := ""
	var cont strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if cont.Len() == 0 && (line == "" || line[0] == '#' || line[0] == ';') {
			continue
		}
		if rest, ok := strings.CutSuffix(line, `\`); ok {
			cont.WriteString(rest + " ")
			continue
		}
		cont.WriteString(line)
		line = cont.String()
		cont.Reset()
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok || section == "" {
			return nil, fmt.Errorf("line %d: %q is neither [Section] nor Key=Value in a section", n, line)
		}
		key = strings.TrimSpace(key)
		u[section][key] = append(u[section][key], strings.TrimSpace(value))
	}
	return u, sc.Err()
}

// one returns the single value of section.key, or "".
func (u unit) one(section, key string) string {
	if v := u[section][key]; len(v) == 1 {
		return v[0]
	}
	return ""
}

func TestSystemdUnit(t *testing.T) {
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	u, err := parseUnit(b)
	if err != nil {
		t.Fatalf("%s: %v", unitFile, err)
	}
	for _, s := range []string{"Unit", "Service", "Install"} {
		if u[s] == nil {
			t.Errorf("%s has no [%s] section", unitFile, s)
		}
	}
	// systemd splits ExecStart on whitespace; ${VAR} stays one word.
	argv := strings.Fields(u.one("Service", "ExecStart"))
	if len(argv) < 2 || strings.TrimLeft(argv[0], "-@+!:") != imageSeatd {
		t.Fatalf("%s: ExecStart %q, want %s serve ...", unitFile, argv, imageSeatd)
	}
	given := mustServe(t, unitFile, serveArgs(t, unitFile, argv[1:]), serveFlags(t))
	if user := u.one("Service", "User"); user == "" || user == "root" || user == "0" {
		t.Errorf("%s: User=%q, want a non-root user", unitFile, user)
	}
	if sd := u.one("Service", "StateDirectory"); given["data-dir"] != "/var/lib/"+sd {
		t.Errorf("%s: --data-dir %s, want the StateDirectory /var/lib/%s (systemd makes it, owned by User=)", unitFile, given["data-dir"], sd)
	}
	if ks := u.one("Service", "KillSignal"); ks != "" && ks != "SIGTERM" {
		t.Errorf("%s: KillSignal=%s, want SIGTERM: seatd shuts down gracefully on it", unitFile, ks)
	}
	verifyUnit(t, b)
}

// verifyUnit runs `systemd-analyze verify` on the unit with ExecStart
// pointing at the seatd built by the tests (it checks the file exists).
func verifyUnit(t *testing.T, b []byte) {
	t.Helper()
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Log("systemd-analyze not installed: the unit is parsed here only")
		return
	}
	dir := t.TempDir()
	seatd := filepath.Join(buildImageBinaries(t), "seatd")
	path := filepath.Join(dir, "seatd.service")
	if err := os.WriteFile(path, bytes.ReplaceAll(b, []byte(imageSeatd), []byte(seatd)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", path).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify %s: %v\n%s", unitFile, err, out)
	}
}
