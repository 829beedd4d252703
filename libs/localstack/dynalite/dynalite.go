// Package dynalite runs dynalite, a DynamoDB-compatible server (node_modules/dynalite, installed
// by make setup), as a real process on a loopback port, for the local stack's tools (chaos, the
// game day) and, through libs/testenv, for the tests. dynalite.js, beside this file, runs it with
// TransactWriteItems added (dynalite has no transactions).
package dynalite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// Server is a running dynalite server.
type Server struct {
	Endpoint string // http://127.0.0.1:PORT
	Port     int
	Path     string // its data folder ("" for in-memory)
	p        *proc.Proc
}

// New starts dynalite on port (0 for a free one), keeping its data in dir ("" for memory only).
// The caller stops it (Stop or Kill).
func New(port int, dir string) (*Server, error) {
	if port != 0 {
		return start(port, dir)
	}
	// A free port can be taken by another server before dynalite listens on it: try another.
	var err error
	for range 3 {
		if port, err = proc.PickPort(); err != nil {
			return nil, err
		}
		var d *Server
		if d, err = start(port, dir); err == nil {
			return d, nil
		}
	}
	return nil, err
}

// Start starts dynalite again on the same port and data folder (after Stop or Kill).
func (d *Server) Start() error {
	nd, err := start(d.Port, d.Path)
	if err != nil {
		return err
	}
	d.p = nd.p
	return nil
}

func start(port int, dir string) (*Server, error) {
	root, err := proc.RepoRoot()
	if err != nil {
		return nil, err
	}
	cli := filepath.Join(root, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return nil, fmt.Errorf("dynalite: %s is missing: run `make setup` (npm ci) first", cli)
	}
	args := []string{filepath.Join(root, "libs", "localstack", "dynalite", "dynalite.js"), filepath.Dir(cli),
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
		return nil, fmt.Errorf("dynalite: start: %w", err)
	}
	if err := p.WaitHealthy(ctx); err != nil {
		_ = p.Kill()
		return nil, fmt.Errorf("dynalite: %w\n%s", err, p.Tail(20))
	}
	return &Server{Endpoint: "http://" + addr, Port: port, Path: dir, p: p}, nil
}

// Stop stops the server (SIGTERM, then SIGKILL) and waits for it.
func (d *Server) Stop() { _ = d.p.Stop() }

// Freeze stops the server with SIGSTOP: a store that stops answering. Connections are still
// accepted (by the kernel) and requests sent meanwhile wait, unanswered, until Thaw.
func (d *Server) Freeze() { _ = d.p.Signal(syscall.SIGSTOP) }

// Thaw resumes a frozen server (SIGCONT): it answers again, the requests it held first.
func (d *Server) Thaw() { _ = d.p.Signal(syscall.SIGCONT) }

// Kill stops the server with SIGKILL, as a crash would.
func (d *Server) Kill() { _ = d.p.Kill() }

// Tail returns the last n lines of the server's output (for a failure message).
func (d *Server) Tail(n int) string { return d.p.Tail(n) }
