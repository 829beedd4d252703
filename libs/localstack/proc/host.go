package proc

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// RepoRoot returns the repository root: the nearest parent of the working folder holding
// package-lock.json and go.work.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if fileExists(filepath.Join(dir, "go.work")) && fileExists(filepath.Join(dir, "package-lock.json")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("proc: no repository root above the working directory")
		}
		dir = parent
	}
}

// PickPort returns a loopback TCP port that was free a moment ago.
func PickPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
