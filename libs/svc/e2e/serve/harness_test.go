package serve_test

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
)

// oneID is an IdService whose Generate answers 42: enough for a call by reflection to show.
type oneID struct {
	idgenv1connect.UnimplementedIdServiceHandler
}

func (oneID) Generate(context.Context, *connect.Request[idgenv1.GenerateRequest]) (*connect.Response[idgenv1.GenerateResponse], error) {
	return connect.NewResponse(&idgenv1.GenerateResponse{Id: 42}), nil
}

// serveAPI serves a serve.API for the IdService on a loopback port with serve.Serve (h2c, as
// the services serve in plaintext mode) until the test ends, and returns its host:port. Its REST
// routes POST /things and GET /things/:id are mounted by their own patterns as well (RESTPaths).
func serveAPI(t testing.TB, b serve.Browsers) string {
	t.Helper()
	return serveAPIPaths(t, b, "/things", "/things/{id}", "/gadgets/{id}")
}

// serveAPIPaths is serveAPI with restPaths as its RESTPaths.
func serveAPIPaths(t testing.TB, b serve.Browsers, restPaths ...string) string {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := serve.NewRequestMetrics(reg)
	path, h := idgenv1connect.NewIdServiceHandler(oneID{}, serve.ConnectOptions(4096, m)...)
	api := serve.API{ConnectPath: path, Connect: h, Procedures: []string{idgenv1connect.IdServiceGenerateProcedure},
		REST: testREST(m), RESTPaths: restPaths, Health: serve.NewHealth(true, testService), Metrics: reg, Requests: m,
		Resolver: auth.NewDevResolver(auth.Caller{Name: "dev"}), Browsers: b}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Serve(ctx, l, api.Handler(), nil, serve.Shutdown{Drain: time.Second}, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })
	return l.Addr().String()
}

// served counts the requests testREST's POST handlers ran for.
var served atomic.Int64

// testREST is a REST API as the services build theirs: POST /things decodes {"count": n} as the
// registry and the public-ID service decode bodies, POST /poke reads no body (as a registry
// retire), GET /things/:id answers with a header of its own, and GET /gadgets/:id has a static
// sibling, GET /gadgets/new, that echo answers before it.
func testREST(m *serve.RequestMetrics) *echo.Echo {
	e := serve.REST(m, apierr.Mapper(func(error) *apierr.Error { return nil }))
	e.POST("/things", func(c echo.Context) error {
		var req struct {
			Count *int `json:"count"`
		}
		if err := apierr.DecodeBody(c.Request().Body, 4096, &req); err != nil {
			return err
		}
		served.Add(1)
		return c.JSON(http.StatusOK, req)
	})
	e.POST("/poke", func(c echo.Context) error {
		served.Add(1)
		return c.JSON(http.StatusOK, map[string]bool{"poked": true})
	})
	e.GET("/things/:id", func(c echo.Context) error {
		c.Response().Header().Set("X-Thing", c.Param("id"))
		return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id"), "what": "a thing"})
	})
	e.GET("/gadgets/:id", func(c echo.Context) error {
		c.Response().Header().Set("X-Thing", c.Param("id"))
		return c.JSON(http.StatusOK, map[string]string{"id": c.Param("id"), "what": "a gadget"})
	})
	e.GET("/gadgets/new", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"what": "the form for a new gadget"})
	})
	return e
}
