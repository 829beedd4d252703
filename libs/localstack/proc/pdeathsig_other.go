//go:build unix && !linux

package proc

import "syscall"

// sysProcAttr makes the child the leader of a process group of its own when group is set. Only
// Linux can kill a child when its parent dies (Pdeathsig): elsewhere a child the parent did not
// stop outlives it.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: group}
}
