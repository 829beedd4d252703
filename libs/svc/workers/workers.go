// Package workers keeps goroutines between tasks, so that a task runs on a stack that earlier
// tasks have grown instead of on a new goroutine's.
//
// A new goroutine starts on the runtime's smallest stack (2 KiB). The runtime grows a stack by
// allocating one twice the size and copying the old one into it, and each copy walks every frame
// on it: a task that goes deep (a service's HTTP/2 handler through its middleware and connect-go,
// a store call through its driver) pays a few doublings every time it runs on a goroutine of its
// own. On a kept worker it pays two goroutine switches instead (bench/README.md has the figures
// of libs/svc/serve's HTTP/2 requests and of the public-ID store's calls).
package workers

import (
	"sync"
	"sync/atomic"
)

// Pool runs tasks of type T on up to a fixed number of kept goroutines.
type Pool[T any] struct {
	run     func(T)
	max     int32
	work    chan T        // unbuffered: a send succeeds only when an idle worker waits
	stop    chan struct{} // closed by Close: idle workers end
	closing sync.Once
	n       atomic.Int32 // the workers running
}

// New returns a pool of at most max workers, each of which calls run for every task it is given.
// run must return (recover its task's panics; runtime.Goexit ends the worker, which the pool
// replaces when it next needs one).
func New[T any](max int, run func(T)) *Pool[T] {
	return &Pool[T]{run: run, max: int32(max), work: make(chan T), stop: make(chan struct{})}
}

// TryGo runs run(t) on an idle worker, or on a new one while fewer than max run, and says whether
// it did: past max it returns false and t is the caller's to run another way.
func (p *Pool[T]) TryGo(t T) bool {
	select {
	case p.work <- t:
		return true
	default:
	}
	if p.n.Add(1) > p.max {
		p.n.Add(-1)
		return false
	}
	go p.worker(t)
	return true
}

// worker runs t, then every task it is handed, until Close.
func (p *Pool[T]) worker(t T) {
	defer p.n.Add(-1)
	for {
		p.run(t)
		select {
		case t = <-p.work:
		case <-p.stop:
			return
		}
	}
}

// Close ends the idle workers, and each busy one once its task returns. A task given after Close
// runs on a worker that ends after it. Close may be called more than once.
func (p *Pool[T]) Close() { p.closing.Do(func() { close(p.stop) }) }
