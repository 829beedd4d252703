package workers

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// TestPool: tasks run; an idle worker takes the next task (no new goroutine); past max TryGo
// refuses and the task is the caller's; Close ends the workers; a worker ended by
// runtime.Goexit is replaced.
func TestPool(t *testing.T) {
	release := make(chan struct{})
	var ran sync.WaitGroup
	p := New(2, func(f func()) { f() })
	block := func() { <-release; ran.Done() }
	ran.Add(2)
	for i := range 2 {
		if !p.TryGo(block) {
			t.Fatalf("TryGo refused task %d under max 2", i+1)
		}
	}
	if p.TryGo(func() {}) {
		t.Fatal("TryGo took a third task with both workers busy and max 2")
	}
	close(release)
	ran.Wait()
	if n := p.n.Load(); n != 2 {
		t.Fatalf("%d workers after their tasks, want the 2 kept", n)
	}
	// Both are idle now: a task goes to one of them, and no third worker starts.
	for range 100 {
		done := make(chan struct{})
		for !p.TryGo(func() { close(done) }) {
			runtime.Gosched()
		}
		<-done
		if n := p.n.Load(); n > 2 {
			t.Fatalf("%d workers, want at most 2", n)
		}
	}
	// A task that ends its goroutine ends its worker; the pool starts another when it needs one.
	exited := make(chan struct{})
	if !p.TryGo(func() { defer close(exited); runtime.Goexit() }) {
		t.Fatal("TryGo refused a task with idle workers")
	}
	<-exited
	waitWorkers(t, p, 1)
	done := make(chan struct{})
	for !p.TryGo(func() { close(done) }) {
		runtime.Gosched()
	}
	<-done
	p.Close()
	p.Close()
	waitWorkers(t, p, 0)
	// After Close a task still runs, on a worker that ends after it.
	done = make(chan struct{})
	if !p.TryGo(func() { close(done) }) {
		t.Fatal("TryGo refused a task after Close")
	}
	<-done
	waitWorkers(t, p, 0)
}

// waitWorkers waits until p runs want workers (a worker's end is not synchronous with its last
// task's).
func waitWorkers(t *testing.T, p *Pool[func()], want int32) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); p.n.Load() != want; {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers, want %d", p.n.Load(), want)
		}
		time.Sleep(time.Millisecond)
	}
}
