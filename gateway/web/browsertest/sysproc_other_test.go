//go:build !linux

package browsertest

import "os/exec"

// dieWithTest does nothing where there is no parent-death signal; the
// test's cleanup still stops seatd.
func dieWithTest(*exec.Cmd) {}
