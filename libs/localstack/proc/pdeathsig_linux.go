package proc

import "syscall"

// sysProcAttr kills the child when the thread that started it ends (the parent dying), and makes it
// the leader of a process group of its own when group is set.
func sysProcAttr(group bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: group}
}
