package proccluster

import "syscall"

// sysProcAttr puts a node in its own process group (so a signal reaches all
// of it and a test timeout can kill the group) and asks the kernel to
// SIGKILL it when the thread that started it dies. Go never ends its threads
// unless a goroutine locked to one exits, which this package never does, so
// in practice that is when this process dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
