package gatewayserver_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/gatewayserver"
	"github.com/idgen/idgen/services/public-id/internal/server"
)

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	code, _, b := testenv.Do(t, method, url, "", body)
	return code, b
}

// TestDrainBothPrograms: on shutdown the internal API's /healthz and the gateway's (on its
// customers' listener and on its operator's) answer 503 draining at once, while both programs
// serve on for the deregistration delay (a publish, a gateway answer), each response with
// Connection: close; then every listener refuses connections. The two run on one SQLite file, as
// two processes of a region share their store.
func TestDrainBothPrograms(t *testing.T) {
	dir := t.TempDir()
	routes := filepath.Join(dir, "routes.json")
	if err := os.WriteFile(routes, []byte(`{"routes":[{"name":"order","public":"/orders/{public_id}","methods":["GET"],
		"upstream":"http://127.0.0.1:1/internal/orders/{internal_id}","resource":"ord","response":{"type":"object","fields":{"id":"id:ord"}}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	store := "sqlite:" + filepath.Join(dir, "m.db")
	cfg, err := config.Parse([]string{"--insecure-dev", "--store", store, "--deregistration-delay", "1m"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	gcfg, err := config.ParseGateway([]string{"--store", store, "--routes", routes, "--deregistration-delay", "1m"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	hurry := make(chan struct{})
	ctx, cancel := context.WithCancel(serve.WithHurry(context.Background(), hurry))
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	gws, err := gatewayserver.New(ctx, gcfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	api, _ := net.Listen("tcp", "127.0.0.1:0")
	gw, _ := net.Listen("tcp", "127.0.0.1:0")
	ops, _ := net.Listen("tcp", "127.0.0.1:0")
	apiDone, gwDone := make(chan struct{}), make(chan struct{})
	go func() { srv.Serve(ctx, api); close(apiDone) }()
	go func() { gws.Serve(ctx, gw, ops); close(gwDone) }()
	done := make(chan struct{})
	go func() { <-apiDone; <-gwDone; close(done) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-hurry:
		default:
			close(hurry)
		}
		<-done
	})
	apiURL, gwURL, opsURL := "http://"+api.Addr().String(), "http://"+gw.Addr().String(), "http://"+ops.Addr().String()
	if n := testenv.Scrape(t, nil, opsURL+"/metrics").Count("idgen_gateway_requests_total", testenv.Labels{"region": "us-east-1"}); n == 0 {
		t.Fatalf("the gateway's operator listener: /metrics has no idgen_gateway_requests_total of us-east-1")
	}
	if code, _ := call(t, "GET", gwURL+"/metrics", ""); code != 404 {
		t.Fatalf("the customers' listener serves /metrics: %d, want the gateway's 404", code)
	}
	for _, u := range []string{apiURL, gwURL, opsURL} {
		if code, body := call(t, "GET", u+"/healthz", ""); code != 200 {
			t.Fatalf("%s/healthz before the shutdown: %d %s", u, code, body)
		}
	}
	cancel() // SIGTERM
	for _, u := range []string{apiURL, gwURL, opsURL} {
		testenv.Eventually(t, 5*time.Second, func() (bool, string) {
			code, body := call(t, "GET", u+"/healthz", "")
			return code == 503 && strings.Contains(body, `"reason":"draining"`), u + "/healthz during the delay: " + body
		})
	}
	post := func(url, body string) *http.Response {
		t.Helper()
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatalf("POST %s during the delay: %v", url, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if resp := post(apiURL+"/v1/public-ids", `{"internal_id":"683244571854022659"}`); resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("a publish during the delay: %d, Connection: close %v", resp.StatusCode, resp.Close)
	}
	resp, err := http.Get(gwURL + "/orders/ord_unknown")
	if err != nil {
		t.Fatalf("the gateway during the delay: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 || !resp.Close {
		t.Fatalf("the gateway during the delay: %d, Connection: close %v (want its 404 for an unknown public ID)", resp.StatusCode, resp.Close)
	}
	close(hurry)
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Serve did not return 30 s after the delay ended")
	}
	for _, l := range []net.Listener{api, gw, ops} {
		if c, err := net.DialTimeout("tcp", l.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Fatalf("%s accepts after the shutdown", l.Addr())
		}
	}
}
