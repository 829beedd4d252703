// Package testenv starts the real servers idgen's tests talk to (dynalite, a DynamoDB-compatible
// server, and redis-server) on free loopback ports, and stops them when the test ends. A server
// that cannot start fails the test: it is never skipped.
package testenv

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv/proc"
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
	port, err := PickPort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// PickPort returns a loopback TCP port that was free a moment ago, for tools that are not tests.
func PickPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Dynalite is a running dynalite server.
type Dynalite struct {
	Endpoint string // http://127.0.0.1:PORT
	Port     int
	Path     string // its data folder ("" for in-memory)
	p        *proc.Proc
}

// StartDynalite starts dynalite on a free port, keeping its data in dir ("" for memory only), and
// stops it at the end of the test.
func StartDynalite(t testing.TB, dir string) *Dynalite {
	t.Helper()
	d, err := NewDynalite(0, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// NewDynalite starts dynalite without a test, for tools: on port (0 for a free one), keeping its
// data in dir ("" for memory only). The caller stops it (Stop or Kill).
func NewDynalite(port int, dir string) (*Dynalite, error) {
	if port != 0 {
		return startDynalite(port, dir)
	}
	// A free port can be taken by another test's server before dynalite listens on it: try
	// another.
	var err error
	for range 3 {
		if port, err = PickPort(); err != nil {
			return nil, err
		}
		var d *Dynalite
		if d, err = startDynalite(port, dir); err == nil {
			return d, nil
		}
	}
	return nil, err
}

// RestartDynalite starts dynalite again on the same port and data folder (after Stop or Kill).
func (d *Dynalite) Restart(t testing.TB) {
	t.Helper()
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
}

// Start starts dynalite again on the same port and data folder (after Stop or Kill), for tools.
func (d *Dynalite) Start() error {
	nd, err := startDynalite(d.Port, d.Path)
	if err != nil {
		return err
	}
	d.p = nd.p
	return nil
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
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Healthy once this process says it listens: a port taken meanwhile by another server (the
	// port was free a moment ago) answers the address, but this process then fails to listen
	// and ends, which WaitHealthy reports.
	var p *proc.Proc
	listening := func(context.Context) error {
		if !strings.Contains(p.Tail(0), "Dynalite listening at") {
			return fmt.Errorf("dynalite on %s does not say it listens yet", addr)
		}
		return nil
	}
	p, err = proc.Start(ctx, proc.Spec{Bin: "node", Args: args, Name: "dynalite", HealthAddr: addr, Health: listening, Group: true, Grace: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("testenv: start dynalite: %w", err)
	}
	if err := p.WaitHealthy(ctx); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("testenv: %w\n%s", err, p.Tail(20))
	}
	return &Dynalite{Endpoint: "http://" + addr, Port: port, Path: dir, p: p}, nil
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it.
func (d *Dynalite) Stop() { _ = d.p.Stop() }

// Freeze stops the server with SIGSTOP: a store that stops answering. Connections are still
// accepted (by the kernel) and requests sent meanwhile wait, unanswered, until Thaw.
func (d *Dynalite) Freeze() { _ = d.p.Signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT): it answers again, the requests it held first.
func (d *Dynalite) Thaw() { _ = d.p.Signal(syscall.SIGCONT) }

// Kill stops the server with SIGKILL, as a crash would.
func (d *Dynalite) Kill() { _ = d.p.Kill() }
