// Package server is the public-ID service: the internal API (REST and idgen.v1.PublicIdService
// over Connect, gRPC and gRPC-Web; callers identified by mutual TLS as the generator's) and the
// customer gateway on a second listener.
package server

import (
	"context"
	"crypto/tls"
	"github.com/idgen/idgen/libs/routes"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/idgen/idgen/libs/api/idgen/v1/idgenv1connect"
	"github.com/idgen/idgen/libs/svc/apierr"
	"github.com/idgen/idgen/libs/svc/auth"
	"github.com/idgen/idgen/libs/svc/serve"
	"github.com/idgen/idgen/libs/svc/storespec"
	"github.com/idgen/idgen/services/public-id/internal/config"
	"github.com/idgen/idgen/services/public-id/internal/gateway"
	"github.com/idgen/idgen/services/public-id/mapping"
	"github.com/idgen/idgen/services/public-id/mapping/cached"
	"github.com/idgen/idgen/services/public-id/mapping/redismap"
	"github.com/idgen/idgen/services/public-id/mapping/sqlitemap"
	"github.com/idgen/idgen/services/public-id/publicid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Server is the public-ID service.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	store    mapping.Store // the store --store names
	mappings mapping.Store // store behind the cache of resolved mappings (--mapping-cache-bytes), or store itself
	maker    *publicid.Maker
	gate     *auth.Gate // the edge: callers and, with mutual TLS, the certificates, reloaded
	resolver *auth.Resolver
	tls      *tls.Config
	reg      *prometheus.Registry
	health   *serve.Health // the internal API's; NOT_SERVING from the start of a drain
	api      http.Handler
	gw       *gateway.Gateway
	metrics  *serve.RequestMetrics
	mapped   *prometheus.CounterVec
}

// maxBody is the largest request body (REST) or message (Connect) the internal API reads.
const maxBody = 4 << 10

// openStore opens the mapping store --store names, making a SQLite file's directory when
// missing. Its errors never repeat a URL (it may hold a password).
func openStore(ctx context.Context, cfg config.Config, log *slog.Logger) (mapping.Store, error) {
	spec, err := cfg.StoreSpec()
	if err != nil {
		return nil, err
	}
	openRedis := func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
		return redismap.Open(ctx, redismap.Target{Addr: spec.Where, Cluster: spec.Kind == storespec.RedisCluster, CAFile: cfg.RedisCA},
			redismap.Options{WaitReplicas: cfg.RedisReplicas, AcceptVolatile: cfg.AcceptVolatileStore, CheckEvery: cfg.RedisCheckEvery, Logger: log})
	}
	return storespec.Open(ctx, spec, storespec.Drivers[mapping.Store]{
		storespec.SQLite: func(ctx context.Context, spec storespec.Spec) (mapping.Store, error) {
			return sqlitemap.Open(ctx, spec.Where)
		},
		storespec.Redis:        openRedis,
		storespec.RedisCluster: openRedis,
	})
}

// New opens the mapping store, loads the gateway's routes and builds the handlers. It listens on
// nothing yet.
func New(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	s := &Server{cfg: cfg, log: log, reg: prometheus.NewRegistry()}
	s.metrics = serve.NewRequestMetrics(s.reg)
	s.mapped = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "idgen_publicid_store_calls_total",
		Help: "Publishes and resolves of the internal API, by outcome (ok, not_found, store_unavailable, store_volatile, error)."}, []string{"op", "outcome"})
	s.reg.MustRegister(s.mapped)
	for _, op := range []string{"publish", "resolve"} {
		for _, o := range []string{"ok", "not_found", "store_unavailable", "store_volatile", "error"} {
			s.mapped.WithLabelValues(op, o)
		}
	}
	s.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var table *routes.Config
	resources := strings.Split(cfg.Resources, ",")
	if cfg.Routes != "" {
		var err error
		if table, err = routes.Load(cfg.Routes); err != nil {
			return nil, err
		}
		resources = append(resources, table.Resources()...)
	}
	var err error
	if s.maker, err = publicid.NewMaker(dedupe(append(resources, cfg.DefaultResource))...); err != nil {
		return nil, err
	}
	// The edge before the store: a server certificate that is expired or not yet valid stops the
	// start before anything is opened.
	edge := cfg.Edge
	edge.Dev = auth.Caller{Name: "dev"}
	if s.gate, err = auth.Setup(edge, log, s.reg); err != nil {
		return nil, err
	}
	s.resolver, s.tls = s.gate.Resolver, s.gate.TLS
	if s.store, err = openStore(ctx, cfg, log); err != nil {
		return nil, err
	}
	s.watchVolatile()
	if s.mappings, err = s.cache(); err != nil {
		s.store.Close()
		return nil, err
	}
	if table != nil {
		if s.gw, err = gateway.New(table, s.maker, s.mappings, s.reg, gateway.Options{RatePerClient: cfg.RatePerClient,
			TrustedProxies: cfg.TrustedProxies, IDsSince: cfg.IDsSince, Logger: log}); err != nil {
			s.mappings.Close()
			return nil, err
		}
	}
	s.health = serve.NewHealth(true, idgenv1connect.PublicIdServiceName)
	path, h := idgenv1connect.NewPublicIdServiceHandler(&rpc{s}, serve.ConnectOptions(maxBody, s.metrics)...)
	s.api = serve.API{
		ConnectPath: path, Connect: h,
		Procedures: []string{idgenv1connect.PublicIdServicePublishProcedure, idgenv1connect.PublicIdServiceResolveProcedure},
		REST:       s.rest(),
		Health:     s.health, Metrics: serve.RegionLabeled(s.reg, cfg.Region), Requests: s.metrics, Resolver: s.resolver, Browsers: cfg.Browsers,
	}.Handler()
	return s, nil
}

// cache puts the cache of resolved mappings in front of the store, which the internal API and the
// gateway share: at most --mapping-cache-bytes, holding only what the store answers durably (a
// Redis store: only while its reads are, redismap.Store.ReadsDurable). 0 bytes: the store itself.
func (s *Server) cache() (mapping.Store, error) {
	if s.cfg.MappingCacheBytes == 0 {
		return s.store, nil
	}
	o := cached.Options{MaxBytes: s.cfg.MappingCacheBytes, Registerer: s.reg}
	if rs, ok := s.store.(*redismap.Store); ok {
		o.Durable = rs.ReadsDurable
	}
	return cached.New(s.store, o)
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

// Serve serves the internal API on api and the gateway on gw (when not nil) until ctx ends, then
// shuts both down gracefully and closes the store: from the start, health is NOT_SERVING and
// both listeners' /healthz answer 503 draining while both serve on for the deregistration delay;
// then both stop accepting and drain their requests in flight.
func (s *Server) Serve(ctx context.Context, api, gw net.Listener) error {
	errc := make(chan error, 2)
	go s.gate.Run(ctx)
	sd := s.cfg.Shutdown(s.health)
	go func() { errc <- serve.Serve(ctx, api, s.api, s.tls, sd, s.log) }()
	n := 1
	if gw != nil && s.gw != nil {
		n++
		// Customers reach the gateway through the edge load balancer, which terminates TLS.
		h := serve.HealthzWhileDraining(s.health, s.gw)
		go func() { errc <- serve.Serve(ctx, gw, h, nil, sd, s.log.With("listener", "gateway")) }()
	}
	var first error
	for range n {
		if err := <-errc; err != nil && first == nil {
			first = err
		}
	}
	s.mappings.Close()
	return first
}

// publish returns internal's public ID, making one of resource on the first publish.
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
	pub, err := s.mappings.Publish(ctx, internal, func() (string, error) { return s.maker.New(resource) })
	s.mapped.WithLabelValues("publish", outcome(err)).Inc()
	return pub, err
}

// resolve returns the internal ID of a public one; unknown and malformed ones alike are
// mapping.ErrNotFound or publicid.ErrMalformed, which errs answers the same way.
func (s *Server) resolve(ctx context.Context, public string) (int64, error) {
	if res := auth.FromContext(ctx); res.Err != nil {
		return 0, res.Err
	}
	if _, err := s.maker.Parse(public); err != nil {
		s.mapped.WithLabelValues("resolve", "not_found").Inc()
		return 0, err
	}
	in, err := s.mappings.Resolve(ctx, public)
	s.mapped.WithLabelValues("resolve", outcome(err)).Inc()
	return in, err
}
