// Package server is the public-ID service: the internal API (REST and idgen.v1.PublicIdService
// over Connect, gRPC and gRPC-Web; callers identified by mutual TLS as the generator's) and the
// customer gateway on a second listener.
package server

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"connectrpc.com/grpchealth"
	"connectrpc.com/grpcreflect"
	idgenv1 "github.com/idgen/idgen/libs/api/idgen/v1"
	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/idcore"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/flagenv"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Config is the service's configuration.
type Config struct {
	Listen, GatewayListen, Store, Routes, Resources, DefaultResource string
	RedisCA                                                          string
	RedisReplicas                                                    int
	AcceptVolatileStore                                              bool
	auth.Edge                                                        // --callers, --tls-cert, --tls-key, --client-ca, --insecure-dev
	RatePerClient                                                    float64
	TrustedProxies                                                   []netip.Prefix
	IDsSince                                                         time.Time
	serve.Process                                                    // --log-level, --drain
	serve.Browsers                                                   // --cors-origins
}

// ParseConfig reads flags with IDGEN_* environment fallbacks.
func ParseConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	var c Config
	fs := flag.NewFlagSet("public-id", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.Listen, "listen", "127.0.0.1:7003", "internal API address ($IDGEN_LISTEN)")
	fs.StringVar(&c.GatewayListen, "gateway-listen", "127.0.0.1:7004", "customer gateway address; empty for none ($IDGEN_GATEWAY_LISTEN)")
	fs.StringVar(&c.Store, "store", "sqlite:.idgen/public-ids.db", "sqlite:PATH; redis:HOST:PORT or a redis:// or rediss:// (TLS) URL; redis-cluster:HOST:PORT,… or redis-cluster:URL ($IDGEN_STORE)")
	fs.StringVar(&c.RedisCA, "redis-ca", "", "PEM file of the CA that issued the Redis servers' certificates (rediss://); default: system roots ($IDGEN_REDIS_CA)")
	fs.IntVar(&c.RedisReplicas, "redis-replicas", 0, "replicas each publish waits for with WAITAOF (Redis 7.2+) ($IDGEN_REDIS_REPLICAS)")
	fs.BoolVar(&c.AcceptVolatileStore, "accept-volatile-store", false, "run on a Redis that can lose acknowledged mappings (AOF off, or an fsync policy that cannot be confirmed); logged and exported as idgen_publicid_store_volatile ($IDGEN_ACCEPT_VOLATILE_STORE)")
	fs.StringVar(&c.Routes, "routes", "", "gateway route table (JSON) ($IDGEN_ROUTES)")
	fs.StringVar(&c.Resources, "resources", "ord", "resource prefixes the internal API publishes, comma-separated ($IDGEN_RESOURCES)")
	fs.StringVar(&c.DefaultResource, "default-resource", "ord", "prefix when a publish names none ($IDGEN_DEFAULT_RESOURCE)")
	fs.Float64Var(&c.RatePerClient, "rate-per-client", 50, "gateway requests per second per client IP (IPv6: per /64); 0 for none ($IDGEN_RATE_PER_CLIENT)")
	fs.Func("trusted-proxies", "comma-separated addresses and CIDR ranges of the proxies in front of the gateway whose X-Forwarded-For names the client; default none ($IDGEN_TRUSTED_PROXIES)", func(v string) error {
		var err error
		c.TrustedProxies, err = gateway.ParseTrustedProxies(v)
		return err
	})
	fs.Func("ids-since", "date (2006-01-02) from which a number in a plain response field is taken for an internal ID and refused; default 30 days after the epoch ($IDGEN_IDS_SINCE)", func(v string) error {
		t, err := time.Parse(time.DateOnly, v)
		if err != nil {
			return fmt.Errorf("want a date such as 2026-02-01")
		}
		c.IDsSince = t
		return nil
	})
	c.Edge.RegisterFlags(fs, "callers file of the internal API", "plaintext internal API with one default caller")
	c.Process.RegisterFlags(fs, 5*time.Second)
	c.Browsers.RegisterFlags(fs)
	if err := flagenv.Parse(fs, args, getenv); err != nil {
		return c, err
	}
	if err := errors.Join(c.Complete(), c.Process.Check()); err != nil {
		return c, fmt.Errorf("public-id: %w", err)
	}
	if c.RedisReplicas < 0 {
		return c, fmt.Errorf("public-id: --redis-replicas %d: want 0 or more", c.RedisReplicas)
	}
	return c, nil
}

// Server is the public-ID service.
type Server struct {
	cfg      Config
	log      *slog.Logger
	store    mapping.Store
	maker    *publicid.Maker
	resolver *auth.Resolver
	tls      *tls.Config
	reg      *prometheus.Registry
	api      http.Handler
	gw       *gateway.Gateway
	metrics  *serve.RequestMetrics
	mapped   *prometheus.CounterVec
}

// OpenStore opens the mapping store that cfg.Store names.
func OpenStore(ctx context.Context, cfg Config) (mapping.Store, error) {
	kind, arg, _ := strings.Cut(cfg.Store, ":")
	if strings.HasPrefix(cfg.Store, "redis://") || strings.HasPrefix(cfg.Store, "rediss://") {
		kind, arg = "redis", cfg.Store
	}
	switch kind {
	case "sqlite":
		if dir := filepath.Dir(arg); dir != "" {
			_ = os.MkdirAll(dir, 0o755)
		}
		return sqlitemap.Open(ctx, arg)
	case "redis", "redis-cluster":
		return redismap.Open(ctx, redismap.Target{Addr: arg, Cluster: kind == "redis-cluster", CAFile: cfg.RedisCA}, redismap.Options{WaitReplicas: cfg.RedisReplicas, AcceptVolatile: cfg.AcceptVolatileStore})
	}
	// Not %q of spec: a URL may hold a password.
	return nil, fmt.Errorf("public-id: --store %s…: want sqlite:PATH, redis:HOST:PORT, redis://… or rediss://…, redis-cluster:HOST:PORT,… or redis-cluster:URL", kind)
}

// New builds the service.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	s.metrics = serve.NewRequestMetrics(s.reg)
	s.mapped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_store_calls_total",
		Help: "Publishes and resolves of the internal API, by outcome (ok, not_found, store_unavailable, error)."}, []string{"op", "outcome"})
	s.reg.MustRegister(s.mapped)
	for _, op := range []string{"publish", "resolve"} {
		for _, o := range []string{"ok", "not_found", "store_unavailable", "error"} {
			s.mapped.WithLabelValues(op, o)
		}
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var routes *gateway.Config
	resources := strings.Split(cfg.Resources, ",")
	if cfg.Routes != "" {
		var err error
		if routes, err = gateway.LoadRoutes(cfg.Routes); err != nil {
			return nil, err
		}
		resources = append(resources, routes.Resources()...)
	}
	var err error
	if s.maker, err = publicid.NewMaker(dedupe(append(resources, cfg.DefaultResource))...); err != nil {
		return nil, err
	}
	if s.store, err = OpenStore(ctx, cfg); err != nil {
		return nil, err
	}
	volatile := prometheus.NewGauge(prometheus.GaugeOpts{Name: "idgen_publicid_store_volatile",
		Help: "1 when the service runs on a mapping store that can lose acknowledged mappings (--accept-volatile-store), else 0."})
	s.reg.MustRegister(volatile)
	if rs, ok := s.store.(*redismap.Store); ok {
		if v, why := rs.Volatile(); v {
			volatile.Set(1)
			log.Error("the mapping store is volatile: acknowledged mappings can be lost, and links customers hold would stop resolving; accepted by --accept-volatile-store",
				"reason", why)
		}
	}
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev"}
	if s.resolver, s.tls, err = auth.Setup(edge, log); err != nil {
		return nil, err
	}
	if routes != nil {
		if s.gw, err = gateway.New(routes, s.maker, s.store, s.reg, gateway.Options{RatePerClient: cfg.RatePerClient,
			TrustedProxies: cfg.TrustedProxies, IDsSince: cfg.IDsSince, Logger: log}); err != nil {
			s.store.Close()
			return nil, err
		}
	}
	mux := http.NewServeMux()
	path, h := idgenv1connect.NewPublicIdServiceHandler(&rpc{s}, append(serve.JSONCodec(), connect.WithReadMaxBytes(4096), connect.WithCompressMinBytes(1024), s.metrics.Interceptor())...)
	serve.Mount(mux, path, h, idgenv1connect.PublicIdServicePublishProcedure, idgenv1connect.PublicIdServiceResolveProcedure)
	health := serve.NewHealthChecker(idgenv1connect.PublicIdServiceName)
	mux.Handle(grpchealth.NewHandler(health))
	refl := serve.Reflector(idgenv1connect.PublicIdServiceName, grpchealth.HealthV1ServiceName)
	mux.Handle(grpcreflect.NewHandlerV1(refl))
	mux.Handle(grpcreflect.NewHandlerV1Alpha(refl))
	mux.Handle("/metrics", auth.ScrapersOnly(promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{})))
	mux.Handle("/", serve.RPCOr(s.rest()))
	s.api = cfg.Browsers.Wrap(s.metrics.InFlight(s.resolver.Middleware(mux)))
	return s, nil
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range in {
		if v = strings.TrimSpace(v); v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// API returns the internal API handler; Gateway the customer gateway (nil without routes).
func (s *Server) API() http.Handler { return s.api }

// Gateway returns the customer gateway.
func (s *Server) Gateway() http.Handler {
	if s.gw == nil {
		return nil
	}
	return s.gw
}

// Serve serves the internal API on api and the gateway on gw (when not nil) until ctx ends.
func (s *Server) Serve(ctx context.Context, api, gw net.Listener) error {
	errc := make(chan error, 2)
	go func() { errc <- serve.Serve(ctx, api, s.api, s.tls, s.cfg.Drain, s.log, nil) }()
	n := 1
	if gw != nil && s.gw != nil {
		n++
		// Customers reach the gateway through the edge load balancer, which terminates TLS.
		go func() { errc <- serve.Serve(ctx, gw, s.gw, nil, s.cfg.Drain, s.log.With("listener", "gateway"), nil) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	s.store.Close()
	return first
}

func mapErr(err error) *apierr.Error {
	return apierr.Map(err, func(err error) *apierr.Error {
		switch {
		case errors.Is(err, mapping.ErrNotFound), errors.Is(err, publicid.ErrMalformed):
			return apierr.New(http.StatusNotFound, connect.CodeNotFound, "public id not found")
		case errors.Is(err, mapping.ErrUnavailable):
			return apierr.New(http.StatusServiceUnavailable, connect.CodeUnavailable, "mapping store unavailable")
		}
		return nil
	})
}

func (s *Server) publish(ctx context.Context, internal int64, resource string) (string, error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return "", res.Err
	}
	if internal < 0 {
		return "", apierr.BadRequest("internal_id must not be negative")
	}
	if resource == "" {
		resource = s.cfg.DefaultResource
	}
	if !s.maker.Known(resource) {
		return "", apierr.BadRequest("unknown resource %q", resource)
	}
	pub, err := s.store.Publish(ctx, internal, func() (string, error) { return s.maker.New(resource) })
	s.mapped.WithLabelValues("publish", outcome(err)).Inc()
	return pub, err
}

// outcome names a store call's result for idgen_publicid_store_calls_total.
func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, mapping.ErrNotFound):
		return "not_found"
	case errors.Is(err, mapping.ErrUnavailable):
		return "store_unavailable"
	}
	return "error"
}

func (s *Server) resolve(ctx context.Context, public string) (int64, error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return 0, res.Err
	}
	if _, err := s.maker.Parse(public); err != nil {
		s.mapped.WithLabelValues("resolve", "not_found").Inc()
		return 0, err
	}
	in, err := s.store.Resolve(ctx, public)
	s.mapped.WithLabelValues("resolve", outcome(err)).Inc()
	return in, err
}

func (s *Server) rest() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(s.metrics.Echo(restStatus))
	e.HTTPErrorHandler = func(err error, c echo.Context) {
		var he *echo.HTTPError
		if errors.As(err, &he) {
			_ = c.JSON(he.Code, map[string]string{"error": fmt.Sprint(he.Message)})
			return
		}
		ae := mapErr(err)
		_ = c.JSON(ae.Status, map[string]string{"error": ae.Msg})
	}
	e.Match([]string{http.MethodGet, http.MethodHead}, "/healthz", func(c echo.Context) error { return c.JSON(http.StatusOK, map[string]string{"status": "ok"}) })
	e.POST("/v1/public-ids", func(c echo.Context) error {
		var req struct {
			InternalID *idcore.ID `json:"internal_id"`
			Resource   string     `json:"resource"`
		}
		if err := apierr.DecodeBody(c.Request().Body, 4096, &req); err != nil {
			return err
		}
		if req.InternalID == nil {
			return apierr.BadRequest(`"internal_id" is missing: want {"internal_id": "<decimal id>"}`)
		}
		pub, err := s.publish(c.Request().Context(), int64(*req.InternalID), req.Resource)
		if err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, []byte(`{"public_id":`+strconv.Quote(pub)+`}`))
	})
	e.GET("/v1/public-ids/:public_id", func(c echo.Context) error {
		in, err := s.resolve(c.Request().Context(), c.Param("public_id"))
		if err != nil {
			return err
		}
		return c.JSONBlob(http.StatusOK, []byte(`{"internal_id":"`+idcore.ID(in).String()+`"}`))
	})
	return e
}

type rpc struct{ s *Server }

func cerr(err error) error { return mapErr(err).Connect() }

func (r *rpc) Publish(ctx context.Context, req *connect.Request[idgenv1.PublishRequest]) (*connect.Response[idgenv1.PublishResponse], error) {
	pub, err := r.s.publish(ctx, req.Msg.GetInternalId(), req.Msg.GetResource())
	if err != nil {
		return nil, cerr(err)
	}
	return connect.NewResponse(&idgenv1.PublishResponse{PublicId: pub}), nil
}

func (r *rpc) Resolve(ctx context.Context, req *connect.Request[idgenv1.ResolveRequest]) (*connect.Response[idgenv1.ResolveResponse], error) {
	in, err := r.s.resolve(ctx, req.Msg.GetPublicId())
	if err != nil {
		return nil, cerr(err)
	}
	return connect.NewResponse(&idgenv1.ResolveResponse{InternalId: in}), nil
}

// restStatus is the status a REST error is answered with.
func restStatus(err error) int {
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return he.Code
	}
	return mapErr(err).Status
}
