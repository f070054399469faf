// This file proves that seatctl never prints the admin token it takes from
// SEATCTL_ADMIN_TOKEN: no command's --help shows it as a flag default,
// while the commands still present it.
package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

const testSecret = "s3cret-admin-token-from-env-0123"

func secretEnv(name string) string {
	if name == adminTokenEnv {
		return testSecret
	}
	return ""
}

func TestHelpNeverPrintsTheAdminToken(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, sub := range c.Commands() {
			walk(sub, append(append([]string(nil), path...), sub.Name()))
		}
	}
	walk(newRootCmd(&app{}, secretEnv), nil)
	for _, path := range paths {
		var out, errOut bytes.Buffer
		run(context.Background(), append(append([]string(nil), path...), "--help"), &out, &errOut, secretEnv)
		if strings.Contains(out.String()+errOut.String(), testSecret) {
			t.Errorf("seatctl %s --help prints the admin token of %s", strings.Join(path, " "), adminTokenEnv)
		}
	}
	if len(paths) < 10 {
		t.Errorf("walked %d commands, want all of seatctl's", len(paths))
	}
}

func TestAdminTokenFromEnvironmentStillUsed(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{nil, testSecret},
		{[]string{"--admin-token", "from-the-flag-0123456789"}, "from-the-flag-0123456789"},
	} {
		var out, errOut bytes.Buffer
		a := &app{out: &out, errOut: &errOut}
		root := newRootCmd(a, secretEnv)
		root.SetArgs(append(tt.args, "--endpoints", "127.0.0.1:1", "--timeout", "50ms", "status"))
		root.SetOut(&out)
		root.SetErr(&errOut)
		_ = root.ExecuteContext(context.Background()) // no node answers; the flags are parsed
		a.close()
		if a.token != tt.want {
			t.Errorf("seatctl %v: token %q, want %q", tt.args, a.token, tt.want)
		}
	}
}
