package server_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/idcore/clocktest"
	"github.com/idgen/idgen/libs/idcore/lease"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/generator/internal/config"
	"github.com/idgen/idgen/services/generator/internal/server"
)

// gated is a generator served as main serves it: a health listener open at once, the API
// address listened on only when Serve opens it.
type gated struct {
	*running
	healthURL string
	apiAddr   string
}

// startGated runs a generator with a health listener and an API address that Serve listens on
// once the generator is ready; closing hurry ends its deregistration delay (nil: never).
func startGated(t testing.TB, cfg config.Config, hurry <-chan struct{}) *gated {
	t.Helper()
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	apiAddr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	ctx, cancel := context.WithCancel(serve.WithHurry(context.Background(), hurry))
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), server.WithClockHealth(clocktest.Synced()))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	g := &gated{running: &running{url: "http://" + apiAddr, srv: srv, cancel: cancel, done: make(chan error, 1)},
		healthURL: "http://" + hl.Addr().String(), apiAddr: apiAddr}
	go func() {
		g.done <- srv.Serve(ctx, func() (net.Listener, error) { return net.Listen("tcp", apiAddr) }, hl)
	}()
	t.Cleanup(func() { g.stop() })
	return g
}

// refused reports whether a TCP connection to addr is refused (no listener).
func refused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// TestDrainSequence: on shutdown both listeners' /healthz answer 503 draining at once, gRPC
// health NOT_SERVING, while the API goes on issuing, each answer with Connection: close, for the
// deregistration delay; then the API refuses connections, the health listener closes, and the
// generator releases its lease.
func TestDrainSequence(t *testing.T) {
	cfg := baseConfig(t)
	cfg.DeregistrationDelay = time.Minute // ended by hurry below
	hurry := make(chan struct{})
	g := startGated(t, cfg, hurry)
	t.Cleanup(func() { // before g's own cleanup: a failed test does not wait out the delay
		select {
		case <-hurry:
		default:
			close(hurry)
		}
	})
	g.waitReady(t)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return !refused(g.apiAddr), "the API listener did not open once the generator was ready"
	})
	if code, hdr, body := testenv.Do(t, "POST", g.url+"/v1/ids", "", "{}"); code != 200 || hdr.Get("Connection") == "close" {
		t.Fatalf("before the shutdown: %d %s, Connection %q", code, body, hdr.Get("Connection"))
	}
	g.cancel() // SIGTERM
	for _, url := range []string{g.healthURL, g.url} {
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			code, _, body := testenv.Do(t, "GET", url+"/healthz", "", "")
			return code == 503 && strings.Contains(body, `"reason":"draining"`), fmt.Sprintf("%s/healthz during the delay: %d %s", url, code, body)
		})
	}
	resp, err := http.Post(g.url+"/grpc.health.v1.Health/Check", "application/json", strings.NewReader(`{"service":"idgen.v1.IdService"}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "NOT_SERVING") {
		t.Fatalf("gRPC health during the delay: %d %s", resp.StatusCode, b)
	}
	for i := range 5 {
		req, _ := http.NewRequest("POST", g.url+"/v1/ids:batch", strings.NewReader(`{"count":10}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %d during the delay: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"ids":["`) || !resp.Close {
			t.Fatalf("POST %d during the delay: %d %s, Connection: close %v", i, resp.StatusCode, b, resp.Close)
		}
	}
	if g.srv.Node().Ready() != nil {
		t.Fatalf("the generator stopped issuing during the delay: %v", g.srv.Node().Ready())
	}
	close(hurry)
	select {
	case err := <-g.done:
		g.once.Do(func() { g.err = err })
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30 s after the delay ended")
	}
	if !refused(g.apiAddr) || !refused(strings.TrimPrefix(g.healthURL, "http://")) {
		t.Fatalf("after the shutdown: API refused %v, health refused %v", refused(g.apiAddr), refused(strings.TrimPrefix(g.healthURL, "http://")))
	}
	for _, l := range g.srv.Node().Leases() {
		if l.Held {
			t.Fatalf("a lease is still held after the shutdown: %+v", l)
		}
	}
}

// TestStopBeforeReady: a generator told to stop before it was ever ready waits for no
// deregistration delay (no load balancer sent it anything); with a health listener it never
// listened on its API address at all.
func TestStopBeforeReady(t *testing.T) {
	cfg := baseConfig(t)
	cfg.Range = "6-6"
	a := start(t, cfg)
	a.waitReady(t)
	cfg.DeregistrationDelay = time.Hour
	for _, gatedStart := range []bool{true, false} {
		t.Run(fmt.Sprintf("health listener %v", gatedStart), func(t *testing.T) {
			var r *running
			var healthURL, apiAddr string
			if gatedStart {
				g := startGated(t, cfg, nil)
				r, healthURL, apiAddr = g.running, g.healthURL, g.apiAddr
			} else {
				r = start(t, cfg)
				healthURL = r.url
			}
			testenv.Eventually(t, 5*time.Second, func() (bool, string) {
				code, _, body := testenv.Do(t, "GET", healthURL+"/healthz", "", "")
				return code == 503 && strings.Contains(body, "no_lease"), fmt.Sprintf("healthz of the second generator: %d %s", code, body)
			})
			r.cancel()
			select {
			case err := <-r.done:
				r.once.Do(func() { r.err = err })
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("a generator stopped before it was ready did not return within 30 s (it waited for the delay?)")
			}
			if apiAddr != "" && !refused(apiAddr) {
				t.Fatal("the API address accepts connections")
			}
		})
	}
}

// TestNotReadyRefusesAPI: a generator with a health listener that holds no number answers
// /healthz 503 no_lease there and refuses connections on its API address (not listened on yet),
// so no load balancer or client is ever answered 503 no_lease by it; once it takes the number it
// listens and serves.
func TestNotReadyRefusesAPI(t *testing.T) {
	cfg := baseConfig(t)
	cfg.Range = "5-5"
	a := start(t, cfg)
	a.waitReady(t)
	// A second generator on the same file and one-number range holds nothing.
	b := startGated(t, cfg, nil)
	// Wait for b's first claim round to find no free number.
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		ls := b.srv.Node().Leases()
		for _, l := range ls {
			if l.Held || !strings.Contains(l.Problem, lease.ErrNoFreeNumber.Error()) {
				return false, fmt.Sprintf("the second generator's leases: %+v", ls)
			}
		}
		return len(ls) > 0, fmt.Sprintf("the second generator's leases: %+v", ls)
	})
	code, _, body := testenv.Do(t, "GET", b.healthURL+"/healthz", "", "")
	if code != 503 || !strings.Contains(body, `"reason":"no_lease"`) {
		t.Fatalf("healthz without a lease: %d %s", code, body)
	}
	if !refused(b.apiAddr) {
		t.Fatal("the API address accepts connections before the generator holds a number")
	}
	// a shuts down and releases; b takes the number at its next claim round, then listens.
	a.stop()
	b.waitReady(t)
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		return !refused(b.apiAddr), "the API address still refuses connections once the generator is ready"
	})
	if code, _, _ := testenv.Do(t, "POST", b.url+"/v1/ids", "", "{}"); code != 200 {
		t.Fatalf("after the release: %d", code)
	}
	if code, _, body := testenv.Do(t, "GET", b.healthURL+"/healthz", "", ""); code != 200 {
		t.Fatalf("healthz after the release: %d %s", code, body)
	}
}
