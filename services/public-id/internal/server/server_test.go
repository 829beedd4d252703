package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/healthz"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/server"
	"github.com/redis/go-redis/v9"
)

func start(t *testing.T, store string, extra ...string) string {
	t.Helper()
	cfg, err := config.Parse(append([]string{"--insecure-dev", "--store", store, "--resources", "ord,cus"}, extra...), func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return "http://" + l.Addr().String()
}

func call(t *testing.T, method, url, body string) (int, string) {
	t.Helper()
	code, _, b := testenv.Do(t, method, url, "", body)
	return code, b
}

func TestInternalAPI(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir())
	rtls := testenv.StartRedisTLS(t, t.TempDir(), "--requirepass", "pw")
	for name, store := range map[string][]string{
		"sqlite":          {"sqlite:" + filepath.Join(t.TempDir(), "m.db")},
		"redis":           {"redis:" + r.Addr},
		"redis-tls-login": {"rediss://:pw@" + rtls.TLSAddr, "--redis-ca", rtls.CAFile},
	} {
		t.Run(name, func(t *testing.T) {
			base := start(t, store[0], store[1:]...)
			code, body := call(t, "POST", base+"/v1/public-ids", `{"internal_id":"683244571854022659"}`)
			if code != 200 || !strings.Contains(body, `"public_id":"ord_`) {
				t.Fatalf("publish: %d %s", code, body)
			}
			pub := body[strings.Index(body, "ord_"):strings.LastIndex(body, `"`)]
			if code, again := call(t, "POST", base+"/v1/public-ids", `{"internal_id":683244571854022659}`); code != 200 || again != body {
				t.Fatalf("publish again: %d %s (first %s)", code, again, body)
			}
			if code, body := call(t, "GET", base+"/v1/public-ids/"+pub, ""); code != 200 || !strings.Contains(body, `"internal_id":"683244571854022659"`) {
				t.Fatalf("resolve: %d %s", code, body)
			}
			_, unknownBody := call(t, "GET", base+"/v1/public-ids/ord_doesNotExist", "")
			for _, bad := range []string{"ord_doesNotExist", "nonsense", "ord_!!"} {
				if code, body := call(t, "GET", base+"/v1/public-ids/"+bad, ""); code != 404 || body != unknownBody {
					t.Fatalf("resolve %s: %d %s", bad, code, body)
				}
			}
			for _, bad := range []string{`{}`, `{"internal_id":"-1"}`, `{"internal_id":"abc"}`, `{"internal_id":"1","resource":"zzz"}`, `nope`} {
				if code, body := call(t, "POST", base+"/v1/public-ids", bad); code != 400 {
					t.Fatalf("publish %s: %d %s", bad, code, body)
				}
			}
			c := idgenv1connect.NewPublicIdServiceClient(http.DefaultClient, base, connect.WithGRPCWeb())
			resp, err := c.Publish(context.Background(), connect.NewRequest(&idgenv1.PublishRequest{InternalId: 683244571854022659}))
			if err != nil || resp.Msg.GetPublicId() != pub {
				t.Fatalf("Connect Publish = %v, %v", resp, err)
			}
			res, err := c.Resolve(context.Background(), connect.NewRequest(&idgenv1.ResolveRequest{PublicId: pub}))
			if err != nil || res.Msg.GetInternalId() != 683244571854022659 {
				t.Fatalf("Connect Resolve = %v, %v", res, err)
			}
			if _, err := c.Resolve(context.Background(), connect.NewRequest(&idgenv1.ResolveRequest{PublicId: "ord_nope"})); connect.CodeOf(err) != connect.CodeNotFound {
				t.Fatalf("Connect Resolve unknown: %v", err)
			}
		})
	}
}

// TestStoreRefused: a store setting is refused before anything listens when it names no store the
// service has, and at start-up when the store cannot be reached or read; no error repeats a
// password.
func TestStoreRefused(t *testing.T) {
	for _, c := range []struct{ store, want string }{
		{"memcached:127.0.0.1:11211", "want sqlite:PATH"},
		{"memcached://:hunter2@127.0.0.1:11211", "want sqlite:PATH"},
		{"redis-cluster:rediss://:hunter2@[127.0.0.1:1", "URL"},
		{"rediss://:hunter2@127.0.0.1:1?dial_timeout=forever", "dial_timeout"},
		{"redis:127.0.0.1:1", "unavailable"},
	} {
		cfg, err := config.Parse([]string{"--insecure-dev", "--store", c.store}, func(string) string { return "" }, io.Discard)
		if err == nil {
			_, err = server.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("--store %s: %v (want an error that says %q and not the password)", c.store, err, c.want)
		}
	}
}

// TestVolatileStore: on a Redis without AOF the service refuses to start, and names the flag that
// accepts it; with that flag it starts, and says so in its metrics.
func TestVolatileStore(t *testing.T) {
	r := testenv.StartRedis(t, t.TempDir(), "--appendonly", "no")
	cfg, err := config.Parse([]string{"--insecure-dev", "--store", "redis:" + r.Addr}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	_, err = server.New(context.Background(), cfg, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), "AOF off") || !strings.Contains(err.Error(), "--accept-volatile-store") {
		t.Fatalf("a volatile store: %v", err)
	}
	base := start(t, "redis:"+r.Addr, "--accept-volatile-store")
	if v := testenv.Metric(t, base+"/metrics", "idgen_publicid_store_volatile", nil); v != 1 {
		t.Fatalf("idgen_publicid_store_volatile %v, want 1", v)
	}
	durable := testenv.StartRedis(t, t.TempDir())
	if v := testenv.Metric(t, start(t, "redis:"+durable.Addr)+"/metrics", "idgen_publicid_store_volatile", nil); v != 0 {
		t.Fatalf("a durable store: idgen_publicid_store_volatile %v, want 0", v)
	}
}

// TestFaces: a body over the limit is a 413 that names it; unknown fields are refused by name
// on both faces; an unknown procedure is UNIMPLEMENTED; HEAD /healthz answers.
func TestFaces(t *testing.T) {
	base := start(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	if code, body := call(t, "POST", base+"/v1/public-ids", `{"internal_id":"1","pad":"`+strings.Repeat("x", 5000)+`"}`); code != 413 || !strings.Contains(body, "limit of 4096 bytes") {
		t.Errorf("a large body: %d %s", code, body)
	}
	if code, body := call(t, "POST", base+"/v1/public-ids", `{"Internal_ID":"683244571854022659"}`); code != 400 || !strings.Contains(body, `unknown field \"Internal_ID\"`) {
		t.Errorf("another case over REST: %d %s", code, body)
	}
	req, _ := http.NewRequest("POST", base+"/idgen.v1.PublicIdService/Publish", strings.NewReader(`{"internalId":"683244571854022659","extra":1}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `unknown field`) {
		t.Errorf("an unknown field over Connect: %d %s", resp.StatusCode, b)
	}
	req, _ = http.NewRequest("POST", base+"/idgen.v1.PublicIdService/Delete", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"unimplemented"`) {
		t.Errorf("an unknown procedure: %d %s", resp.StatusCode, b)
	}
	if code, _ := call(t, "HEAD", base+"/healthz", ""); code != 200 {
		t.Errorf("HEAD /healthz: %d", code)
	}
	// Over Connect a body over the limit is resource_exhausted, naming the limit, with no
	// Retry-After (waiting does not make it smaller).
	req, _ = http.NewRequest("POST", base+"/idgen.v1.PublicIdService/Resolve", strings.NewReader(`{"public_id":"`+strings.Repeat("x", 5000)+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"resource_exhausted"`) || !strings.Contains(string(b), "4096") || resp.Header.Get("Retry-After") != "" {
		t.Errorf("a large body over Connect: %d %s %v", resp.StatusCode, b, resp.Header)
	}
}

// TestCORS: a page from a configured origin may call the API (its preflight is answered with the
// headers Connect needs); a page from any other origin gets no CORS headers.
func TestCORS(t *testing.T) {
	base := start(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"), "--cors-origins", "https://app.example.com")
	preflight := func(origin string) http.Header {
		req, _ := http.NewRequest("OPTIONS", base+"/idgen.v1.PublicIdService/Resolve", nil)
		req.Header.Set("Origin", origin)
		req.Header.Set("Access-Control-Request-Method", "POST")
		req.Header.Set("Access-Control-Request-Headers", "connect-protocol-version,connect-timeout-ms,content-type") // as browsers send it: lower case, sorted
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header
	}
	h := preflight("https://app.example.com")
	if h.Get("Access-Control-Allow-Origin") != "https://app.example.com" || !strings.Contains(strings.ToLower(h.Get("Access-Control-Allow-Headers")), "connect-protocol-version") {
		t.Fatalf("preflight from the configured origin: %v", h)
	}
	if h := preflight("https://evil.example.net"); h.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from another origin was allowed: %v", h)
	}
	// The real request carries the origin's header and exposes what Connect clients read.
	req, _ := http.NewRequest("POST", base+"/v1/public-ids", strings.NewReader(`{"internal_id":"683244571854022659"}`))
	req.Header.Set("Origin", "https://app.example.com")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
		t.Fatalf("a CORS request: %d %v", resp.StatusCode, resp.Header)
	}
	if _, err := config.Parse([]string{"--insecure-dev", "--cors-origins", "app.example.com/x"}, func(string) string { return "" }, io.Discard); err == nil {
		t.Fatal("a malformed origin was accepted")
	}
}

// TestRequestMetrics: the internal API exports the services' request metrics (one vocabulary
// of codes for REST and Connect) and its own publish and resolve counts.
func TestRequestMetrics(t *testing.T) {
	base := start(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	call(t, "POST", base+"/v1/public-ids", `{"internal_id":"683244571854022659"}`)
	call(t, "GET", base+"/v1/public-ids/ord_nope", "")
	req, _ := http.NewRequest("POST", base+"/idgen.v1.PublicIdService/Resolve", strings.NewReader(`{"public_id":"ord_nope"}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	m := testenv.Scrape(t, nil, base+"/metrics")
	m.Expect(t,
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "ok", "protocol": "rest", "region": "us-east-1", "route": "/v1/public-ids"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "not_found", "protocol": "rest", "region": "us-east-1", "route": "/v1/public-ids/:public_id"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "not_found", "protocol": "connect", "region": "us-east-1", "route": "/idgen.v1.PublicIdService/Resolve"}, Value: 1},
		testenv.Series{Name: "idgen_publicid_store_calls_total", Labels: testenv.Labels{"op": "publish", "outcome": "ok", "region": "us-east-1"}, Value: 1},
		testenv.Series{Name: "idgen_publicid_store_calls_total", Labels: testenv.Labels{"op": "resolve", "outcome": "store_unavailable", "region": "us-east-1"}, Value: 0},
	)
	if m.Count("idgen_server_requests_in_flight", nil) == 0 {
		t.Errorf("metrics lack idgen_server_requests_in_flight")
	}
}

// TestErrorBodies: every REST error is {"error": message, "reason": name}, as in every service,
// and unknown and malformed public IDs get the same one.
func TestErrorBodies(t *testing.T) {
	base := start(t, "sqlite:"+filepath.Join(t.TempDir(), "m.db"))
	for _, tt := range []struct {
		method, path, body string
		status             int
		reason             string
	}{
		{"GET", "/v1/public-ids/ord_doesNotExist", "", 404, "not_found"},
		{"GET", "/v1/public-ids/nonsense", "", 404, "not_found"},
		{"GET", "/v2/public-ids", "", 404, "not_found"},
		{"DELETE", "/v1/public-ids", "", 405, "method_not_allowed"},
		{"POST", "/v1/public-ids", `{}`, 400, "bad_request"},
		{"POST", "/v1/public-ids", `{"internal_id":"1","pad":"` + strings.Repeat("x", 5000) + `"}`, 413, "too_large"},
	} {
		code, b := call(t, tt.method, base+tt.path, tt.body)
		var body map[string]string
		if err := json.Unmarshal([]byte(b), &body); err != nil || len(body) != 2 || body["error"] == "" || body["reason"] != tt.reason || code != tt.status {
			t.Errorf("%s %s: %d %s, want %d with reason %q", tt.method, tt.path, code, b, tt.status, tt.reason)
		}
	}
	for _, svc := range []string{idgenv1connect.PublicIdServiceName, ""} {
		req, _ := http.NewRequest("POST", base+"/grpc.health.v1.Health/Check", strings.NewReader(`{"service":"`+svc+`"}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), `"SERVING_STATUS_SERVING"`) {
			t.Errorf("health of %q: %d %s", svc, resp.StatusCode, b)
		}
	}
}

// TestStoreTurnsVolatile: the service re-reads the store's persistence while it runs
// (--redis-durability-check). A durable Redis turned volatile with CONFIG SET makes publishes of
// new mappings fail with 503 store_volatile over REST and Connect (nothing is written), and so
// do publishes of mapped internal IDs (a publish refused there may have written one), while
// resolves answer as before; /healthz stays 200 and says so,
// and idgen_publicid_store_volatile follows. Durable again, all is as before. With
// --accept-volatile-store publishes go on, and the gauge and /healthz still tell.
func TestStoreTurnsVolatile(t *testing.T) {
	ctx := context.Background()
	r := testenv.StartRedis(t, t.TempDir())
	admin := redis.NewClient(&redis.Options{Addr: r.Addr})
	defer admin.Close()
	set := func(param, value string) {
		t.Helper()
		if err := admin.ConfigSet(ctx, param, value).Err(); err != nil {
			t.Fatal(err)
		}
	}
	base := start(t, "redis:"+r.Addr, "--redis-durability-check", "100ms")
	accepting := start(t, "redis:"+r.Addr, "--redis-durability-check", "100ms", "--accept-volatile-store")
	gauge := func(base string, want int) func() (bool, string) {
		return func() (bool, string) {
			v := testenv.Metric(t, base+"/metrics", "idgen_publicid_store_volatile", nil)
			return v == float64(want), fmt.Sprintf("idgen_publicid_store_volatile %v, want %d", v, want)
		}
	}
	health := func(base string) healthz.Service {
		t.Helper()
		code, b := call(t, "GET", base+"/healthz", "")
		var h healthz.Service
		if code != 200 || json.Unmarshal([]byte(b), &h) != nil {
			t.Fatalf("/healthz: %d %s, want 200", code, b)
		}
		return h
	}
	publish := func(base, internal string) (int, map[string]string) {
		t.Helper()
		code, b := call(t, "POST", base+"/v1/public-ids", `{"internal_id":"`+internal+`"}`)
		var body map[string]string
		if err := json.Unmarshal([]byte(b), &body); err != nil {
			t.Fatalf("publish: %d %s", code, b)
		}
		return code, body
	}
	code, mapped := publish(base, "683244571854022659")
	if code != 200 || health(base) != healthz.OK {
		t.Fatalf("on a durable store: publish %d %v, /healthz %+v", code, mapped, health(base))
	}
	testenv.Eventually(t, 5*time.Second, gauge(base, 0))

	set("appendonly", "no")
	testenv.Eventually(t, 5*time.Second, gauge(base, 1))
	testenv.Eventually(t, 5*time.Second, gauge(accepting, 1))
	if h := health(base); h.Status != "degraded" || h.Reason != "store_volatile" || !strings.Contains(h.Error, "AOF off") || !strings.Contains(h.Error, "publishes are refused") {
		t.Errorf("/healthz on a store turned volatile: %+v", h)
	}
	if h := health(accepting); h.Status != "degraded" || h.Reason != "store_volatile" || !strings.Contains(h.Error, "--accept-volatile-store") {
		t.Errorf("/healthz with --accept-volatile-store on a store turned volatile: %+v", h)
	}
	keys := admin.DBSize(ctx).Val()
	if code, body := publish(base, "683244571854022660"); code != 503 || body["reason"] != "store_volatile" || !strings.Contains(body["error"], "refused") {
		t.Errorf("publish of a new mapping on a store turned volatile: %d %v, want 503 store_volatile", code, body)
	}
	c := idgenv1connect.NewPublicIdServiceClient(http.DefaultClient, base)
	if _, err := c.Publish(ctx, connect.NewRequest(&idgenv1.PublishRequest{InternalId: 683244571854022661})); connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Connect publish on a store turned volatile: %v, want unavailable", err)
	}
	if n := admin.DBSize(ctx).Val(); n != keys {
		t.Errorf("the refused publishes wrote: %d keys, %d before", n, keys)
	}
	if code, body := publish(base, "683244571854022659"); code != 503 || body["reason"] != "store_volatile" {
		t.Errorf("publish of a mapped internal ID on a volatile store: %d %v, want 503 store_volatile", code, body)
	}
	if code, b := call(t, "GET", base+"/v1/public-ids/"+mapped["public_id"], ""); code != 200 || !strings.Contains(b, "683244571854022659") {
		t.Errorf("resolve on a volatile store: %d %s", code, b)
	}
	if code, body := publish(accepting, "683244571854022662"); code != 200 {
		t.Errorf("publish with --accept-volatile-store on a store turned volatile: %d %v", code, body)
	}
	m := testenv.Scrape(t, nil, base+"/metrics")
	if n := m.Get(t, "idgen_publicid_store_calls_total", testenv.Labels{"op": "publish", "outcome": "store_volatile"}); n != 3 {
		t.Errorf("publishes refused as store_volatile: %v, want 3", n)
	}
	if n := m.Get(t, "idgen_server_requests_total", testenv.Labels{"code": "unavailable", "protocol": "rest", "route": "/v1/public-ids"}); n != 2 {
		t.Errorf("publishes answered unavailable: %v, want 2", n)
	}

	set("appendonly", "yes")
	testenv.Eventually(t, 5*time.Second, gauge(base, 0))
	testenv.Eventually(t, 5*time.Second, gauge(accepting, 0))
	if h := health(base); h != healthz.OK {
		t.Errorf("/healthz once durable again: %+v", h)
	}
	if code, body := publish(base, "683244571854022660"); code != 200 {
		t.Errorf("publish once durable again: %d %v", code, body)
	}
}
