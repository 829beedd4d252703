package testenv

import (
	"os"
	"testing"
)

// TestReadProcStatus: the test's own process has a name and memory, and a process that is gone
// has no status.
func TestReadProcStatus(t *testing.T) {
	s, ok := ReadProcStatus(os.Getpid())
	if !ok || s.Name == "" || s.VmHWM <= 0 || s.RssAnon <= 0 || s.RssFile <= 0 || s.VmHWM < s.RssAnon {
		t.Fatalf("own status %+v, %v: want a name and sizes, the peak at least the anonymous part", s, ok)
	}
	if _, ok := ReadProcStatus(-1); ok {
		t.Fatal("a status for pid -1")
	}
}
