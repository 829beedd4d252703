package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/idgen/idgen/libs/localstack/proc"
)

// ReadyTimeout is how long Start waits for each service's /healthz to answer 200.
const ReadyTimeout = 30 * time.Second

// Stack is a started local stack.
type Stack struct {
	Services     []Service // in start order
	Logs         string    // the folder of the processes' logs (NAME.log)
	ClientConfig string    // the callers' client configuration file (ClientConfigFile), written by WriteClientConfig
	bins         map[string]string
	procs        map[string]*proc.Proc
}

// StartOptions are how Start builds and starts a plan.
type StartOptions struct {
	// Bin, when set, is the folder the binaries are copied to and run from (make run's
	// .idgen/bin); "" runs them from proc.Build's cache.
	Bin string
	// Built, when set, is called after each binary is built, with the time it took.
	Built func(b Binary, i, n int, took time.Duration)
}

// StartError is a service that did not become ready: it exited first (Exited) or its health
// check did not pass within ReadyTimeout. Start has stopped the rest.
type StartError struct {
	Service Service
	Log     string // its log file
	Exited  bool
	Tail    string // the last 20 lines of its log
	Err     error
}

func (e *StartError) Error() string {
	if e.Exited {
		return fmt.Sprintf("localstack: %s exited before it became ready: %v", e.Service.Name, e.Err)
	}
	return fmt.Sprintf("localstack: %s did not become ready within %v (%s): %v", e.Service.Name, ReadyTimeout, e.Service.HealthURL(), e.Err)
}

func (e *StartError) Unwrap() error { return e.Err }

// Start resolves o (Plan), plans the topology module (PlanTopology) and writes the callers'
// client configuration from it (WriteClientConfig, with RegionAddrs of the plan), builds the
// binaries and starts the stack: each service once the services it Needs are healthy, then waits
// for every one's health in order. A topology plan that fails fails the start before anything
// runs. On an error it stops what it started. The processes die with the thread that started
// them (proc's Pdeathsig); Stop stops them gracefully.
func Start(ctx context.Context, o Options, so StartOptions) (*Stack, error) {
	services, err := Plan(o)
	if err != nil {
		return nil, err
	}
	root, err := o.root()
	if err != nil {
		return nil, err
	}
	// The callers' client config, before any caller starts: the generators' addresses are the
	// plan's.
	tp, err := PlanTopology(ctx, root, nil)
	if err != nil {
		return nil, fmt.Errorf("localstack: the topology module's plan: %w", err)
	}
	clientConfig := ClientConfigFile(o.State)
	if err := WriteClientConfig(clientConfig, tp, RegionAddrs(services)); err != nil {
		return nil, err
	}
	logs := o.Logs
	if logs == "" {
		logs = filepath.Join(o.State, "logs")
	}
	if err := os.MkdirAll(logs, 0o755); err != nil {
		return nil, err
	}
	s := &Stack{Services: services, Logs: logs, ClientConfig: clientConfig, procs: map[string]*proc.Proc{}}
	if err := s.build(ctx, root, so); err != nil {
		return nil, err
	}
	for _, svc := range services {
		for _, need := range svc.Needs {
			if err := s.waitReady(ctx, need); err != nil {
				return nil, err
			}
		}
		p, err := proc.Start(ctx, svc.Spec(s.bins[svc.Bin], root, logs))
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.procs[svc.Name] = p
	}
	for _, svc := range services {
		if err := s.waitReady(ctx, svc.Name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// build builds every Binary (into so.Bin when set).
func (s *Stack) build(ctx context.Context, root string, so StartOptions) error {
	bins, err := Build(ctx, root, so.Bin, Binaries, so.Built)
	if err != nil {
		return err
	}
	s.bins = bins
	return nil
}

// Build builds the programs bins of the repository at root (through proc's build cache) and
// returns each one's binary by name. With binDir set the binaries are copied there and run from
// there (make run's .idgen/bin); built, when set, is called after each one with the time it
// took. The stack builds Binaries; the game day builds some of them and programs of its own.
func Build(ctx context.Context, root, binDir string, bins []Binary, built func(b Binary, i, n int, took time.Duration)) (map[string]string, error) {
	if binDir != "" {
		if err := os.MkdirAll(binDir, 0o755); err != nil {
			return nil, err
		}
	}
	out := map[string]string{}
	for i, b := range bins {
		t0 := time.Now()
		paths, err := proc.BuildWith(ctx, proc.BuildOptions{Dir: root}, b.Pkg)
		if err != nil {
			return nil, err
		}
		path := paths[0]
		if binDir != "" {
			dst := filepath.Join(binDir, b.Name)
			if err := install(path, dst); err != nil {
				return nil, err
			}
			path = dst
		}
		out[b.Name] = path
		if built != nil {
			built(b, i+1, len(bins), time.Since(t0))
		}
	}
	return out, nil
}

// install puts a copy of the binary src at dst: a hard link when it can, else a copy, renamed
// into place so that a program running from dst keeps running.
func install(src, dst string) error {
	tmp := dst + ".new"
	_ = os.Remove(tmp)
	if err := os.Link(src, tmp); err != nil {
		in, err := os.Open(src)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, in); err != nil {
			out.Close()
			return err
		}
		if err := out.Close(); err != nil {
			return err
		}
	}
	return os.Rename(tmp, dst)
}

// waitReady waits up to ReadyTimeout for the named service's health; when it fails, it stops the
// stack and returns a *StartError.
func (s *Stack) waitReady(ctx context.Context, name string) error {
	p := s.procs[name]
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	err := p.WaitHealthy(ctx)
	if err == nil {
		return nil
	}
	e := &StartError{Service: s.Service(name), Log: p.LogFile(), Exited: p.Exited(), Tail: p.Tail(20), Err: err}
	s.Stop()
	return e
}

// Service returns the named service of the stack (the zero Service when there is none).
func (s *Stack) Service(name string) Service {
	for _, svc := range s.Services {
		if svc.Name == name {
			return svc
		}
	}
	return Service{}
}

// Proc returns the named service's process (nil when there is none).
func (s *Stack) Proc(name string) *proc.Proc { return s.procs[name] }

// Bin returns the path of the named Binary.
func (s *Stack) Bin(name string) string { return s.bins[name] }

// Generators returns the stack's generators, in order.
func (s *Stack) Generators() []Service {
	var out []Service
	for _, svc := range s.Services {
		if svc.Region != "" {
			out = append(out, svc)
		}
	}
	return out
}

// Stop sends every process SIGTERM at once (each generator stops issuing and releases its lease)
// and waits for them all, killing any still running after proc's grace time. It may be called
// more than once.
func (s *Stack) Stop() {
	var wg sync.WaitGroup
	for _, p := range s.procs {
		wg.Go(func() { _ = p.Stop() })
	}
	wg.Wait()
}

// Exit is a process of the stack that ended.
type Exit struct {
	Service Service
	Proc    *proc.Proc
	Err     error // what Wait returned
}

// Status is the exit status as a shell reports it: the process's own, or 128 plus the signal
// that ended it (137 for SIGKILL).
func (e Exit) Status() int {
	var ee *exec.ExitError
	if !errors.As(e.Err, &ee) {
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// Stopped reports whether the process ended as a stopped service does: exit status 0, or
// SIGINT or SIGTERM.
func (e Exit) Stopped() bool {
	st := e.Status()
	return st == 0 || st == 128+int(syscall.SIGINT) || st == 128+int(syscall.SIGTERM)
}

// Exited returns a channel that receives the first process of the stack to end.
func (s *Stack) Exited() <-chan Exit {
	ch := make(chan Exit, len(s.procs))
	for _, svc := range s.Services {
		p := s.procs[svc.Name]
		go func() { ch <- Exit{Service: svc, Proc: p, Err: p.Wait()} }()
	}
	return ch
}
