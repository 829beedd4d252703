package server_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/testenv"
)

// TestHealthListener: the plaintext health listener (--health-listen, the NLB's HTTP check)
// answers /healthz as the API does and /metrics, and nothing of the API; from the start of a
// shutdown its /healthz says draining, and it still answers while the API drains.
func TestHealthListener(t *testing.T) {
	srv, _, cancel, hurry, done := startDraining(t)
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hctx, stopHealth := context.WithCancel(context.Background())
	hdone := make(chan error, 1)
	go func() { hdone <- srv.ServeHealth(hctx, hl) }()
	t.Cleanup(stopHealth) // cleanups run last first: the health listener stops before the server
	health := "http://" + hl.Addr().String()
	hc := &http.Client{Timeout: 5 * time.Second}
	if code, body := get(t, hc, health+"/healthz"); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Fatalf("/healthz on the health listener: %d %s", code, body)
	}
	if code, body := get(t, hc, health+"/metrics"); code != 200 || !strings.Contains(body, "idgen_") {
		t.Fatalf("/metrics on the health listener: %d %.200s", code, body)
	}
	if code, body := get(t, hc, health+"/v1/regions"); code != 404 {
		t.Fatalf("the API on the health listener: %d %s, want 404", code, body)
	}
	cancel() // SIGTERM
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		code, body := get(t, hc, health+"/healthz")
		return code == 503 && strings.Contains(body, `"reason":"draining"`), "/healthz on the health listener during the delay: " + body
	})
	close(hurry)
	<-done
	stopHealth()
	if err := <-hdone; err != nil {
		t.Fatalf("ServeHealth: %v", err)
	}
	if c, err := net.DialTimeout("tcp", hl.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Fatal("the health listener accepts after it was stopped")
	}
}
