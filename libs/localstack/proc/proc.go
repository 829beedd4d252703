package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Spec describes a process to start. Only Bin is required.
type Spec struct {
	// Bin is the program: a path (from Build) or a name looked up in PATH.
	Bin string
	// Args are its arguments, without the program's name.
	Args []string
	// Env holds NAME=value entries added to this process's environment (later ones win); nil
	// passes this process's environment as it is.
	Env []string
	// Dir is its working folder; "" is this process's.
	Dir string
	// Stdin is what it reads; nil reads nothing (the null device).
	Stdin io.Reader
	// Name names it in errors and logs; filepath.Base(Bin) by default.
	Name string

	// Log is the file its standard output and error go to, made or truncated; it can be read
	// while the child runs. Without Output the child writes to it directly, so it holds
	// everything even if this process dies. With neither Log nor Output the output is kept in
	// memory only, for Tail.
	Log string
	// Output, when set, receives its standard output and error (as well as Log, when both are).
	Output io.Writer

	// HealthURL makes WaitHealthy wait for an HTTP GET of it to answer 200.
	HealthURL string
	// HealthAddr makes WaitHealthy wait for a TCP connection to it (host:port) to be accepted.
	HealthAddr string
	// Health makes WaitHealthy wait for it to return nil; it is called with a context that ends
	// with WaitHealthy's. With several health checks set, all must pass.
	Health func(ctx context.Context) error
	// HealthTimeout is how long StartT waits for the health checks; 60 s by default.
	HealthTimeout time.Duration

	// Group makes the child the leader of a process group of its own, and Signal, Stop and Kill
	// signal the whole group: for programs that start children of their own (node, shells).
	Group bool
	// Grace is how long Stop waits after SIGTERM before it kills; 10 s by default.
	Grace time.Duration
}

// Proc is a started process. Its methods may be called from any goroutine.
type Proc struct {
	spec Spec
	cmd  *exec.Cmd
	tail *tailBuffer
	done chan struct{} // closed once the process is reaped; err is then set
	err  error
}

// Start starts the process spec describes and returns at once, without waiting for its health.
func Start(ctx context.Context, spec Spec) (*Proc, error) {
	if spec.Bin == "" {
		return nil, errors.New("proc: Spec.Bin is empty")
	}
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Bin)
	}
	if spec.Grace <= 0 {
		spec.Grace = 10 * time.Second
	}
	p := &Proc{spec: spec, tail: newTailBuffer(256 << 10), done: make(chan struct{})}
	// Not CommandContext: ctx bounds the start, and the process lives until stopped.
	p.cmd = exec.Command(spec.Bin, spec.Args...)
	p.cmd.Dir, p.cmd.Stdin = spec.Dir, spec.Stdin
	if spec.Env != nil {
		p.cmd.Env = append(os.Environ(), spec.Env...)
	}
	p.cmd.SysProcAttr = sysProcAttr(spec.Group)
	// Output through a pipe: Wait does not wait more than this for children the process left
	// holding it.
	p.cmd.WaitDelay = 2 * time.Second
	var logFile *os.File
	switch {
	case spec.Log != "" && spec.Output == nil:
		f, err := os.Create(spec.Log)
		if err != nil {
			return nil, fmt.Errorf("proc: %s log: %w", spec.Name, err)
		}
		logFile = f
		p.cmd.Stdout, p.cmd.Stderr = f, f
	case spec.Log != "":
		f, err := os.Create(spec.Log)
		if err != nil {
			return nil, fmt.Errorf("proc: %s log: %w", spec.Name, err)
		}
		logFile = f
		w := io.MultiWriter(f, spec.Output, p.tail)
		p.cmd.Stdout, p.cmd.Stderr = w, w
	case spec.Output != nil:
		w := io.MultiWriter(spec.Output, p.tail)
		p.cmd.Stdout, p.cmd.Stderr = w, w
	default:
		p.cmd.Stdout, p.cmd.Stderr = p.tail, p.tail
	}
	if err := ctx.Err(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		if logFile != nil {
			logFile.Close()
		}
		return nil, fmt.Errorf("proc: start %s: %w", spec.Name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		if logFile != nil {
			logFile.Close()
		}
		close(p.done)
	}()
	return p, nil
}

// Pid is the process's id (and its group's, with Spec.Group).
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Name is the name it has in errors and logs.
func (p *Proc) Name() string { return p.spec.Name }

// LogFile is the path of its log file (Spec.Log); "" when its output is not written to a file.
func (p *Proc) LogFile() string { return p.spec.Log }

// Done is closed once the process has ended.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to end and returns what exec.Cmd.Wait did: nil after exit status 0,
// an *exec.ExitError otherwise. It may be called any number of times.
func (p *Proc) Wait() error {
	<-p.done
	return p.err
}

// ExitCode is the process's exit status once it has ended: -1 while it runs or if a signal ended it.
func (p *Proc) ExitCode() int {
	if !p.Exited() || p.cmd.ProcessState == nil {
		return -1
	}
	return p.cmd.ProcessState.ExitCode()
}

// Signal sends sig to the process (to its group, with Spec.Group). Signalling a process that has
// ended returns os.ErrProcessDone.
func (p *Proc) Signal(sig os.Signal) error {
	if p.Exited() {
		return os.ErrProcessDone
	}
	if p.spec.Group {
		if err := signalGroup(p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			return fmt.Errorf("proc: signal %s: %w", p.spec.Name, err)
		}
		return nil
	}
	return p.cmd.Process.Signal(sig)
}

// Stop sends SIGTERM, waits up to Spec.Grace for the process to end, kills it if it has not, and
// returns Wait's result: nil when it exited with status 0 (a graceful stop).
func (p *Proc) Stop() error {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(p.spec.Grace):
		_ = p.Signal(syscall.SIGKILL)
	}
	return p.Wait()
}

// Kill sends SIGKILL, as a crash would, and waits for the process to end.
func (p *Proc) Kill() error {
	_ = p.Signal(syscall.SIGKILL)
	return p.Wait()
}

// WaitHealthy waits until the process passes the Spec's health checks (at once if it has none). It
// returns an error when the process ends first, or when ctx ends, naming the last check's failure
// (the last that ctx did not cut short).
// It checks at once, then at intervals growing from 1 ms to 50 ms.
func (p *Proc) WaitHealthy(ctx context.Context) error {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	check := func() error {
		if p.spec.HealthAddr != "" {
			d := net.Dialer{Timeout: time.Second}
			c, err := d.DialContext(ctx, "tcp", p.spec.HealthAddr)
			if err != nil {
				return err
			}
			c.Close()
		}
		if p.spec.HealthURL != "" {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.spec.HealthURL, nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", p.spec.HealthURL, resp.Status)
			}
		}
		if p.spec.Health != nil {
			return p.spec.Health(ctx)
		}
		return nil
	}
	poll := time.Millisecond
	var last error // the last check's answer, not one the deadline cut short
	for {
		err := check()
		if err == nil {
			return nil
		}
		if last == nil || ctx.Err() == nil {
			last = err
		}
		select {
		case <-p.done:
			return fmt.Errorf("proc: %s ended before it was healthy (%v): last check: %w", p.spec.Name, p.err, err)
		case <-ctx.Done():
			return fmt.Errorf("proc: %s not healthy: %w (%w)", p.spec.Name, last, ctx.Err())
		case <-time.After(poll): // the polling interval, not a wait for health
		}
		poll = min(2*poll, 50*time.Millisecond)
	}
}

// Tail returns the last n lines of the process's output (all it holds when n <= 0): from the log
// file with Spec.Log, else from the last 256 KiB kept in memory.
func (p *Proc) Tail(n int) string {
	if p.spec.Log != "" {
		return tailFile(p.spec.Log, n)
	}
	return lastLines(p.tail.Bytes(), n)
}
