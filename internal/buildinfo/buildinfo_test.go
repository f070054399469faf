// This file proves how a build is named: link-time values win, the
// toolchain's record fills what they leave out, and an unstamped build is
// "dev" at commit "unknown".
package buildinfo

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	rec := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.9.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		version, commit string
		bi              *debug.BuildInfo
		want            Info
	}{
		{"v1.2.3", "def456", rec, Info{Version: "v1.2.3", Commit: "def456", Modified: true, GoVersion: "go1.26.8"}},
		{"", "", rec, Info{Version: "v0.9.0", Commit: "abc123", Modified: true, GoVersion: "go1.26.8"}},
		{"", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, Info{Version: "dev", Commit: "unknown", GoVersion: "go1.26.8"}},
	}
	for _, tt := range tests {
		if got := resolve(tt.version, tt.commit, tt.bi); got != tt.want {
			t.Errorf("resolve(%q, %q) = %+v, want %+v", tt.version, tt.commit, got, tt.want)
		}
	}
	if got := resolve("", "", nil); got.Version != "dev" || got.Commit != "unknown" || got.GoVersion == "" {
		t.Errorf("resolve without a record = %+v, want dev, unknown and the running Go", got)
	}
}

func TestString(t *testing.T) {
	s := Info{Version: "v1.2.3", Commit: "abc", Modified: true, GoVersion: "go1.26.8"}.String()
	if !strings.HasPrefix(s, "v1.2.3 (commit abc, modified, go1.26.8 ") {
		t.Errorf("String() = %q", s)
	}
}
