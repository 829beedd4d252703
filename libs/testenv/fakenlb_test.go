package testenv_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
)

// fakeTarget is an HTTP server answering its name, with a /healthz the test turns.
type fakeTarget struct {
	name string
	l    net.Listener
	ok   atomic.Bool
	srv  *http.Server
}

func newFakeTarget(t *testing.T, name string) *fakeTarget {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ft := &fakeTarget{name: name, l: l}
	ft.ok.Store(true)
	ft.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" && !ft.ok.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, name)
	})}
	go func() { _ = ft.srv.Serve(l) }()
	t.Cleanup(func() { ft.srv.Close() })
	return ft
}

func (ft *fakeTarget) addr() string { return ft.l.Addr().String() }

func body(c *http.Client, url string) (string, error) {
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestFakeNLB: targets get new connections only once healthy and no longer once unhealthy, a
// connection stays on its target, a target that refuses resets the client's connection, and
// with TerminateUnhealthy a target's connections are reset when it turns unhealthy.
func TestFakeNLB(t *testing.T) {
	for _, terminate := range []bool{false, true} {
		t.Run(fmt.Sprintf("terminate=%v", terminate), func(t *testing.T) {
			lb := testenv.StartFakeNLB(t, testenv.NLBConfig{Interval: 20 * time.Millisecond, Timeout: time.Second,
				HealthyThreshold: 2, UnhealthyThreshold: 2, TerminateUnhealthy: terminate})
			a, b := newFakeTarget(t, "a"), newFakeTarget(t, "b")
			a.ok.Store(false)
			lb.Register("a", a.addr(), "http://"+a.addr()+"/healthz")
			lb.Register("b", b.addr(), "http://"+b.addr()+"/healthz")
			testenv.Eventually(t, 10*time.Second, func() (bool, string) { return lb.State("b") == "healthy", "b is " + lb.State("b") })
			fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for range 5 {
				if got, err := body(fresh, lb.URL()+"/"); err != nil || got != "b" {
					t.Fatalf("a request while only b is healthy: %q %v", got, err)
				}
			}
			if st := lb.State("a"); st != "initial" {
				t.Fatalf("a never passed a check: %s, want initial", st)
			}
			a.ok.Store(true)
			testenv.Eventually(t, 10*time.Second, func() (bool, string) { return lb.State("a") == "healthy", "a is " + lb.State("a") })
			// A keep-alive client pinned to a: its connection stays on a.
			keep := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for {
				got, err := body(keep, lb.URL()+"/")
				if err != nil {
					t.Fatal(err)
				}
				if got == "a" {
					break
				}
				keep.CloseIdleConnections()
			}
			a.ok.Store(false)
			testenv.Eventually(t, 10*time.Second, func() (bool, string) { return lb.State("a") == "unhealthy", "a is " + lb.State("a") })
			for range 5 {
				if got, err := body(fresh, lb.URL()+"/"); err != nil || got != "b" {
					t.Fatalf("a new connection once a is unhealthy: %q %v", got, err)
				}
			}
			got, err := body(keep, lb.URL()+"/")
			if terminate {
				// The pinned connection was reset; a new one goes to b.
				if err != nil || got != "b" {
					t.Fatalf("after a's connections were reset: %q %v, want b on a new connection", got, err)
				}
			} else if err != nil || got != "a" {
				t.Fatalf("the connection kept alive to a, once a is unhealthy: %q %v, want a", got, err)
			}
			// b stops listening while the balancer still has it healthy: a connection given to it
			// is reset.
			lb.Deregister("a")
			b.srv.Close()
			if _, err := body(fresh, lb.URL()+"/"); err == nil {
				t.Fatal("a request to a target that refuses succeeded")
			}
			if st := lb.Stats(); st.DialFailed == 0 || st.Flows["b"] == 0 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}
