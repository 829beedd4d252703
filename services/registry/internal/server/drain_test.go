package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/registry/internal/server"
)

// TestDrain: on shutdown /healthz answers 503 draining at once while the API serves on for the
// deregistration delay, each response with Connection: close; then the listener refuses.
func TestDrain(t *testing.T) {
	_, l, cancel, hurry, done := startDraining(t)
	base := "http://" + l.Addr().String()
	hc := &http.Client{Timeout: 5 * time.Second}
	if code, body := get(t, hc, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz before the shutdown: %d %s", code, body)
	}
	cancel() // SIGTERM
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, body := get(t, hc, base+"/healthz")
		return code == 503 && strings.Contains(body, `"reason":"draining"`), "/healthz during the delay: " + body
	})
	resp, err := hc.Get(base + "/v1/regions")
	if err != nil {
		t.Fatalf("a read during the delay: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), `"us-east-1"`) || !resp.Close {
		t.Fatalf("a read during the delay: %d %s, Connection: close %v", resp.StatusCode, b, resp.Close)
	}
	close(hurry)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30 s after the delay ended")
	}
	if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("the listener accepts after the shutdown")
	}
}

// startDraining starts the registry on a loopback listener with a deregistration delay of a
// minute, which closing hurry ends; cancel starts the shutdown (a SIGTERM), and done closes when
// Serve has returned. The test's cleanup ends whatever is still running.
func startDraining(t *testing.T) (srv *server.Server, l net.Listener, cancel func(), hurry chan struct{}, done chan struct{}) {
	t.Helper()
	cfg := devConfig(t)
	cfg.DeregistrationDelay = time.Minute // ended by hurry
	hurry = make(chan struct{})
	ctx, cancel := context.WithCancel(serve.WithHurry(context.Background(), hurry))
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done = make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-hurry:
		default:
			close(hurry)
		}
		<-done
	})
	return srv, l, cancel, hurry, done
}
