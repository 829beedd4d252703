package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ProcStatus is what Linux's /proc/PID/status says of a process: its name and its memory, in
// bytes: the peak resident set (VmHWM), and the resident set's anonymous part (heap and stacks)
// and its part read from files (the binary's pages).
type ProcStatus struct {
	Name                    string
	VmHWM, RssAnon, RssFile int64
}

// ReadProcStatus reads process pid's /proc status; false when it cannot be read (the process is
// gone).
func ReadProcStatus(pid int) (ProcStatus, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ProcStatus{}, false
	}
	var s ProcStatus
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "Name":
			s.Name = v
		case "VmHWM":
			s.VmHWM = kiB(v)
		case "RssAnon":
			s.RssAnon = kiB(v)
		case "RssFile":
			s.RssFile = kiB(v)
		}
	}
	return s, true
}

// kiB is a status size ("1234 kB") in bytes.
func kiB(v string) int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(v, "kB")), 10, 64)
	return n << 10
}
