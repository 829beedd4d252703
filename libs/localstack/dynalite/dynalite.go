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
	o        Options
	p        *proc.Proc
}

// Tables creates tables on the DynamoDB endpoint it is given (http://127.0.0.1:PORT): a store's
// own table maker, such as dynamolease.Tables, dynamomap.Tables or dynamostore.Tables.
type Tables func(ctx context.Context, endpoint string) error

// Options are how Start runs dynalite.
type Options struct {
	Port   int    // 0: a free port
	Dir    string // its data folder; "": memory only
	Name   string // the process's name in messages; "": dynalite
	Log    string // a file for its output; "": kept in memory only (Tail)
	Tables []Tables
}

// Start starts dynalite and creates its Tables once it listens. The caller stops it (Stop or
// Kill). On a free port (Port 0) a port taken by another server meanwhile is retried on another.
func Start(ctx context.Context, o Options) (*Server, error) {
	d := &Server{Port: o.Port, Path: o.Dir, o: o}
	if o.Port != 0 {
		if err := d.start(); err != nil {
			return nil, err
		}
	} else {
		var err error
		for range 3 {
			if d.Port, err = proc.PickPort(); err != nil {
				return nil, err
			}
			if err = d.start(); err == nil {
				break
			}
		}
		if err != nil {
			return nil, err
		}
	}
	for _, create := range o.Tables {
		if err := create(ctx, d.Endpoint); err != nil {
			d.Kill()
			return nil, fmt.Errorf("dynalite: the tables on %s: %w", d.Endpoint, err)
		}
	}
	return d, nil
}

// New starts dynalite on port (0 for a free one), keeping its data in dir ("" for memory only):
// Start without tables.
func New(port int, dir string) (*Server, error) {
	return Start(context.Background(), Options{Port: port, Dir: dir})
}

// Start starts dynalite again on the same port and data folder (after Stop or Kill); the tables
// are not made again (a server in memory comes back empty).
func (d *Server) Start() error { return d.start() }

func (d *Server) start() error {
	root, err := proc.RepoRoot()
	if err != nil {
		return err
	}
	cli := filepath.Join(root, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return fmt.Errorf("dynalite: %s is missing: run `make setup` (npm ci) first", cli)
	}
	args := []string{filepath.Join(root, "libs", "localstack", "dynalite", "dynalite.js"), filepath.Dir(cli),
		"--port", fmt.Sprint(d.Port), "--host", "127.0.0.1", "--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"}
	if d.Path != "" {
		args = append(args, "--path", d.Path)
	}
	addr := fmt.Sprintf("127.0.0.1:%d", d.Port)
	name := d.o.Name
	if name == "" {
		name = "dynalite"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Healthy once this process says it listens: a port taken meanwhile by another server (the
	// port was free a moment ago) answers the address, but this process then fails to listen
	// and ends, which WaitHealthy reports.
	var p *proc.Proc
	listening := func(context.Context) error {
		if !strings.Contains(p.Tail(0), "Dynalite listening at") {
			return fmt.Errorf("%s on %s does not say it listens yet", name, addr)
		}
		return nil
	}
	p, err = proc.Start(ctx, proc.Spec{Bin: "node", Args: args, Name: name, Log: d.o.Log, HealthAddr: addr, Health: listening, Group: true, Grace: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("dynalite: start %s: %w", name, err)
	}
	if err := p.WaitHealthy(ctx); err != nil {
		_ = p.Kill()
		return fmt.Errorf("dynalite: %w\n%s", err, p.Tail(20))
	}
	d.Endpoint, d.p = "http://"+addr, p
	return nil
}

// Proc is the server's process (to signal it, wait for it, read its log).
func (d *Server) Proc() *proc.Proc { return d.p }

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
