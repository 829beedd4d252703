package main

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// The process faults: one generator or node frozen, or killed and restarted.

// sigstop freezes one process with SIGSTOP, then resumes it with SIGCONT: sigstop-short for less
// than the lease (0.5 s to lease − 0.5 s), sigstop-long for more (lease + 1 s to twice the lease).
type sigstop struct {
	long   bool
	target int
	dur    time.Duration
}

func (f *sigstop) Name() string {
	if f.long {
		return "sigstop-long"
	}
	return "sigstop-short"
}

func (f *sigstop) plan(d *draw) time.Duration {
	f.target = d.proc
	if f.long {
		f.dur = d.between(leaseLen+time.Second, 2*leaseLen)
	} else {
		f.dur = d.between(500*time.Millisecond, leaseLen-500*time.Millisecond)
	}
	return f.dur
}

func (f *sigstop) Inject(ctx context.Context, r *runner) (string, error) {
	p := r.procs[f.target]
	p.signal(syscall.SIGSTOP)
	sleep(ctx, f.dur)
	p.signal(syscall.SIGCONT)
	return fmt.Sprintf("%s frozen %s", p.name, f.dur.Round(time.Millisecond)), nil
}

// kill9Restart kills one process with SIGKILL and starts it again (a new incarnation) after 0-2 s.
type kill9Restart struct {
	target int
	down   time.Duration
}

func (f *kill9Restart) Name() string { return "kill9-restart" }

func (f *kill9Restart) plan(d *draw) time.Duration {
	f.target = d.proc
	f.down = d.between(0, 2*time.Second)
	return f.down
}

func (f *kill9Restart) Inject(ctx context.Context, r *runner) (string, error) {
	p := r.procs[f.target]
	return fmt.Sprintf("%s killed, restarted after %s", p.name, f.down.Round(time.Millisecond)), p.killRestart(f.down)
}
