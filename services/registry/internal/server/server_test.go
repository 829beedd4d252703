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
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/localstack/proc"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/idgen/idgen/services/registry/internal/config"
	"github.com/idgen/idgen/services/registry/internal/server"
)

func start(t *testing.T, cfg config.Config) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String()
}

func devConfig(t *testing.T) config.Config {
	cfg, err := config.Parse([]string{"--insecure-dev", "--store", "sqlite:" + filepath.Join(t.TempDir(), "r.db")}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func get(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func post(t *testing.T, hc *http.Client, url, body string) (int, string) {
	t.Helper()
	resp, err := hc.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRESTShapes(t *testing.T) {
	base := "http://" + start(t, devConfig(t))
	hc := http.DefaultClient
	code, body := get(t, hc, base+"/v1/regions")
	var doc struct {
		Regions []map[string]any `json:"regions"`
	}
	if err := json.Unmarshal([]byte(body), &doc); err != nil || code != 200 || len(doc.Regions) != 5 {
		t.Fatalf("GET /v1/regions: %d %s", code, body)
	}
	first := doc.Regions[0]
	if first["name"] != "us-east-1" || first["number"] != float64(0) || first["peer"] != "us-west-2" || first["status"] != "active" || first["retired_at"] != nil {
		t.Fatalf("first region %v", first)
	}
	if _, ok := first["retired_at"]; !ok {
		t.Fatal("retired_at missing (want null)")
	}
	if code, body := get(t, hc, base+"/v1/regions/eu-west-1"); code != 200 || !strings.Contains(body, `"number":2`) {
		t.Fatalf("GET one region: %d %s", code, body)
	}
	if code, _ := get(t, hc, base+"/v1/regions/mars-1"); code != 404 {
		t.Fatalf("unknown region: %d", code)
	}
	code, body = post(t, hc, base+"/v1/regions", `{"name":"eu-central-1","peer":"eu-west-1"}`)
	if code != 201 || !strings.Contains(body, `"number":5`) {
		t.Fatalf("add: %d %s", code, body)
	}
	for _, bad := range []string{`{"name":"Not A Region","peer":"eu-west-1"}`, `{"name":"eu-north-1","peer":"mars-1"}`, `nope`, `{"name":"eu-north-1","peer":"eu-west-1","x":1}`} {
		if code, body := post(t, hc, base+"/v1/regions", bad); code != 400 {
			t.Fatalf("add %s: %d %s", bad, code, body)
		}
	}
	if code, body := post(t, hc, base+"/v1/regions/eu-central-1:retire", ""); code != 200 || !strings.Contains(body, `"status":"retired"`) {
		t.Fatalf("retire: %d %s", code, body)
	}
	if code, _ := post(t, hc, base+"/v1/regions/eu-central-1:explode", ""); code != 404 {
		t.Fatalf("unknown verb: %d", code)
	}
	if code, body := get(t, hc, base+"/v1/layouts"); code != 200 || !strings.Contains(body, `"starts_at":"2026-01-01T00:00:00Z"`) {
		t.Fatalf("layouts: %d %s", code, body)
	}
	code, body = get(t, hc, base+"/v1/audit")
	if code != 200 || !strings.Contains(body, `"action":"add"`) || !strings.Contains(body, `"action":"retire"`) || !strings.Contains(body, "svc/dev") {
		t.Fatalf("audit: %d %s", code, body)
	}
}

func TestAdminOnlyChanges(t *testing.T) {
	dir := t.TempDir()
	ca := testenv.NewCA(t, "registry test CA")
	f := ca.EdgeFiles(t, dir, `{"trust_domain":"idgen.test","callers":[{"name":"ops","admin":true},{"name":"orders"}]}`)
	cfg, err := config.Parse([]string{"--store", "sqlite:" + filepath.Join(dir, "r.db"), "--tls-cert", f.Cert, "--tls-key", f.Key,
		"--client-ca", f.ClientCA, "--callers", f.Callers}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	base := "https://" + start(t, cfg)
	hour := time.Now().Add(time.Hour)
	ops := ca.HTTPSClient(ptr(ca.Client(t, hour, "spiffe://idgen.test/svc/ops")))
	orders := ca.HTTPSClient(ptr(ca.Client(t, hour, "spiffe://idgen.test/svc/orders")))
	stranger := ca.HTTPSClient(ptr(ca.Client(t, hour, "spiffe://idgen.test/svc/stranger")))

	if code, body := post(t, orders, base+"/v1/regions", `{"name":"eu-central-1","peer":"eu-west-1"}`); code != 403 || !strings.Contains(body, "admin") {
		t.Fatalf("non-admin add: %d %s", code, body)
	}
	if code, _ := post(t, orders, base+"/v1/regions/us-east-1:retire", ""); code != 403 {
		t.Fatalf("non-admin retire: %d", code)
	}
	_, err = idgenv1connect.NewRegistryServiceClient(orders, base).AddRegion(context.Background(), connect.NewRequest(&idgenv1.AddRegionRequest{Name: "eu-central-1", Peer: "eu-west-1"}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("non-admin AddRegion: %v", err)
	}
	if code, _ := get(t, stranger, base+"/v1/regions"); code != 403 {
		t.Fatalf("unknown caller reads: %d", code)
	}
	if code, _ := get(t, stranger, base+"/v1/layouts"); code != 403 {
		t.Fatalf("unknown caller reads the layouts: %d", code)
	}
	_, err = idgenv1connect.NewRegistryServiceClient(stranger, base).GetLayouts(context.Background(), connect.NewRequest(&idgenv1.GetLayoutsRequest{}))
	if connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Fatalf("unknown caller GetLayouts: %v", err)
	}
	if code, _ := get(t, orders, base+"/v1/layouts"); code != 200 {
		t.Fatalf("a known caller reads the layouts: %d", code)
	}
	if code, body := get(t, orders, base+"/v1/regions"); code != 200 || strings.Contains(body, "eu-central-1") {
		t.Fatalf("after refused changes: %d %s", code, body)
	}
	if code, body := get(t, orders, base+"/v1/regions/us-east-1"); code != 200 || !strings.Contains(body, `"status":"active"`) {
		t.Fatalf("us-east-1 after a refused retire: %d %s", code, body)
	}
	if code, body := post(t, ops, base+"/v1/regions", `{"name":"eu-central-1","peer":"eu-west-1"}`); code != 201 {
		t.Fatalf("admin add: %d %s", code, body)
	}
	code, body := get(t, ops, base+"/v1/audit")
	if code != 200 || !strings.Contains(body, "spiffe://idgen.test/svc/ops") || strings.Contains(body, "svc/orders") {
		t.Fatalf("audit: %d %s", code, body)
	}
}

func ptr[T any](v T) *T { return &v }

// Two registry processes on one SQLite file, adds racing on both: each number goes to one region.
func TestTwoProcessesShareNumbersSafely(t *testing.T) {
	bin := proc.BuildT(t, "../../cmd/registry")[0]
	db := filepath.Join(t.TempDir(), "r.db")
	var bases []string
	for range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
		proc.StartT(t, proc.Spec{Bin: bin, Args: []string{"--insecure-dev", "--listen", addr, "--store", "sqlite:" + db},
			HealthAddr: addr})
		bases = append(bases, "http://"+addr)
	}
	var mu sync.Mutex
	won := map[float64]string{}
	full := 0
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			code, body := post(t, http.DefaultClient, bases[i%2]+"/v1/regions", fmt.Sprintf(`{"name":"xx-test-%d","peer":"us-east-1"}`, i))
			mu.Lock()
			defer mu.Unlock()
			switch code {
			case 201:
				var r map[string]any
				_ = json.Unmarshal([]byte(body), &r)
				if prev, dup := won[r["number"].(float64)]; dup {
					t.Errorf("number %v given twice: %s and %v", r["number"], prev, r["name"])
				}
				won[r["number"].(float64)] = r["name"].(string)
			case 409:
				full++
			default:
				t.Errorf("add: %d %s", code, body)
			}
		})
	}
	wg.Wait()
	if len(won) != 3 || full != 9 {
		t.Fatalf("%d adds won %v, %d refused; want 3 (numbers 5, 6, 7) and 9", len(won), won, full)
	}
}

// TestRequestMetrics: the registry exports the services' request metrics, with one vocabulary of
// codes for REST and Connect.
func TestRequestMetrics(t *testing.T) {
	base := "http://" + start(t, devConfig(t))
	get(t, http.DefaultClient, base+"/v1/regions")
	get(t, http.DefaultClient, base+"/v1/regions/nowhere-1")
	m := testenv.Scrape(t, nil, base+"/metrics")
	m.Expect(t,
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "ok", "protocol": "rest", "region": "us-east-1", "route": "/v1/regions"}, Value: 1},
		testenv.Series{Name: "idgen_server_requests_total", Labels: testenv.Labels{"code": "not_found", "protocol": "rest", "region": "us-east-1", "route": "/v1/regions/:name"}, Value: 1})
	if m.Count("idgen_server_requests_in_flight", nil) == 0 {
		t.Errorf("metrics lack idgen_server_requests_in_flight")
	}
}

// TestErrorBodies: every REST error is {"error": message, "reason": name}, as in every service.
func TestErrorBodies(t *testing.T) {
	base := "http://" + start(t, devConfig(t))
	for _, tt := range []struct {
		method, path, body string
		status             int
		reason             string
	}{
		{"GET", "/v1/regions/mars-1", "", 404, "not_found"},
		{"POST", "/v1/regions/us-east-1:explode", "", 404, "not_found"},
		{"GET", "/v2/regions", "", 404, "not_found"},
		{"DELETE", "/v1/regions", "", 405, "method_not_allowed"},
		{"POST", "/v1/regions", `{"name":"Not A Region","peer":"eu-west-1"}`, 400, "bad_request"},
		{"POST", "/v1/regions", `{"name":"us-east-1","peer":"us-west-2"}`, 409, "exists"},
	} {
		req, _ := http.NewRequest(tt.method, base+tt.path, strings.NewReader(tt.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var body map[string]string
		if err := json.Unmarshal(b, &body); err != nil || len(body) != 2 || body["error"] == "" || body["reason"] != tt.reason || resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d %s, want %d with reason %q", tt.method, tt.path, resp.StatusCode, b, tt.status, tt.reason)
		}
		if strings.Contains(body["error"], "registry:") {
			t.Errorf("%s %s: a package name in %q", tt.method, tt.path, body["error"])
		}
	}
	// gRPC health names the service and the server, both serving.
	for _, svc := range []string{idgenv1connect.RegistryServiceName, ""} {
		code, body := post(t, http.DefaultClient, base+"/grpc.health.v1.Health/Check", `{"service":"`+svc+`"}`)
		if code != 200 || !strings.Contains(body, `"SERVING_STATUS_SERVING"`) {
			t.Errorf("health of %q: %d %s", svc, code, body)
		}
	}
}
