package serve_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
)

// goroutineID is the number of the goroutine that calls it, from its stack's first line.
func goroutineID() string {
	var b [64]byte
	f := strings.Fields(string(b[:runtime.Stack(b[:], false)]))
	return f[1]
}

// serveH serves h with serve.Serve on a loopback port until the test ends; it returns the base
// URL and the server's log.
func serveH(t *testing.T, h http.Handler) (string, *testenv.LogBuffer) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testenv.LogBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Serve(ctx, l, h, nil, serve.Shutdown{Drain: time.Second}, slog.New(slog.NewTextHandler(logs, nil)))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + l.Addr().String(), logs
}

// TestHTTP2OnPooledGoroutines: HTTP/2 requests run on goroutines that outlive them (one after
// another, the same goroutine serves them, while the HTTP/2 server starts a new one for each),
// HTTP/1.1 requests on their connection's goroutine as before; a handler's panic is net/http's
// to handle as before (the stream reset, the value logged with the handler's stack, nothing
// logged for http.ErrAbortHandler), and so is runtime.Goexit; requests beyond the pool's
// workers are served too; the server serves on after each.
func TestHTTP2OnPooledGoroutines(t *testing.T) {
	var (
		mu      sync.Mutex
		release = make(chan struct{})
		arrived = make(chan struct{}, 200)
	)
	ids := map[string]int{}
	base, logs := serveH(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/panic":
			panic("the handler broke")
		case "/abort":
			panic(http.ErrAbortHandler)
		case "/goexit":
			runtime.Goexit()
		case "/wait":
			arrived <- struct{}{}
			<-release
		}
		mu.Lock()
		ids[goroutineID()]++
		mu.Unlock()
		fmt.Fprintf(w, "HTTP/%d", r.ProtoMajor)
	}))
	h2c, h1 := newConns(true), newConns(false)
	for i := 0; i < 20; i++ {
		if code, body := get(t, h2c.c, base+"/"); code != http.StatusOK || body != "HTTP/2" {
			t.Fatalf("h2c: %d %q", code, body)
		}
	}
	// Requests in turn reuse the pool's workers. A request that comes before the worker of the one
	// before it is waiting again (its response is on the wire first) starts a second worker; with
	// one request at a time the other is then always waiting, so there are never more than two.
	mu.Lock()
	if len(ids) > 2 {
		t.Errorf("20 h2c requests in turn ran on %d goroutines, want at most 2 (pooled ones): %v", len(ids), ids)
	}
	clear(ids)
	mu.Unlock()
	for i := 0; i < 5; i++ {
		if code, body := get(t, h1.c, base+"/"); code != http.StatusOK || body != "HTTP/1" {
			t.Fatalf("HTTP/1.1: %d %q", code, body)
		}
	}

	for _, path := range []string{"/panic", "/abort", "/goexit"} {
		if resp, err := h2c.c.Get(base + path); err == nil {
			resp.Body.Close()
			t.Errorf("%s: %d, want the stream reset", path, resp.StatusCode)
		}
		if code, body := get(t, h2c.c, base+"/"); code != http.StatusOK || body != "HTTP/2" {
			t.Fatalf("after %s: %d %q", path, code, body)
		}
	}
	for !strings.Contains(logs.String(), "the handler broke") {
		time.Sleep(10 * time.Millisecond) // net/http logs once the stream is reset
	}
	if l := logs.String(); !strings.Contains(l, "stacks_test.go") || strings.Count(l, "panic serving") != 1 {
		t.Errorf("the panic's log should hold the handler's stack, and ErrAbortHandler log nothing:\n%s", l)
	}

	// More requests at once than the pool has workers (64): all are served.
	const n = 100
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := newConns(true).c.Get(base + "/wait")
			if err != nil {
				errs <- err
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				errs <- fmt.Errorf("status %d", resp.StatusCode)
			}
		}()
	}
	for i := 0; i < n; i++ {
		<-arrived // all n are in their handlers at once
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
