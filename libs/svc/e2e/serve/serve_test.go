package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/testenv"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

const testService = idgenv1connect.IdServiceName

func status(t *testing.T, h *serve.Health, service string) grpchealth.Status {
	t.Helper()
	resp, err := h.Checker().Check(context.Background(), &grpchealth.CheckRequest{Service: service})
	if err != nil {
		t.Fatalf("Check(%q): %v", service, err)
	}
	return resp.Status
}

// TestHealthNotServingWhileDraining: once shutdown starts, every service's status and the
// server's are NOT_SERVING while requests in flight finish, and nothing turns them back.
func TestHealthNotServingWhileDraining(t *testing.T) {
	services := []string{testService, idgenv1connect.RegistryServiceName}
	health := serve.NewHealth(true, services...)
	entered, release := make(chan struct{}), make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-release
		_, _ = io.WriteString(w, "done")
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- serve.Serve(ctx, l, h, nil, serve.Shutdown{Drain: 10 * time.Second, Health: health}, slog.New(slog.DiscardHandler))
	}()
	answered := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + l.Addr().String() + "/slow")
		if err != nil {
			answered <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		answered <- string(b)
	}()
	<-entered
	for _, s := range append(services, "") {
		if st := status(t, health, s); st != grpchealth.StatusServing {
			t.Fatalf("%q before shutdown: %v", s, st)
		}
	}
	cancel()
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		return health.Draining(), "shutdown never started draining"
	})
	health.SetServing(true) // a readiness loop still running must not undo the drain
	for _, s := range append(services, "") {
		if st := status(t, health, s); st != grpchealth.StatusNotServing {
			t.Errorf("%q while draining: %v, want NOT_SERVING", s, st)
		}
	}
	close(release)
	if got := <-answered; got != "done" {
		t.Fatalf("the request in flight: %q", got)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
}

func TestHealthFollowsReadiness(t *testing.T) {
	health := serve.NewHealth(false, testService)
	if st := status(t, health, testService); st != grpchealth.StatusNotServing {
		t.Fatalf("before ready: %v", st)
	}
	health.SetServing(true)
	for _, s := range []string{testService, ""} {
		if st := status(t, health, s); st != grpchealth.StatusServing {
			t.Fatalf("%q when ready: %v", s, st)
		}
	}
	if _, err := health.Checker().Check(context.Background(), &grpchealth.CheckRequest{Service: "nope.v1.Nothing"}); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("an unknown service: %v", err)
	}
}

var errGone = errors.New("registry: region gone")

// TestRESTErrorBodies: every REST error is {"error": message, "reason": name} and nothing else,
// whatever made it.
func TestRESTErrorBodies(t *testing.T) {
	errs := apierr.Mapper(func(err error) *apierr.Error {
		if errors.Is(err, errGone) {
			return apierr.New(http.StatusGone, connect.CodeNotFound, err.Error())
		}
		return nil
	})
	e := serve.REST(serve.NewRequestMetrics(prometheus.NewRegistry()), errs)
	e.GET("/quota", func(echo.Context) error {
		return &apierr.Error{Status: 429, Code: connect.CodeResourceExhausted, Reason: "quota", Msg: "over quota", RetryAfter: 3}
	})
	e.GET("/gone", func(echo.Context) error { return errGone })
	e.GET("/broken", func(echo.Context) error { return errors.New("disk on fire") })
	e.GET("/action", func(echo.Context) error { return echo.NewHTTPError(http.StatusNotFound, "registry: unknown action") })
	e.GET("/bad", func(echo.Context) error { return apierr.BadRequest("count is 0") })
	for _, tt := range []struct {
		method, path string
		status       int
		body         apierr.Body
		retryAfter   string
	}{
		{"GET", "/nowhere", 404, apierr.Body{Error: "Not Found", Reason: "not_found"}, ""},
		{"POST", "/gone", 405, apierr.Body{Error: "Method Not Allowed", Reason: "method_not_allowed"}, ""},
		{"GET", "/quota", 429, apierr.Body{Error: "over quota", Reason: "quota"}, "3"},
		{"GET", "/gone", 410, apierr.Body{Error: "region gone", Reason: "not_found"}, ""},
		{"GET", "/broken", 500, apierr.Body{Error: "internal error", Reason: "internal"}, ""},
		{"GET", "/action", 404, apierr.Body{Error: "unknown action", Reason: "not_found"}, ""},
		{"GET", "/bad", 400, apierr.Body{Error: "count is 0", Reason: "bad_request"}, ""},
	} {
		t.Run(tt.method+tt.path, func(t *testing.T) {
			rec := httptest.NewRecorder()
			e.ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			var fields map[string]any
			if err := json.Unmarshal(rec.Body.Bytes(), &fields); err != nil || len(fields) != 2 {
				t.Fatalf("body %s: want exactly error and reason", rec.Body)
			}
			var got apierr.Body
			_ = json.Unmarshal(rec.Body.Bytes(), &got)
			if rec.Code != tt.status || got != tt.body || rec.Header().Get("Retry-After") != tt.retryAfter {
				t.Fatalf("%d %s (Retry-After %q), want %d %+v (%q)", rec.Code, rec.Body, rec.Header().Get("Retry-After"), tt.status, tt.body, tt.retryAfter)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Fatalf("Content-Type %q", ct)
			}
		})
	}
}

// TestAPI: one port serves the Connect service (UNIMPLEMENTED for a procedure it lacks), gRPC
// health for the service and the server, reflection, /metrics, and REST for the rest, with a
// request ID on every answer.
func TestAPI(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := serve.NewRequestMetrics(reg)
	rest := serve.REST(m, apierr.Mapper(func(error) *apierr.Error { return nil }))
	rest.GET("/hello", func(c echo.Context) error {
		return c.String(200, "hello "+auth.FromContext(c.Request().Context()).Caller.Name)
	})
	path, h := idgenv1connect.NewIdServiceHandler(idgenv1connect.UnimplementedIdServiceHandler{}, serve.ConnectOptions(4096, m)...)
	api := serve.API{ConnectPath: path, Connect: h, Procedures: []string{idgenv1connect.IdServiceGenerateProcedure},
		REST: rest, RESTPaths: []string{"/hello"}, Health: serve.NewHealth(true, testService), Metrics: reg, Requests: m,
		Resolver: auth.NewDevResolver(auth.Caller{Name: "dev"})}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()
	if code, h, body := testenv.Do(t, "GET", srv.URL+"/hello", "", "", "X-Request-Id", "abc-1"); code != 200 || body != "hello dev" || h.Get("X-Request-Id") != "abc-1" {
		t.Errorf("REST: %d %q, request ID %q", code, body, h.Get("X-Request-Id"))
	}
	if _, h, _ := testenv.Do(t, "GET", srv.URL+"/hello", "", ""); h.Get("X-Request-Id") == "" {
		t.Error("no request ID made")
	}
	for _, svc := range []string{testService, ""} {
		if code, _, body := testenv.Do(t, "POST", srv.URL+"/grpc.health.v1.Health/Check", "application/json", `{"service":"`+svc+`"}`); code != 200 || !strings.Contains(body, `"SERVING_STATUS_SERVING"`) {
			t.Errorf("health of %q: %d %s", svc, code, body)
		}
	}
	if code, _, body := testenv.Do(t, "POST", srv.URL+idgenv1connect.IdServiceGenerateProcedure, "application/json", `{}`); code != 501 || !strings.Contains(body, "unimplemented") {
		t.Errorf("a mounted procedure: %d %s", code, body)
	}
	if code, _, body := testenv.Do(t, "POST", srv.URL+idgenv1connect.IdServiceDecodeProcedure, "application/json", `{}`); code != 404 || !strings.Contains(body, `"unimplemented"`) {
		t.Errorf("a procedure not mounted: %d %s", code, body)
	}
	if code, _, body := testenv.Do(t, "GET", srv.URL+"/metrics", "", ""); code != 200 {
		t.Errorf("metrics: %d %s", code, body)
	} else if n := testenv.ParseMetrics(t, body).Get(t, "idgen_server_requests_total", testenv.Labels{"code": "ok", "protocol": "rest", "route": "/hello"}); n != 2 {
		t.Errorf("idgen_server_requests_total of /hello = %v, want 2", n)
	}
}
