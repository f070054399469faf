package browsertest

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes the kernel kill cmd when the test process dies, so a
// crashed or killed test leaves no seatd holding ports.
func dieWithTest(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
