//go:build !linux

package proccluster

import "syscall"

// sysProcAttr puts a node in its own process group; outside Linux there is
// no Pdeathsig, so a crashed parent may leave the node running.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
