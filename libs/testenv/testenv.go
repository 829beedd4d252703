// Package testenv starts the real servers idgen's tests talk to (dynalite, a DynamoDB-compatible
// server, and redis-server) on free loopback ports, and stops them when the test ends. A server
// that cannot start fails the test: it is never skipped.
package testenv

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Root returns the repository root: the nearest parent holding package-lock.json and go.work.
func Root() (string, error) {
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
			return "", fmt.Errorf("testenv: no repository root above the working directory")
		}
		dir = parent
	}
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Dynalite is a running dynalite server.
type Dynalite struct {
	Endpoint string // http://127.0.0.1:PORT
	Port     int
	Path     string // its data folder ("" for in-memory)
	cmd      *exec.Cmd
}

// StartDynalite starts dynalite on a free port, keeping its data in dir ("" for memory only), and
// stops it at the end of the test.
func StartDynalite(t testing.TB, dir string) *Dynalite {
	t.Helper()
	d, err := startDynalite(FreePort(t), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// RestartDynalite starts dynalite again on the same port and data folder (after Stop or Kill).
func (d *Dynalite) Restart(t testing.TB) {
	t.Helper()
	nd, err := startDynalite(d.Port, d.Path)
	if err != nil {
		t.Fatal(err)
	}
	d.cmd = nd.cmd
}

func startDynalite(port int, dir string) (*Dynalite, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(root, "node_modules", "dynalite", "cli.js")
	if !fileExists(cli) {
		return nil, fmt.Errorf("testenv: %s is missing: run `make setup` (npm ci) first", cli)
	}
	// dynalite.js runs dynalite with TransactWriteItems added (dynalite has no transactions).
	args := []string{filepath.Join(root, "libs", "testenv", "dynalite.js"), filepath.Dir(cli),
		"--port", fmt.Sprint(port), "--host", "127.0.0.1", "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
	if dir != "" {
		args = append(args, "--path", dir)
	}
	cmd := exec.Command("node", args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: start dynalite: %w", err)
	}
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "listening") {
				ready <- nil
				break
			}
		}
		for sc.Scan() {
		}
		ready <- fmt.Errorf("testenv: dynalite exited before it listened")
	}()
	select {
	case err := <-ready:
		if err != nil {
			_ = cmd.Process.Kill()
			return nil, err
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("testenv: dynalite did not listen within 30 s")
	}
	return &Dynalite{Endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), Port: port, Path: dir, cmd: cmd}, nil
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it.
func (d *Dynalite) Stop() { stop(d.cmd) }

// Freeze stops the server with SIGSTOP: a store that stops answering. Connections are still
// accepted (by the kernel) and requests sent meanwhile wait, unanswered, until Thaw.
func (d *Dynalite) Freeze() { d.signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT): it answers again, the requests it held first.
func (d *Dynalite) Thaw() { d.signal(syscall.SIGCONT) }

func (d *Dynalite) signal(sig syscall.Signal) {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, sig)
	}
}

// Kill stops the server with SIGKILL, as a crash would.
func (d *Dynalite) Kill() {
	if d.cmd != nil && d.cmd.Process != nil {
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		_ = d.cmd.Wait()
		d.cmd = nil
	}
}

func stop(cmd *exec.Cmd) {
	if cmd == nil || cmd.Process == nil || cmd.ProcessState != nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
}

// WaitTCP waits until addr accepts TCP connections or ctx ends.
func WaitTCP(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("testenv: %s did not accept connections: %w", addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
