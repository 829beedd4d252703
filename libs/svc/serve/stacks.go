package serve

import (
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/idgen/idgen/libs/svc/workers"
)

// grownStacks serves HTTP/2 requests on long-lived goroutines whose stacks have already grown.
//
// HTTP/2 runs every request on a new goroutine with the runtime's smallest stack (2 KiB), and a
// service's handler (the middleware, connect-go, the handler itself) goes deeper than that. The
// runtime grows a stack by allocating one twice the size and copying the old one into it, and
// each copy walks every frame on it, looking up each frame's stack map: a Connect call's stack
// doubled three times, to 16 KiB, a third of the call's instructions under callgrind. Here the
// request's goroutine hands the request to an idle worker (a goroutine that served earlier
// requests, its stack grown by them: a workers.Pool) and waits for it: two goroutine switches
// instead. When no worker is idle a new one starts, up to maxStackWorkers; past that a request is
// served on its own goroutine, as without the pool. (Growing each request's own stack once at its
// top, while it is shallow, saves as many instructions at one request at a time, but with many
// requests in flight it draws a 16 KiB stack from the runtime's shared pool and the heap for each
// and gives it back at its end, and the bare handler's CPU per request rose with it.) HTTP/1.1
// requests are served on their connection's goroutine, which lives as long as the connection and
// keeps the stack it grew: they are not handed over.
type grownStacks struct {
	h       http.Handler
	workers *workers.Pool[*stackTask]
}

// maxStackWorkers bounds the workers (each holds a stack of up to some tens of KiB, which the
// garbage collector shrinks while the worker is idle).
const maxStackWorkers = 64

// stackTask is one request handed to a worker; done is signalled when the handler has returned.
type stackTask struct {
	w    http.ResponseWriter
	r    *http.Request
	done chan struct{}
	// How the handler ended when it did not return: a panic's value and the worker's stack at
	// the panic, or runtime.Goexit.
	panicked bool
	value    any
	stack    []byte
	goexit   bool
}

var stackTasks = sync.Pool{New: func() any { return &stackTask{done: make(chan struct{}, 1)} }}

func newGrownStacks(h http.Handler) *grownStacks {
	g := &grownStacks{h: h}
	g.workers = workers.New(maxStackWorkers, g.run)
	return g
}

// close ends the workers once they are idle (Serve calls it when its server is done). A request
// that comes later is served on its own goroutine.
func (g *grownStacks) close() { g.workers.Close() }

func (g *grownStacks) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 2 {
		g.h.ServeHTTP(w, r)
		return
	}
	t := stackTasks.Get().(*stackTask)
	t.w, t.r = w, r
	if !g.workers.TryGo(t) {
		t.w, t.r = nil, nil
		stackTasks.Put(t)
		g.h.ServeHTTP(w, r)
		return
	}
	<-t.done
	panicked, value, stack, goexit := t.panicked, t.value, t.stack, t.goexit
	*t = stackTask{done: t.done}
	stackTasks.Put(t)
	switch {
	case goexit:
		// As the handler did on its own goroutine (the worker has ended).
		runtime.Goexit()
	case panicked:
		// On the request's own goroutine, so that net/http recovers it as it would have: it
		// aborts the stream and logs the value and this goroutine's stack, so the value
		// carries the stack where the handler panicked.
		if value == http.ErrAbortHandler {
			panic(value)
		}
		panic(handlerPanic{value, stack})
	}
}

// run serves t on a worker and signals its end, however the handler ended (runtime.Goexit ends
// the worker, which the pool replaces).
func (g *grownStacks) run(t *stackTask) {
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				t.panicked, t.value, t.stack = true, v, debug.Stack()
			} else {
				t.goexit = true // runtime.Goexit: recover returns nil, and this goroutine ends
			}
		}
		t.done <- struct{}{}
	}()
	g.h.ServeHTTP(t.w, t.r)
	returned = true
}

// handlerPanic is a handler's panic raised again on the request's goroutine: its value and the
// stack of the worker where it was raised.
type handlerPanic struct {
	value any
	stack []byte
}

func (p handlerPanic) String() string {
	return fmt.Sprintf("%v\n[served on a pooled goroutine; its stack at the panic:]\n%s", p.value, p.stack)
}
