package serve_test

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
)

// drainServer serves, on a loopback port with serve.Serve and sd (a minute's delay unless the
// test ends it), /healthz as the services answer it (503 draining once health drains), /slow
// (held until release is closed) and every other path with "ok". stop starts the shutdown,
// hurry ends the delay, done is Serve's result.
type drainServer struct {
	addr    string
	health  *serve.Health
	entered chan struct{}
	release chan struct{}
	stop    context.CancelFunc
	hurry   chan struct{}
	done    chan error // Serve's result, sent once
	ended   chan struct{}
}

func startDrainServer(t *testing.T, sd serve.Shutdown) *drainServer {
	t.Helper()
	d := &drainServer{health: serve.NewHealth(true, testService), entered: make(chan struct{}, 16), release: make(chan struct{}),
		hurry: make(chan struct{}), done: make(chan error, 1), ended: make(chan struct{})}
	sd.Health = d.health
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			if d.health.Draining() {
				w.WriteHeader(http.StatusServiceUnavailable)
				_, _ = io.WriteString(w, healthz.Draining.Reason)
				return
			}
			_, _ = io.WriteString(w, "ok")
		case "/slow":
			d.entered <- struct{}{}
			<-d.release
			_, _ = io.WriteString(w, "done")
		default:
			_, _ = io.Copy(io.Discard, r.Body)
			_, _ = io.WriteString(w, "ok")
		}
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.addr = l.Addr().String()
	ctx, cancel := context.WithCancel(serve.WithHurry(context.Background(), d.hurry))
	d.stop = cancel
	go func() { d.done <- serve.Serve(ctx, l, h, nil, sd, slog.New(slog.DiscardHandler)); close(d.ended) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.hurry:
		default:
			close(d.hurry)
		}
		select {
		case <-d.release:
		default:
			close(d.release)
		}
		<-d.ended
	})
	return d
}

// conns is an HTTP client (HTTP/1.1 keep-alive, or h2c) that counts the connections it opens.
type conns struct {
	c      *http.Client
	opened atomic.Int64
}

func newConns(h2c bool) *conns {
	cs := &conns{}
	tr := &http.Transport{Protocols: new(http.Protocols), MaxIdleConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			cs.opened.Add(1)
			return (&net.Dialer{}).DialContext(ctx, network, addr)
		}}
	if h2c {
		tr.Protocols.SetUnencryptedHTTP2(true)
	} else {
		tr.Protocols.SetHTTP1(true)
	}
	cs.c = &http.Client{Transport: tr, Timeout: 10 * time.Second}
	return cs
}

// post sends a POST and returns its status, its body, whether the connection was a reused one
// and whether the response asked to close it (HTTP/1.1).
func (cs *conns) post(t *testing.T, url string) (code int, body string, reused, closing bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{}`))
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(i httptrace.GotConnInfo) { reused = i.Reused },
	}))
	resp, err := cs.c.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b), reused, resp.Close
}

func get(t *testing.T, c *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestShutdownServesOnThroughTheDelay: from the start of a shutdown /healthz answers 503
// draining at once, while the API keeps serving on the open listener, keep-alive connections
// included, each response asking its client to close its connection (HTTP/1.1: Connection:
// close; HTTP/2: a GOAWAY), so the next request opens a new one; only when the delay ends does
// the listener refuse connections, and a request in flight then still gets its answer.
func TestShutdownServesOnThroughTheDelay(t *testing.T) {
	for _, h2c := range []bool{false, true} {
		t.Run(map[bool]string{false: "http1", true: "h2c"}[h2c], func(t *testing.T) {
			d := startDrainServer(t, serve.Shutdown{Delay: time.Minute, Drain: 10 * time.Second})
			base := "http://" + d.addr
			cs := newConns(h2c)
			for i := range 3 {
				code, body, reused, closing := cs.post(t, base+"/v1/things")
				if code != 200 || body != "ok" || closing || (i > 0 && !reused) {
					t.Fatalf("before the shutdown, POST %d: %d %q, reused %v, Connection: close %v", i, code, body, reused, closing)
				}
			}
			if code, body := get(t, cs.c, base+"/healthz"); code != 200 {
				t.Fatalf("/healthz before the shutdown: %d %q", code, body)
			}
			if n := cs.opened.Load(); n != 1 {
				t.Fatalf("%d connections before the shutdown, want 1 kept alive", n)
			}
			d.stop()
			testenv.Eventually(t, 5*time.Second, func() (bool, string) {
				return d.health.Draining(), "the shutdown did not drain the health"
			})
			// A fresh client: the health check of a load balancer.
			if code, body := get(t, &http.Client{Timeout: 5 * time.Second}, base+"/healthz"); code != 503 || body != "draining" {
				t.Fatalf("/healthz during the delay: %d %q, want 503 draining", code, body)
			}
			// The kept-alive connection still serves, and each answer moves the client to a new
			// connection.
			for i := range 3 {
				before := cs.opened.Load()
				code, body, _, closing := cs.post(t, base+"/v1/things")
				if code != 200 || body != "ok" {
					t.Fatalf("POST %d during the delay: %d %q", i, code, body)
				}
				if !h2c && !closing {
					t.Fatalf("POST %d during the delay: no Connection: close", i)
				}
				// The next request must not reuse this connection.
				_, _, reused, _ := cs.post(t, base+"/v1/things")
				if reused || cs.opened.Load() == before {
					t.Fatalf("POST %d during the delay: the next request reused the connection (opened %d -> %d)", i, before, cs.opened.Load())
				}
			}
			if refused(d.addr) {
				t.Fatal("the listener refused a connection during the delay")
			}
			// A request in flight when the delay ends is drained, not cut.
			answered := make(chan string, 1)
			go func() {
				resp, err := newConns(h2c).c.Get(base + "/slow")
				if err != nil {
					answered <- err.Error()
					return
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				answered <- string(b)
			}()
			<-d.entered
			close(d.hurry) // the delay ends (as at its time, or at a second signal)
			testenv.Eventually(t, 5*time.Second, func() (bool, string) {
				return refused(d.addr), "the listener still accepts after the delay"
			})
			select {
			case err := <-d.done:
				t.Fatalf("Serve returned (%v) with a request in flight", err)
			default:
			}
			close(d.release)
			if got := <-answered; got != "done" {
				t.Fatalf("the request in flight at the end of the delay: %q", got)
			}
			if err := <-d.done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestShutdownDelayEnds: without a second signal the delay ends by itself, then Serve returns.
func TestShutdownDelayEnds(t *testing.T) {
	d := startDrainServer(t, serve.Shutdown{Delay: 300 * time.Millisecond, Drain: 5 * time.Second})
	began := time.Now()
	d.stop()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30 s after a shutdown with a 300 ms delay")
	}
	if took := time.Since(began); took < 300*time.Millisecond {
		t.Fatalf("Serve returned %v after the shutdown began, before its delay of 300 ms", took)
	}
	if !refused(d.addr) {
		t.Fatal("the listener accepts after Serve returned")
	}
}

// TestShutdownWithoutDelay: a zero delay closes the listener at once (the sequence before the
// delay existed, and development mode's default).
func TestShutdownWithoutDelay(t *testing.T) {
	d := startDrainServer(t, serve.Shutdown{Drain: 5 * time.Second})
	d.stop()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return")
	}
	if !refused(d.addr) || !d.health.Draining() {
		t.Fatalf("after a shutdown without delay: refused %v, draining %v", refused(d.addr), d.health.Draining())
	}
}

// TestShutdownSkipsDelayWhenNeverReady: SkipDelay true at the start of the shutdown skips the
// delay (a service that was never ready was never routed to).
func TestShutdownSkipsDelayWhenNeverReady(t *testing.T) {
	d := startDrainServer(t, serve.Shutdown{Delay: time.Hour, Drain: 5 * time.Second, SkipDelay: func() bool { return true }})
	d.stop()
	select {
	case err := <-d.done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve waited for the delay of a service that was never ready")
	}
}

// TestHealthzWhileDraining: a listener's own /healthz (the gateway's) answers 503 draining once
// the service's health drains; every other request, and /healthz before, pass through.
func TestHealthzWhileDraining(t *testing.T) {
	health := serve.NewHealth(true, testService)
	h := serve.HealthzWhileDraining(health, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "theirs "+r.URL.Path)
	}))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(l) }()
	defer srv.Close()
	base := "http://" + l.Addr().String()
	c := &http.Client{Timeout: 5 * time.Second}
	if code, body := get(t, c, base+"/healthz"); code != 200 || body != "theirs /healthz" {
		t.Fatalf("/healthz before the drain: %d %q", code, body)
	}
	health.Drain()
	if code, body := get(t, c, base+"/healthz"); code != 503 || !strings.Contains(body, `"reason":"draining"`) {
		t.Fatalf("/healthz while draining: %d %q", code, body)
	}
	resp, err := c.Head(base + "/healthz")
	if err != nil || resp.StatusCode != 503 {
		t.Fatalf("HEAD /healthz while draining: %v %v", resp, err)
	}
	if code, body := get(t, c, base+"/orders/1"); code != 200 || body != "theirs /orders/1" {
		t.Fatalf("another path while draining: %d %q", code, body)
	}
}

// TestDeregistrationDelayFlag: the delay defaults to DefaultDeregistrationDelay, to 0 in
// development mode unless given (flag or environment), and a negative one is refused.
func TestDeregistrationDelayFlag(t *testing.T) {
	parse := func(dev bool, env map[string]string, args ...string) serve.Process {
		t.Helper()
		var p serve.Process
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		p.RegisterFlags(fs, 5*time.Second, serve.DefaultDeregistrationDelay)
		for k, v := range env {
			if f := fs.Lookup(strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(k, "IDGEN_"), "_", "-"))); f != nil {
				_ = f.Value.Set(v)
			}
		}
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		p.DevDefaults(fs, func(k string) string { return env[k] }, dev)
		return p
	}
	for _, tt := range []struct {
		dev  bool
		env  map[string]string
		args []string
		want time.Duration
	}{
		{false, nil, nil, serve.DefaultDeregistrationDelay},
		{true, nil, nil, 0},
		{true, nil, []string{"--deregistration-delay", "2s"}, 2 * time.Second},
		{true, nil, []string{"--deregistration-delay", "30s"}, 30 * time.Second},
		{true, map[string]string{"IDGEN_DEREGISTRATION_DELAY": "3s"}, nil, 3 * time.Second},
		{false, nil, []string{"--deregistration-delay", "0"}, 0},
	} {
		if got := parse(tt.dev, tt.env, tt.args...); got.DeregistrationDelay != tt.want || got.Drain != 5*time.Second {
			t.Errorf("dev %v env %v args %v: delay %v drain %v, want %v and 5s", tt.dev, tt.env, tt.args, got.DeregistrationDelay, got.Drain, tt.want)
		}
	}
	if err := (serve.Process{DeregistrationDelay: -time.Second}).Check(); err == nil || !strings.Contains(err.Error(), "--deregistration-delay") {
		t.Errorf("a negative delay: %v", err)
	}
}

// TestDeregistrationDelayMatchesInfra: the default delay is the NLB target group's
// deregistration_delay in infra/terraform/modules/fleet, and covers the time its health check
// takes to see a 503 (interval × unhealthy threshold), so a service restarted in place is out of
// rotation before its listener closes.
func TestDeregistrationDelayMatchesInfra(t *testing.T) {
	root, err := testenv.Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "infra", "terraform", "modules", "fleet", "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	tg := string(b)
	if i := strings.Index(tg, `resource "aws_lb_target_group"`); i >= 0 {
		tg = tg[i:]
	} else {
		t.Fatal("fleet/main.tf: no aws_lb_target_group")
	}
	seconds := func(name string) int {
		t.Helper()
		m := regexp.MustCompile(`(?m)^\s*` + name + `\s*=\s*(\d+)\s*$`).FindStringSubmatch(tg)
		if m == nil {
			t.Fatalf("fleet/main.tf: the target group has no literal %s", name)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	delay := time.Duration(seconds("deregistration_delay")) * time.Second
	if delay != serve.DefaultDeregistrationDelay {
		t.Errorf("the target group's deregistration_delay is %v, serve.DefaultDeregistrationDelay %v: keep them equal", delay, serve.DefaultDeregistrationDelay)
	}
	detect := time.Duration(seconds("interval")*seconds("unhealthy_threshold")) * time.Second
	if detect > serve.DefaultDeregistrationDelay {
		t.Errorf("the NLB's health check takes up to %v to see a 503, longer than the default delay %v", detect, serve.DefaultDeregistrationDelay)
	}
	t.Logf("deregistration_delay %v, health check detection up to %v", delay, detect)
}
